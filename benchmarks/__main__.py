"""``python -m benchmarks [--quick] [--out FILE] [--only KEYS [--splice]]``: the evidence of
issue 7 (``--splice``: see :mod:`benchmarks._splice`).

Runs every suite (each module's ``run(quick, out_dir) -> Suite``), side by side in this
one process, and writes ``benchmarks/RESULTS.md`` (date, CPU, versions, seeds, every
suite's section, the pass/miss table of all targets) and the PNG charts in
``benchmarks/charts/``. A suite whose module is missing or fails is listed as
"not run: <reason>" (and its targets as misses) instead of stopping the run. ``--quick``
(small N, a smoke test) writes to ``out/benchmarks-quick/`` unless ``--out`` is given.

The older single benchmarks stay available as sub-commands:
``python -m benchmarks limb [args]`` (= ``python -m benchmarks.limb``) and
``python -m benchmarks chains [args]``.

BLAS threads are limited to 1 (``OPENBLAS_NUM_THREADS`` etc., unless already set): the
solvers work on tiny matrices, and on a shared 2-core machine OpenBLAS's worker threads
spin against other processes and make numeric timings erratic (×2–×20).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime as _dt  # noqa: E402
import importlib  # noqa: E402
import importlib.metadata as _md  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

from benchmarks._report import Suite, Target, limit_blas_threads, md_table  # noqa: E402

ROOT = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "RESULTS.md"
README = ROOT.parent / "README.md"
#: The README's evidence section lies between these markers; a full run to the default
#: RESULTS.md rewrites it (headline tables, charts, the pass/miss count).
README_MARKERS = ("<!-- evidence:start -->", "<!-- evidence:end -->")
QUICK_OUT = ROOT.parent / "out" / "benchmarks-quick" / "RESULTS.md"

#: (key, module, title) in report order. Suites 2, 4 and 5 are written by other helpers
#: and may be absent; the runner then reports them as not run.
SUITES: tuple[tuple[str, str, str], ...] = (
    ("tolani", "benchmarks.tolani", "1. Tolani Tables 4–7, reproduced"),
    ("incumbents", "benchmarks.incumbents", "2. Incumbents: Blender's IK constraint and ikpy"),
    ("tracking", "benchmarks.tracking", "3. Buss's Y and double-Y tracking"),
    ("mocap", "benchmarks.mocap", "4. Motion-capture tracking"),
    ("bake", "benchmarks.bake", "5. Bake throughput"),
    ("throughput", "benchmarks.throughput", "6. Batch throughput"),
)
SUBCOMMANDS: dict[str, str] = {"limb": "benchmarks.limb", "chains": "benchmarks.chains"}


@dataclass(frozen=True)
class Outcome:
    key: str
    title: str
    suite: Suite | None
    reason: str  # why it did not run ("" when it ran)
    seconds: float


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_suite(key: str, module: str, title: str, quick: bool, charts: Path) -> Outcome:
    t0 = time.perf_counter()
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return Outcome(key, title, None, f"module {module} not present", 0.0)
        traceback.print_exc()
        return Outcome(key, title, None, f"import failed: {exc!r}", time.perf_counter() - t0)
    except Exception as exc:  # a broken suite must not stop the others
        traceback.print_exc()
        return Outcome(key, title, None, f"import failed: {exc!r}", time.perf_counter() - t0)
    try:
        suite = mod.run(quick, charts)
    except Exception as exc:
        traceback.print_exc()
        return Outcome(key, title, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
    if not isinstance(suite, Suite):
        return Outcome(key, title, None, f"run() returned {type(suite).__name__}, not Suite", 0.0)
    return Outcome(key, title, suite, "", time.perf_counter() - t0)


def _version(dist: str) -> str:
    try:
        return _md.version(dist)
    except _md.PackageNotFoundError:
        return "not installed"


def environment(quick: bool, started: _dt.datetime, load: str) -> list[str]:
    import numpy as np
    import scipy

    from benchmarks.limb import _cpu_model

    threads = ", ".join(f"{v}={os.environ.get(v)}" for v in ("OPENBLAS_NUM_THREADS",))
    mode = " (--quick: tiny N, smoke test only)" if quick else ""
    return [
        f"- Date: {started:%Y-%m-%d %H:%M} UTC{mode}",
        f"- CPU: {_cpu_model()}, {os.cpu_count()} logical cores; load average at start {load} "
        "(shared machine unless noted)",
        f"- {platform.system()} {platform.machine()}, Python {platform.python_version()} "
        f"({platform.python_implementation()}), numpy {np.__version__}, scipy "
        f"{scipy.__version__}, bpy {_version('bpy')}, ikpy {_version('ikpy')}, matplotlib "
        f"{_version('matplotlib')}; BLAS threads: {threads}",
        "- Command: `python -m benchmarks" + (" --quick`" if quick else "`") + f"; code {_git()}",
    ]


def _git() -> str:
    """The commit the run measured (and whether the tree had uncommitted changes)."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "(not a git checkout)"
    return f"git {head}" + (" + uncommitted changes" if dirty else "")


