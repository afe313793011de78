"""A batched bake's per-frame statuses, made when they are read.

A batched bake solves each proven limb for the whole range at once; its statuses (one
:class:`.solve.LimbStatus` per frame and limb) describe rows of arrays. Making thousands of
status objects costs more than the solve, and the bake itself only needs each limb's worst
frame and its last one: :class:`StatusColumn` keeps the arrays and makes a row's status
when it is first asked for; :class:`StatusRows` is the per-frame view
(``BakeResult.statuses``) over such columns and ready-made ones, built when first read.
:func:`worst_index` picks an item's worst frame without making the other frames' statuses.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from ..bridge import verify
from .solve import LimbStatus


class StatusColumn(Sequence[LimbStatus]):
    """One limb's statuses for the rows of a batched :class:`core.LimbSolution` (the
    proven model): the same fields and messages as :func:`.solve.fill_analytic` would give
    each row, made on first access (then kept: a row is always the same object).
    ``frames``: the frame of each row (None: left unset)."""

    def __init__(self, obj_name: str, settings: Any, sol: Any, req: Any, notes: list[str],
                 solve_us: float, frames: Sequence[int] | None = None) -> None:
        pos, ori = verify.model_errors(req, sol)
        with verify.held_tolerances() as tol:
            on_target = (pos <= tol.position) & (ori <= tol.orientation)
        within = np.asarray(sol.within_limits, dtype=bool)
        fsw = np.asarray(sol.feasible_swivel, dtype=np.float64)
        self._pos, self._ori = pos.tolist(), ori.tolist()
        self._reachable = (np.asarray(sol.reachable, dtype=bool) | on_target).tolist()
        self._within, self._hit = within.tolist(), on_target.tolist()
        self._swivel = np.asarray(sol.swivel, dtype=np.float64).tolist()
        self._fsw = fsw
        self._whole = ~np.isnan(fsw).any(axis=(-1, -2))  # rows without padding intervals
        self._frames = frames
        self._notes = list(notes)
        good = LimbStatus(object=obj_name, limb=settings.name, solver=settings.solver,
                          solved=True, within_limits=True, reached=True, notes=list(notes))
        good.message = verify.status_message(good)
        good.solve_us = solve_us
        self._template = vars(good)
        self._made: list[LimbStatus | None] = [None] * len(self._pos)

    def __len__(self) -> int:
        return len(self._made)

    @overload
    def __getitem__(self, i: int) -> LimbStatus: ...

    @overload
    def __getitem__(self, i: slice) -> list[LimbStatus]: ...

    def __getitem__(self, i: int | slice) -> LimbStatus | list[LimbStatus]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        st = self._made[i]
        return self._make(i if i >= 0 else i + len(self)) if st is None else st

    def __iter__(self) -> Iterator[LimbStatus]:
        return (self[i] for i in range(len(self)))

    def _make(self, i: int) -> LimbStatus:
        # a copy of the template with this row's fields (the dataclass __init__ with its
        # default factories costs more than the rest of the row; the lists are new)
        st: LimbStatus = object.__new__(LimbStatus)
        st.__dict__.update(self._template)
        notes = self._notes
        st.notes, st.written, st.effectors = list(notes), {}, []
        st.reachable = self._reachable[i]
        st.position_error, st.orientation_error = self._pos[i], self._ori[i]
        st.swivel = self._swivel[i]
        fs = self._fsw[i].tolist()
        st.feasible_swivel = (tuple(map(tuple, fs)) if self._whole[i] else
                              tuple((lo, hi) for lo, hi in fs if lo == lo and hi == hi))
        hit, w = self._hit[i], self._within[i]
        if not (hit and w):
            st.reached, st.within_limits = hit, w
            st.message = verify.status_message(st)
        if self._frames is not None:
            st.frame = self._frames[i]
        self._made[i] = st
        return st

    def ranks(self) -> Iterator[tuple[bool, bool, float]]:
        """Each row's worst-frame rank (see :func:`worst_index`), without making its
        status."""
        return zip([True] * len(self), self._hit,
                   [-(p + o) for p, o in zip(self._pos, self._ori, strict=True)], strict=True)


def worst_index(ranks: Iterator[tuple[bool, bool, float]]) -> int:
    """The index of the least rank ``(solved, reached, -(position + orientation error))``,
    the first of equals: unsolved or missed frames first, then the largest error."""
    best, out = None, 0
    for i, rank in enumerate(ranks):
        if best is None or rank < best:
            best, out = rank, i
    return out


def status_ranks(statuses: Sequence[LimbStatus]) -> Iterator[tuple[bool, bool, float]]:
    """:meth:`StatusColumn.ranks` of ready-made statuses."""
    return ((st.solved, st.reached, -(st.position_error + st.orientation_error))
            for st in statuses)


class StatusRows(Sequence[list[LimbStatus]]):
    """Per frame, the statuses of every item baked (items in the order their columns were
    added): the rows are made from the columns when first read."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.columns: list[Sequence[LimbStatus]] = []
        self._rows: list[list[LimbStatus]] | None = None

    def add(self, column: Sequence[LimbStatus]) -> None:
        """Add one item's statuses (one per frame)."""
        if len(column) != self.n:
            raise ValueError(f"{len(column)} statuses for {self.n} frames")
        self.columns.append(column)
        self._rows = None

    def add_rows(self, rows: Sequence[Sequence[LimbStatus]]) -> None:
        """Add items given as per-frame rows (each row: one status per item)."""
        if len(rows) != self.n:
            raise ValueError(f"{len(rows)} rows for {self.n} frames")
        for column in zip(*rows, strict=True):
            self.add(list(column))

    def rows(self) -> list[list[LimbStatus]]:
        if self._rows is None:
            self._rows = ([list(r) for r in zip(*self.columns, strict=True)] if self.columns
                          else [[] for _ in range(self.n)])
        return self._rows

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> list[LimbStatus]: ...

    @overload
    def __getitem__(self, i: slice) -> list[list[LimbStatus]]: ...

    def __getitem__(self, i: int | slice) -> list[LimbStatus] | list[list[LimbStatus]]:
        return self.rows()[i]

    def __iter__(self) -> Iterator[list[LimbStatus]]:
        return iter(self.rows())

    def worst(self) -> list[LimbStatus]:
        """Per column, the status of its worst frame (:func:`worst_index`)."""
        out = []
        for col in self.columns:
            ranks = col.ranks() if isinstance(col, StatusColumn) else status_ranks(col)
            out.append(col[worst_index(ranks)])
        return out
