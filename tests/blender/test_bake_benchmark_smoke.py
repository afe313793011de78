"""Smoke test of benchmarks/bake.py (suite 5 of the evidence): rows and targets exist.
Timings are never asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import bake
from benchmarks._report import Suite


def test_quick_run_has_every_row(limber: Any, tmp_path: Path) -> None:
    suite = bake.run(True, tmp_path, log=lambda _msg: None)
    assert isinstance(suite, Suite) and suite.key == "bake"
    text = suite.markdown
    assert text.startswith("## Bake throughput")
    for row in ("Limber per frame", "Limber core solve per limb", "Limber bake, 50 frames",
                "Blender bake, 50 frames", "speed-up", "the same, wall",
                "Blender's IK constraints per frame", "Limber bake, one limb stretched"):
        assert f"| {row}" in text, row
    assert len(suite.targets) == 3
    assert all(t.detail and "CPU" in t.detail and "wall" in t.detail for t in suite.targets)
    assert "load average" in text