def all_targets(outcomes: Sequence[Outcome]) -> list[tuple[str, Target]]:
    rows: list[tuple[str, Target]] = []
    for o in outcomes:
        if o.suite is None:
            rows.append((o.title, Target("suite ran", False, f"not run: {o.reason}")))
        else:
            rows += [(o.title, t) for t in o.suite.targets]
    return rows


def _numbered(markdown: str, title: str) -> str:
    """The section with its first ``## `` heading numbered like ``title`` ('2. …')."""
    num = title.split(".", 1)[0]
    head, sep, rest = markdown.partition("\n")
    if head.startswith("## ") and not head.startswith(f"## {num}."):
        head = f"## {num}. {head[3:]}"
    return head + sep + rest


def render(outcomes: Sequence[Outcome], env: list[str], out: Path, total_s: float) -> str:
    seeds = [
        f"{o.key}: {', '.join(str(s) for s in o.suite.seeds) or '— (deterministic)'}"
        for o in outcomes
        if o.suite is not None
    ]
    targets = all_targets(outcomes)
    passed = sum(t.passed for _, t in targets)
    lines = [
        "# Limber — evidence (issue 7)",
        "",
        "Generated by `python -m benchmarks` (benchmarks/__main__.py); do not edit by hand. "
        "Every comparison is a ratio measured side by side in one process; every time is a "
        "median over repeats with its spread (IQR). Absolute times depend on the machine.",
        "",
        *env,
        f"- Seeds: {'; '.join(seeds) if seeds else '—'}",
        f"- Run time: {total_s / 60:.1f} min ("
        + ", ".join(f"{o.key} {o.seconds:.0f} s" for o in outcomes)
        + ")",
        "",
        "## Targets",
        "",
        f"{passed} of {len(targets)} targets met. A miss is recorded as measured, not tuned away.",
        "",
        md_table(
            ["suite", "target", "result", "measured"],
            [[s, t.name, "pass" if t.passed else "**miss**", t.detail] for s, t in targets],
        ),
        "",
        "## Headlines",
        "",
    ]
    for o in outcomes:
        if o.suite is not None and o.suite.headline:
            lines += [f"**{o.title}**", "", o.suite.headline, ""]
    for o in outcomes:
        if o.suite is None:
            lines += [f"## {o.title}", "", f"Not run: {o.reason}.", ""]
            continue
        lines += [_numbered(o.suite.markdown.rstrip(), o.title), ""]
        for png in o.suite.charts:
            rel = os.path.relpath(Path(png).resolve(), out.parent.resolve())
            if rel.replace(os.sep, "/") not in o.suite.markdown:
                lines += [f"![{o.title}]({rel.replace(os.sep, '/')})", ""]
    return "\n".join(lines).rstrip() + "\n"


