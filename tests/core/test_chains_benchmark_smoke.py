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
        for name in ("Y", "double-Y"):
            assert text.count(f"| {method.name} | {name} | ") == 2
