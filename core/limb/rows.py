"""Solving some rows of a batch alone and merging them back: the one helper shared by the
partial-orientation and aim solvers (rows that need a per-element optimisation)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .model import FloatArray, LimbSolution

#: Per-row fields of a batched :class:`~core.limb.model.LimbSolution` (all but the
#: NaN-padded ``feasible_swivel`` and the optional ``aim_error``).
ROW_FIELDS = (
    "shoulder",
    "elbow",
    "wrist",
    "swivel",
    "reachable",
    "within_limits",
    "position_error",
    "orientation_error",
    "psi",
)


def padded_intervals(sets: Sequence[tuple[tuple[float, float], ...]], width: int = 1) -> FloatArray:
    """Single solutions' feasible swivel intervals as one (K, W, 2) NaN-padded array
    (W ≥ ``width``, the longest list)."""
    width = max([width] + [len(s) for s in sets])
    out = np.full((len(sets), width, 2), np.nan)
    for i, s in enumerate(sets):
        if s:
            out[i, : len(s)] = np.array(s)
    return out


def kwargs_rows(kwargs: dict[str, Any], i: Any, n: int) -> dict[str, Any]:
    """Per-goal keyword values (arrays with a leading axis of length n) taken at ``i``."""
    return {
        k: (v[i] if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n else v)
        for k, v in kwargs.items()
    }


def _compacted(fs: FloatArray) -> FloatArray:
    """(K, W, 2) NaN-padded intervals with each row's intervals (those whose start is not
    NaN, in order) moved to its front and the rest NaN, trimmed to the longest row: the
    array :func:`padded_intervals` makes of the rows as single solutions."""
    keep = ~np.isnan(fs[:, :, 0])
    order = np.argsort(~keep, axis=1, kind="stable")
    out = np.take_along_axis(fs, order[:, :, None], axis=1)
    out[~np.take_along_axis(keep, order, axis=1)] = np.nan
    width = int(keep.sum(axis=1).max(initial=0))
    return out[:, :width]


def merge_rows(
    sol: LimbSolution,
    rows: dict[int, LimbSolution],
    block: tuple[NDArray[np.intp], LimbSolution] | None = None,
) -> LimbSolution:
    """Batched ``sol`` with rows i replaced by the single solutions ``rows[i]`` and, with
    ``block`` = (idx, sub), rows idx by the rows of the batched solution ``sub`` (the same
    result as the single solutions ``sub[j]`` in ``rows``, without making them)."""
    idx, part = block if block is not None else (np.zeros(0, dtype=np.intp), None)
    fields: dict[str, Any] = {}
    for name in ROW_FIELDS:
        arr = np.array(getattr(sol, name), copy=True)
        if part is not None:
            arr[idx] = getattr(part, name)
        for i, r in rows.items():
            arr[i] = getattr(r, name)
        fields[name] = arr
    fs = np.asarray(sol.feasible_swivel)
    single = padded_intervals([r.feasible_swivel for r in rows.values()], fs.shape[1])
    blk = _compacted(np.asarray(part.feasible_swivel)) if part is not None else single[:0]
    out = np.full((fs.shape[0], max(single.shape[1], blk.shape[1]), 2), np.nan)
    out[:, : fs.shape[1]] = fs
    out[idx] = np.nan
    out[idx, : blk.shape[1]] = blk
    out[list(rows)] = np.nan
    out[list(rows), : single.shape[1]] = single
    fields["feasible_swivel"] = out
    return replace(sol, **fields)
