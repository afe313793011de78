"""The one shape every evidence suite returns (issue 7), so ``python -m benchmarks`` can
assemble ``benchmarks/RESULTS.md`` from independent modules.

Each suite module exposes ``run(quick: bool, out_dir: pathlib.Path) -> Suite``: it measures
(ratios side by side in one process, medians over repeats with their spread), writes its PNG
charts into ``out_dir`` and returns its Markdown section plus the targets it checked. Tests
run every suite with ``quick=True`` and assert that the tables/targets exist — never timings.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Target:
    """One target from the issue, recorded honestly: a miss is a note, not a tweak."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Suite:
    """A suite's results: a Markdown section (starting with a ``## `` heading), the
    charts it wrote (paths inside ``out_dir``), its targets, the seeds it used, and an
    optional short headline table (Markdown) for the README."""

    key: str
    title: str
    markdown: str
    charts: tuple[Path, ...] = ()
    targets: tuple[Target, ...] = ()
    seeds: tuple[int, ...] = ()
    headline: str = ""
    extra: dict[str, object] = field(default_factory=dict)


def md_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub Markdown table; floats are written as given (format them beforehand)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def targets_table(targets: tuple[Target, ...] | list[Target]) -> str:
    """The pass/miss table of a suite's targets."""
    return md_table(
        ["target", "result", "measured"],
        [[t.name, "pass" if t.passed else "**miss**", t.detail] for t in targets],
    )


@dataclass(frozen=True)
class Spread:
    """Median and inter-quartile range of repeated measurements (same unit as the samples)."""

    median: float
    q1: float
    q3: float
    n: int

    @classmethod
    def of(cls, samples: object) -> Spread:
        import numpy as np

        x = np.asarray(samples, dtype=np.float64).ravel()
        if x.size == 0:
            nan = float("nan")
            return cls(nan, nan, nan, 0)
        q1, med, q3 = np.percentile(x, [25.0, 50.0, 75.0])
        return cls(float(med), float(q1), float(q3), int(x.size))

    def scaled(self, k: float) -> Spread:
        return Spread(self.median * k, self.q1 * k, self.q3 * k, self.n)

    def fmt(self, digits: int = 3) -> str:
        """``median [q1–q3]`` with ``digits`` significant figures."""
        lo, hi = fmt_num(self.q1, digits), fmt_num(self.q3, digits)
        return f"{fmt_num(self.median, digits)} [{lo}–{hi}]"


def fmt_num(x: float | None, digits: int = 3) -> str:
    """A number for a table: '—' for None/NaN, scientific below 1e-3 or from 1e6, else
    ``digits`` significant figures (thousands separated)."""
    import math

    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    ax = abs(x)
    if ax == 0.0:
        return "0"
    if ax < 1e-3 or ax >= 1e6:
        return f"{x:.{max(digits - 1, 0)}e}"
    decimals = max(digits - 1 - int(math.floor(math.log10(ax))), 0)
    return f"{x:,.{decimals}f}"


def fmt_pct(x: float | None) -> str:
    """A fraction as a percentage ('—' for None/NaN)."""
    import math

    if x is None or math.isnan(x):
        return "—"
    return f"{100.0 * x:.2f}%"


def limit_blas_threads(n: int = 1) -> list[str]:
    """Limit the OpenBLAS libraries loaded by numpy and scipy to ``n`` threads, even when
    numpy was imported before ``OPENBLAS_NUM_THREADS`` could be set (e.g. under pytest).
    The solvers work on tiny matrices; on a shared 2-core machine OpenBLAS's spinning
    worker threads make numeric timings erratic. Best effort: returns the library names
    it changed ([] where no OpenBLAS is found, e.g. not Linux)."""
    import ctypes

    import numpy  # noqa: F401  (loads numpy's BLAS)
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS)

    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = sorted({ln.split()[-1] for ln in f if "openblas" in ln.lower() and "/" in ln})
    except OSError:
        return []
    done = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in (
            "openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads",
            "openblas_set_num_threads",
        ):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                done.append(Path(path).name)
                break
    return done


def suite_main(
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str | None,
    title: str,
    quick_help: str,
    default_out: Path,
    quick_out: Path,
    run: Callable[[bool, Path], Suite],
) -> int:
    """The command line of a single-suite benchmark module: ``[--quick] [--out FILE]``;
    runs ``run(quick, out_dir)``, writes the suite's Markdown under ``# title`` to the
    results file (``default_out``, or ``quick_out`` with ``--quick``) and prints it."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--out", type=Path, default=None, help="results file (Markdown)")
    args = p.parse_args(argv)
    out = args.out or (quick_out if args.quick else default_out)
    suite = run(args.quick, out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    body = suite.markdown.split("\n", 1)[1].lstrip("\n")
    out.write_text(f"# {title}\n\n" + body, encoding="utf-8")
    print(suite.markdown)
    return 0
