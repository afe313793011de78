"""Smoke test of benchmarks/chains.py: every table row is produced (timings never asserted)."""

from __future__ import annotations

from pathlib import Path

from benchmarks import chains
from core import Method


def test_quick_run_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "CHAINS_RESULTS.md"
    assert chains.main(["--quick", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "## Iteration and solve cost" in text and "## Buss's tracking test" in text
    for method in Method:
        for name in ("Y", "double-Y", "arm"):
            assert f"| {method.name} | {name} | " in text
    for method in Method:
        for name in ("Y", "double-Y"):  # table 0 (issue 16), table 1, the tracking table
            assert text.count(f"| {method.name} | {name} | ") == 3
        for name in ("arm position", "arm pose", "12-hinge chain"):  # table 0
            assert f"| {method.name} | {name} | " in text
    assert "## Defaults (issue 16)" in text
