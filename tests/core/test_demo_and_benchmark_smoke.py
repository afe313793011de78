"""Smoke tests of the demo (tools/demo.py) and the limb benchmark (benchmarks/limb.py).

They check that the outputs are produced with the expected sections and rows; timings are
never asserted (speed is measured by the benchmark only).
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

from benchmarks import limb as bench  # noqa: E402
from tools import demo  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert demo.main(["--out", str(out)]) == 0
    return out


def test_demo_writes_report_with_sections(demo_out: Path) -> None:
    report = (demo_out / "report.md").read_text(encoding="utf-8")
    for heading in ("## Arm", "## Goals", "## Swivel sweep", "## Strategies", "## Timing"):
        assert heading in report
    n_goals = len(demo.demo_goals())
    for i in range(1, n_goals + 1):
        assert f"\n| {i} | " in report
    assert "feasible φ intervals" in report
    assert "CLOSEST φ" in report and "MIDPOINT φ" in report
    assert "µs per solve" in report


def test_demo_writes_png(demo_out: Path) -> None:
    data = (demo_out / "swivel_sweep.png").read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 20_000


def test_demo_writes_summary_json(demo_out: Path) -> None:
    summary = json.loads((demo_out / "summary.json").read_text(encoding="utf-8"))
    assert {"arm", "sweep_deg", "goals", "counts", "timing_us", "seed"} <= set(summary)
    goals = summary["goals"]
    assert len(goals) == len(demo.demo_goals())
    for g in goals:
        keys = {"position_m", "reachable", "elbow_deg", "feasible_swivel_deg", "strategies"}
        assert keys <= set(g)
        assert set(g["strategies"]) == {"CLOSEST", "MIDPOINT"}
        assert len(g["sweep_within_limits"]) == len(summary["sweep_deg"])
    # What the report claims about its goals: the 12 path goals are solvable within limits,
    # the last two are out of reach.
    for g in goals[:12]:
        assert g["reachable"] and g["feasible_swivel_deg"]
        assert g["strategies"]["CLOSEST"]["within_limits"]
        assert g["strategies"]["CLOSEST"]["reachable"]
    assert not goals[-1]["reachable"] and not goals[-2]["reachable"]
    # The sweep's independent limit check agrees with feasible_swivel.
    assert summary["counts"]["sweep_inconsistent"] == []


def test_demo_honours_env_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "run", lambda out: _fake_run(out))
    monkeypatch.setenv("LIMBER_DEMO_OUT", str(tmp_path / "env_out"))
    assert demo.main([]) == 0
    assert (tmp_path / "env_out" / "marker").exists()


def _fake_run(out: Path) -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "marker").write_text("", encoding="utf-8")
    return {"counts": {"goals": 0, "reachable": 0, "with_feasible_swivel": 0}, "runtime_s": 0.0}


def test_benchmark_quick_writes_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.md"
    assert bench.main(["--quick", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.strip() in capsys.readouterr().out
    for header in ("CPU:", "Python", "numpy", "scipy", "Seed:", "Date:"):
        assert header in text
    for name in (*bench.CASES, *bench.CONSTRUCTION_ROWS, *bench.TOLANI_ROWS):
        assert f"| {name} |" in text
    assert "## Partial orientation and aiming (Tolani et al. Tables 6–7)" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    n_rows = len(bench.CASES) + len(bench.CONSTRUCTION_ROWS) + len(bench.TOLANI_ROWS)
    assert len(rows) == 3 + n_rows  # + 3 headers
    # Each Tolani row carries the paper's time beside ours, and the partial / aim rows of
    # reachable goals report a failure rate (unreachable ones do not).
    for name in bench.TOLANI_ROWS:
        (line,) = [r for r in rows if r.startswith(f"| {name} |")]
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 13, line
        assert cells[10] == bench.TOLANI_PAPER[name][0]
        assert (cells[8] == "—") == ("unreachable" in name), line
