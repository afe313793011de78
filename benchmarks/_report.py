"""The one shape every evidence suite returns (issue 7), so ``python -m benchmarks`` can
assemble ``benchmarks/RESULTS.md`` from independent modules.

Each suite module exposes ``run(quick: bool, out_dir: pathlib.Path) -> Suite``: it measures
(ratios side by side in one process, medians over repeats with their spread), writes its PNG
charts into ``out_dir`` and returns its Markdown section plus the targets it checked. Tests
run every suite with ``quick=True`` and assert that the tables/targets exist — never timings.
"""

from __future__ import annotations

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


def md_table(header: list[str], rows: list[list[object]]) -> str:
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
