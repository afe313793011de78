"""Re-run some suites alone and put their results into the existing evidence.

``python -m benchmarks --only KEYS --splice`` runs the named suites and, instead of
writing a RESULTS.md with only them, replaces *their* parts of ``benchmarks/RESULTS.md``
(their rows of the targets table, their headline, their section) and of the README's
evidence section (their headline; the target count and the misses, recounted from the
spliced table), and notes the re-run with its date beside the full run's. The other
suites' results stay as their full run measured them.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._report import Suite

_RESULT = {True: "pass", False: "**miss**"}


def _block_end(lines: list[str], start: int, stop: tuple[str, ...]) -> int:
    """Index of the first line after ``start`` starting with one of ``stop`` (or the
    end)."""
    for i in range(start + 1, len(lines)):
        if lines[i].startswith(stop):
            return i
    return len(lines)


def _replace_headline(lines: list[str], title: str, table: str) -> list[str]:
    """The ``**title**`` headline's table replaced by ``table``."""
    head = f"**{title}**"
    if head not in lines:
        return lines
    i = lines.index(head)
    j = _block_end(lines, i, ("**", "## ", "<!--", "!["))
    return lines[:i] + [head, "", *table.rstrip().split("\n"), ""] + lines[j:]


def target_rows(lines: list[str]) -> list[tuple[str, str, str, str]]:
    """(suite, target, result, measured) of every row of the ``## Targets`` table."""
    out = []
    if "## Targets" not in lines:
        return out
    i = lines.index("## Targets")
    for line in lines[i + 1:_block_end(lines, i, ("## ",))]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and cells[2] in _RESULT.values():
            out.append((cells[0], cells[1], cells[2], cells[3]))
    return out


def splice_results(text: str, title: str, suite: Suite, numbered: str, note: str) -> str:
    """RESULTS.md with ``title``'s target rows, headline and section replaced."""
    lines = text.rstrip("\n").split("\n")
    new_rows = [f"| {title} | {t.name} | {_RESULT[t.passed]} | {t.detail} |"
                for t in suite.targets]
    old = [i for i, line in enumerate(lines) if line.startswith(f"| {title} |")]
    if old:
        lines = lines[:old[0]] + new_rows + [x for i, x in enumerate(lines)
                                             if i > old[0] and i not in old]
    rows = target_rows(lines)
    passed = sum(r[2] == "pass" for r in rows)
    lines = [re.sub(r"^\d+ of \d+ targets met\.", f"{passed} of {len(rows)} targets met.",
                    line) for line in lines]
    lines = _replace_headline(lines, title, suite.headline)
    num = title.split(".", 1)[0]
    starts = [i for i, line in enumerate(lines) if line.startswith(f"## {num}.")]
    if starts:
        i = starts[0]
        j = _block_end(lines, i, ("## ",))
        lines = lines[:i] + numbered.rstrip().split("\n") + [""] + lines[j:]
    runs = [i for i, line in enumerate(lines) if line.startswith("- Run time:")]
    if runs and note not in lines:
        lines.insert(runs[0] + 1, note)
    return "\n".join(lines).rstrip() + "\n"


def splice_readme(text: str, markers: tuple[str, str], title: str, suite: Suite,
                  rows: Sequence[tuple[str, str, str, str]], when: _dt.datetime) -> str:
    """The README's evidence section with ``title``'s headline replaced and the target
    count and misses recounted from ``rows`` (the spliced RESULTS.md's targets)."""
    start, end = text.find(markers[0]), text.find(markers[1])
    if start < 0 or end < start:
        return text
    lines = text[start:end].split("\n")
    lines = _replace_headline(lines, title, suite.headline)
    passed = sum(r[2] == "pass" for r in rows)
    misses = [f"- {r[1]} ({r[3]})" for r in rows if r[2] != "pass"]
    out: list[str] = []
    skipping = False
    for line in lines:
        if "targets met**" in line:
            line = re.sub(r"\*\*\d+ of \d+ targets met\*\*[.;]?( misses:)?",
                          f"**{passed} of {len(rows)} targets met**"
                          + ("; misses:" if misses else "."), line)
            line = re.sub(r"\(run (\d{4}-\d\d-\d\d)[^)]*\)",
                          rf"(run \1; {title} re-run alone {when:%Y-%m-%d})", line)
            out.append(line)
            out += ["", *misses] if misses else []
            skipping = True
            continue
        if skipping:  # the old misses list, up to the first headline
            if line.startswith("**"):
                skipping = False
                out.append("")
            else:
                continue
        out.append(line)
    return text[:start] + "\n".join(out) + text[end:]


def splice(outcomes: Sequence[Any], results: Path, readme: Path,
           markers: tuple[str, str], numbered: Any, when: _dt.datetime) -> None:
    """Put each outcome that ran into ``results`` and ``readme`` (see the module
    docstring); ``numbered(markdown, title)`` numbers a section's heading."""
    text = results.read_text(encoding="utf-8")
    for o in outcomes:
        if o.suite is None:
            continue
        note = (f"- Re-run alone: {o.title} on {when:%Y-%m-%d %H:%M} UTC "
                "(`python -m benchmarks --only " + o.key + " --splice`); its rows, headline "
                "and section are from that run")
        text = splice_results(text, o.title, o.suite, numbered(o.suite.markdown, o.title),
                              note)
    results.write_text(text, encoding="utf-8")
    rows = target_rows(text.split("\n"))
    body = readme.read_text(encoding="utf-8")
    for o in outcomes:
        if o.suite is not None:
            body = splice_readme(body, markers, o.title, o.suite, rows, when)
    readme.write_text(body, encoding="utf-8")
