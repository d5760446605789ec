"""Print CI's phase times and each test phase's slowest tests (``.ci/run`` calls it at exit).

``python .ci/summary.py FOLDER``: FOLDER holds ``phases.tsv`` (one ``name<TAB>seconds<TAB>status``
line per phase, as ``.ci/run`` writes them) and one ``<phase>.xml`` JUnit report per test
phase.  ``--durations FILE`` also writes every slow-tier test's wall seconds there (sorted,
longest first), which ``tests/conftest.py`` reads to start the longest tests first.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SLOWEST = 15


def _tests(report: Path) -> list[tuple[str, float]]:
    """Return (node id, seconds) of every test case in a JUnit report."""
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError):
        return []
    out = []
    for case in root.iter("testcase"):
        parts = case.get("classname", "").split(".")
        name = case.get("name", "")
        if parts and parts[-1].startswith("Test"):  # a test class: file::Class::test
            name = f"{parts.pop()}::{name}"
        out.append((f"{'/'.join(parts)}.py::{name}", float(case.get("time", 0.0))))
    return out


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def main(argv: list[str] | None = None) -> int:
    """Print the summary of the reports in the folder ``argv`` names; exit status 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--durations", type=Path, default=None)
    args = ap.parse_args(argv)
    phases = []
    path = args.folder / "phases.tsv"
    if path.exists():
        for line in path.read_text().splitlines():
            name, seconds, status = [*line.split("\t"), "", ""][:3]
            phases.append((name, float(seconds or 0), status))
    total = sum(s for _, s, _ in phases)
    print("== CI phase times (wall)")
    for name, seconds, status in phases:
        mark = "" if status in ("0", "5", "") else f"  (exit {status})"
        print(f"  {name:<12}{_clock(seconds):>8}{mark}")
    print(f"  {'total':<12}{_clock(total):>8}")
    durations: dict[str, float] = {}
    for name, _, _ in phases:
        cases = _tests(args.folder / f"{name}.xml")
        if not cases:
            continue
        cases.sort(key=lambda c: -c[1])
        print(f"== {name}: the {min(SLOWEST, len(cases))} slowest of {len(cases)} tests")
        for node, seconds in cases[:SLOWEST]:
            print(f"  {seconds:8.1f} s  {node}")
        if name != "tests":
            durations.update(cases)
    if args.durations is not None and durations:
        rounded = ((k, round(v, 1)) for k, v in durations.items())
        ordered = dict(sorted(rounded, key=lambda kv: -kv[1]))
        args.durations.write_text(json.dumps(ordered, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