def readme_section(outcomes: Sequence[Outcome], out: Path, when: _dt.datetime) -> str:
    """The README's evidence section (between :data:`README_MARKERS`): the target count,
    every suite's headline table and the charts, linking RESULTS.md."""
    base = README.parent.resolve()
    link = os.path.relpath(out.resolve(), base).replace(os.sep, "/")
    targets = all_targets(outcomes)
    misses = [f"{t.name} ({t.detail})" for _, t in targets if not t.passed]
    lines = [
        README_MARKERS[0],
        "## Evidence",
        "",
        f"`python -m benchmarks` measures Limber against the papers' own tables and against "
        f"Blender's IK constraint and ikpy, side by side in one process (ratios; medians "
        f"with their spread; absolute times depend on the machine and its load, both "
        f"recorded). Full tables, machine, versions and seeds: [{link}]({link}) "
        f"(run {when:%Y-%m-%d}). **{sum(t.passed for _, t in targets)} of {len(targets)} "
        "targets met**" + ("." if not misses else "; misses:"),
        "",
    ]
    lines += [f"- {m}" for m in misses]
    if misses:
        lines.append("")
    for o in outcomes:
        if o.suite is not None and o.suite.headline:
            lines += [f"**{o.title}**", "", o.suite.headline, ""]
    for o in outcomes:
        for png in o.suite.charts if o.suite is not None else ():
            rel = os.path.relpath(Path(png).resolve(), base).replace(os.sep, "/")
            lines += [f"![{o.title}]({rel})", ""]
    lines.append(README_MARKERS[1])
    return "\n".join(lines)


def update_readme(section: str, readme: Path = README) -> bool:
    """Replace the README's evidence section; False (README untouched) without markers."""
    text = readme.read_text(encoding="utf-8")
    start, end = (text.find(m) for m in README_MARKERS)
    if start < 0 or end < start:
        return False
    end += len(README_MARKERS[1])
    readme.write_text(text[:start] + section + text[end:], encoding="utf-8")
    return True


def run_all(quick: bool, out: Path, only: Sequence[str] | None = None) -> list[Outcome]:
    started = _dt.datetime.now(_dt.UTC)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    charts = out.parent / "charts"
    charts.mkdir(parents=True, exist_ok=True)
    blas = limit_blas_threads(1)
    log(f"benchmarks: BLAS threads limited to 1 in {', '.join(blas) or 'no OpenBLAS found'}")
    t0 = time.perf_counter()
    outcomes = []
    for key, module, title in SUITES:
        if only and key not in only:
            continue
        log(f"benchmarks: suite {key} ...")
        o = run_suite(key, module, title, quick, charts)
        log(
            f"benchmarks: suite {key}: {'not run: ' + o.reason if o.suite is None else 'done'}"
            f" ({o.seconds:.1f} s)"
        )
        outcomes.append(o)
    text = render(outcomes, environment(quick, started, load), out, time.perf_counter() - t0)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    log(f"benchmarks: wrote {out} and {charts}/")
    if not quick and not only and out.resolve() == DEFAULT_OUT.resolve():
        if update_readme(readme_section(outcomes, out, started)):
            log(f"benchmarks: updated the evidence section of {README}")
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        mod = importlib.import_module(SUBCOMMANDS[args[0]])
        return int(mod.main(args[1:]))
    keys = [k for k, _, _ in SUITES]
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run the evidence suites of issue 7 and write RESULTS.md + charts. "
        f"Sub-commands: {', '.join(SUBCOMMANDS)} (the older single benchmarks).",
    )
    parser.add_argument("--quick", action="store_true", help="small N (smoke test)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"RESULTS.md path (default {DEFAULT_OUT}; --quick: {QUICK_OUT}); charts go to "
        "charts/ beside it",
    )
    parser.add_argument(
        "--only", default="", help=f"comma-separated suite keys to run ({', '.join(keys)})"
    )
    parser.add_argument(
        "--splice", action="store_true",
        help="with --only: put those suites' results into the existing RESULTS.md and the "
        "README's evidence section instead of writing a RESULTS.md with only them",
    )
    ns = parser.parse_args(args)
    only = [k.strip() for k in ns.only.split(",") if k.strip()]
    unknown = [k for k in only if k not in keys]
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; valid: {', '.join(keys)}")
    out = ns.out or (QUICK_OUT if ns.quick else DEFAULT_OUT)
    if ns.splice:
        if not only or ns.quick:
            parser.error("--splice needs --only and a full run")
        from benchmarks._splice import splice

        started = _dt.datetime.now(_dt.UTC)
        limit_blas_threads(1)
        outcomes = [run_suite(k, m, t, False, out.parent / "charts")
                    for k, m, t in SUITES if k in only]
        splice(outcomes, out, README, README_MARKERS, _numbered, started)
        log(f"benchmarks: spliced {', '.join(only)} into {out} and {README}")
        return 0
    run_all(ns.quick, out, only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
