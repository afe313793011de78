"""``python -m benchmarks --only KEYS --splice``: one suite's rows, headline and section
replace its old ones in RESULTS.md and the README's evidence section; the target count
and the misses are recounted; the other suites stay as they were."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

from benchmarks.__main__ import README_MARKERS, _numbered
from benchmarks._report import Suite, Target
from benchmarks._splice import splice, target_rows

HEADLINES = """**1. Alpha**

| a | b |
|---|---|
| 1 | 2 |

**2. Beta**

| old | beta |
|---|---|
| 9 | 9 |
"""

RESULTS = f"""# Limber — evidence (issue 7)

- Date: 2026-11-22 10:00 UTC
- Run time: 9.0 min (a 1 s, b 2 s)

## Targets

2 of 3 targets met. A miss is recorded as measured, not tuned away.

| suite | target | result | measured |
|---|---|---|---|
| 1. Alpha | alpha fast | pass | 2× |
| 2. Beta | beta fast | pass | 3× |
| 2. Beta | beta exact | **miss** | 1e-3 |

## Headlines

{HEADLINES}
## 1. Alpha

alpha text

## 2. Beta (details)

old beta text

## 3. Gamma

gamma text
"""

README = f"""# Limber

intro

{README_MARKERS[0]}
## Evidence

Evidence: [R](R) (run 2026-11-22). **2 of 3 targets met**; misses:

- beta exact (1e-3)

{HEADLINES}
{README_MARKERS[1]}

## After
"""


def test_splice_replaces_one_suite_and_recounts(tmp_path: Path) -> None:
    results, readme = tmp_path / "RESULTS.md", tmp_path / "README.md"
    results.write_text(RESULTS, encoding="utf-8")
    readme.write_text(README, encoding="utf-8")
    suite = Suite(key="beta", title="Beta", markdown="## Beta (new)\n\nnew beta text\n",
                  targets=(Target("beta fast", False, "1.5×"), Target("beta exact", True,
                                                                     "1e-12"),
                           Target("beta new", True, "ok")),
                  headline="| new | beta |\n|---|---|\n| 1 | 1 |")
    when = dt.datetime(2026, 11, 27, 4, 0, tzinfo=dt.UTC)
    outcome = SimpleNamespace(key="beta", title="2. Beta", suite=suite)
    splice([outcome], results, readme, README_MARKERS, _numbered, when)
    text = results.read_text(encoding="utf-8")
    rows = target_rows(text.split("\n"))
    assert rows == [("1. Alpha", "alpha fast", "pass", "2×"),
                    ("2. Beta", "beta fast", "**miss**", "1.5×"),
                    ("2. Beta", "beta exact", "pass", "1e-12"),
                    ("2. Beta", "beta new", "pass", "ok")]
    assert "3 of 4 targets met." in text
    assert "| new | beta |" in text and "| old | beta |" not in text
    assert "## 2. Beta (new)\n\nnew beta text\n\n## 3. Gamma" in text
    assert "old beta text" not in text and "alpha text" in text and "| 1 | 2 |" in text
    assert "- Re-run alone: 2. Beta on 2026-11-27 04:00 UTC" in text
    body = readme.read_text(encoding="utf-8")
    assert "**3 of 4 targets met**; misses:\n\n- beta fast (1.5×)\n\n**1. Alpha**" in body
    assert "(run 2026-11-22; 2. Beta re-run alone 2026-11-27)" in body
    assert "| new | beta |" in body and "| old | beta |" not in body
    assert body.startswith("# Limber\n\nintro\n") and body.endswith("\n\n## After\n")
