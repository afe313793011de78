"""Smoke test of the evidence runner (``python -m benchmarks --quick``, issue 7): every
table, row, chart and target of suites 1, 3 and 6 appears, and a missing suite is
reported as not run. Timings are never asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import __main__ as runner
from benchmarks import throughput, tolani, tracking

OURS = ["tolani", "tracking", "throughput"]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[runner.Outcome], Path]:
    out = tmp_path_factory.mktemp("evidence") / "RESULTS.md"
    return runner.run_all(True, out, OURS), out


@pytest.fixture(scope="module")
def quick_run(outcomes: tuple[list[runner.Outcome], Path]) -> tuple[str, Path]:
    out = outcomes[1]
    return out.read_text(encoding="utf-8"), out.parent


def _rows(text: str, *cells: str) -> int:
    return text.count("| " + " | ".join(cells) + " |")


def test_header_records_environment_and_seeds(quick_run: tuple[str, Path]) -> None:
    text, _ = quick_run
    for key in ("- Date:", "- CPU:", "numpy", "scipy", "bpy", "ikpy", "- Seeds:", "## Targets"):
        assert key in text, key
    assert f"tolani: {tolani.SEED}" in text and f"throughput: {throughput.SEED}" in text


def test_tolani_tables_have_every_row(quick_run: tuple[str, Path]) -> None:
    text, _ = quick_run
    assert "## 1. Tolani Tables 4–7, reproduced" in text
    for table in tolani.TABLES:
        assert f"### {table}" in text
    for cond in tolani.CONDITIONS:
        for method in tolani.METHODS:
            # one row per table for each condition and method
            assert text.count(f"| {cond} | {method} | ") == len(tolani.TABLES), (cond, method)


def test_tracking_table_has_every_method_and_shape(quick_run: tuple[str, Path]) -> None:
    text, _ = quick_run
    assert "## 3. Buss's Y and double-Y" in text
    for shape in tracking.SHAPES:
        for m in tracking.METHODS:
            assert _rows(text, shape, m.name) == 1, (shape, m.name)


def test_throughput_table_has_every_curve(quick_run: tuple[str, Path]) -> None:
    text, _ = quick_run
    assert "## 6. Batch throughput" in text
    for case in throughput.ANALYTIC_CASES:
        assert _rows(text, f"analytic, {case}", "single calls") == 1
        for b in throughput.QUICK.batches:
            assert _rows(text, f"analytic, {case}", f"batched, B = {b:,}") == 1
    for m in throughput.NUMERIC_METHODS:
        assert f"| {m.name} (numeric), pose goal, limits off | batched, B = 1 |" in text


def test_every_target_is_in_the_pass_miss_table(quick_run: tuple[str, Path]) -> None:
    text, _ = quick_run
    names = [
        "Analytic: 0 failures on reachable goals",
        "Analytic: position error ≤ 1e-10 m",
        "Analytic: orientation / aim error ≤ 1e-10 rad",
        "Relative time analytic vs Optimization ≥ 200×",
        "Relative time analytic vs Inverse Jacobian ≥ 1,000×",
        "Limits: never a violated limit when a feasible solution exists",
        "Buss tracking: every method on Y and double-Y",
    ]
    for name in names:
        line = next((ln for ln in text.splitlines() if name in ln), None)
        assert line is not None, name
        assert "| pass |" in line or "| **miss** |" in line


def test_charts_are_written_and_linked(quick_run: tuple[str, Path]) -> None:
    text, folder = quick_run
    for png in ("tolani_times.png", "buss_tracking.png", "throughput.png"):
        path = folder / "charts" / png
        assert path.is_file() and path.stat().st_size > 1000, png
        assert f"(charts/{png})" in text


def test_missing_suite_is_reported_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        runner, "SUITES", (("ghost", "benchmarks.no_such_suite", "9. A suite not written yet"),)
    )
    out = tmp_path / "RESULTS.md"
    assert runner.main(["--quick", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "## 9. A suite not written yet" in text
    assert "Not run: module benchmarks.no_such_suite not present." in text
    assert "| 9. A suite not written yet | suite ran | **miss** |" in text


def test_old_benchmarks_stay_subcommands() -> None:
    with pytest.raises(SystemExit) as exc:
        runner.main(["limb", "--help"])
    assert exc.value.code == 0


def test_readme_section_replaces_only_the_marked_block(
    outcomes: tuple[list[runner.Outcome], Path], tmp_path: Path
) -> None:
    results, out = outcomes
    assert [o.key for o in results] == OURS and all(o.suite is not None for o in results)
    section = runner.readme_section(results, out, runner._dt.datetime.now(runner._dt.UTC))
    start, end = runner.README_MARKERS
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{start}\nold\n{end}\n\n## Layout\n", encoding="utf-8")
    assert runner.update_readme(section, readme)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# Title\n") and text.endswith("## Layout\n") and "old" not in text
    assert "## Evidence" in text and "targets met" in text and "RESULTS.md" in text
    for o in results:
        assert o.suite is not None and o.suite.headline in text
    plain = tmp_path / "PLAIN.md"
    plain.write_text("# no markers\n", encoding="utf-8")
    assert not runner.update_readme(section, plain)
    assert plain.read_text(encoding="utf-8") == "# no markers\n"
