"""The documentation: links that resolve, a command reference that is current, and every
code block run as a new user would run it (the slow tier), outside the checkout.

Code blocks are ``bash`` (run with ``bash -e``, a page's blocks in order in one fresh folder),
``python`` (each run by a fresh interpreter in that folder), ``yaml`` (parsed; ``yaml
file=NAME`` is also written to NAME for the commands after it) and ``text`` (output, not
run).  A page that names ``examples/`` gets ``cloudsched examples`` first, as the docs tell
a user to do.  ``bash norun`` blocks are the few listed in :data:`NOT_RUN`, with the reason.
A ``text`` block right after a block that ran is that block's output: every number it quotes
must be one the run printed, in the same order (durations and rates aside);
``text illustrative`` marks one that is not a run's output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
KINDS = {"bash", "python", "yaml", "text"}
#: Blocks not run by this test (their first line), and why.
NOT_RUN = {
    'pip install -e ".[dev]" && cloudsched demo': (
        "the set-up commands: CI runs them first, on a fresh checkout (.ci/run)"
    ),
    "ruff check . && ruff format --check . && mypy   # lint, format, type-check": (
        "the developer's tools, run by CI on the checkout (benchmarks/ is not installed)"
    ),
    "python -m pytest -m quick        # the quick tier: every package, 1.5 min warm": (
        "the test tiers themselves, which CI runs (.ci/run)"
    ),
    "from dask.distributed import Client": (
        "a Slurm or PBS cluster with dask-jobqueue; the same run_sweep(executor=...) path is "
        "tested with a process pool executor, a multiprocessing pool and a map "
        "(tests/test_sweep.py)"
    ),
    "cloudsched place flink http://127.0.0.1:8081/jobs/8b4a2ae318ce63bc5942f83978c72b9e "
    "--save job.json": (
        "a running Flink cluster's REST address; tests/test_flink_cluster.py runs place "
        "flink on a live one (slow tier, the flink extra)"
    ),
    "dask scheduler --tls-ca-file ca.pem --tls-cert head.pem --tls-key head.key   # port 8786": (
        "a cluster of several machines with their certificates; tests/test_sweep_dask.py "
        "runs a TLS scheduler on loopback"
    ),
}


def _blocks(page: Path) -> list[tuple[str, str, int]]:
    """Return the page's fenced blocks: (info string, body, line number)."""
    out, info, body, start = [], None, [], 0
    for n, line in enumerate(page.read_text().split("\n"), 1):
        if line.startswith("```"):
            if info is None:
                info, body, start = line[3:].strip(), [], n
            else:
                out.append((info, "\n".join(body), start))
                info = None
        elif info is not None:
            body.append(line)
    assert info is None, f"{page}: a block opened at line {start} is not closed"
    return out


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_block_has_a_known_kind_and_norun_is_listed():
    listed = set()
    for page in PAGES:
        for info, body, line in _blocks(page):
            kind = info.split()[0] if info else ""
            assert kind in KINDS, f"{page.name}:{line}: block kind {info!r}"
            if "norun" in info.split():
                first = body.split("\n")[0]
                assert first in NOT_RUN, f"{page.name}:{line}: unlisted norun block {first!r}"
                listed.add(first)
    assert listed == set(NOT_RUN), "NOT_RUN lists blocks the docs no longer have"


def test_links_resolve():
    bad = []
    for page in PAGES:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{page.relative_to(ROOT)}: {target}")
                continue
            if anchor and dest.is_file():
                heads = {_slug(h) for h in re.findall(r"^#+ (.*)$", dest.read_text(), re.M)}
                if anchor not in heads:
                    bad.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not bad, bad


def test_every_docs_page_is_reachable_from_the_index():
    index = (ROOT / "docs" / "index.md").read_text()
    for page in (ROOT / "docs").rglob("*.md"):
        rel = page.relative_to(ROOT / "docs").as_posix()
        if rel == "index.md":
            continue
        assert f"({rel})" in index, f"docs/index.md does not link {rel}"


def test_command_reference_is_current():
    from cloudsched.cli.reference import render

    current = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert current == render(), "run: python -m cloudsched.cli.reference > docs/reference/cli.md"


#: A number as a page or a command prints it (``1,188``, ``-0.5``, ``1.2e-29``, ``6.32``).
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
#: Numbers that are the machine's, not the seed's: a duration or a rate (``36 s``, ``0.4 s``,
#: ``2 min``, ``6.32 M events/s``, ``1.86 M``); a page's quoted output may show other values.
VOLATILE = re.compile(
    r"[-+]?\d[\d,]*(?:\.\d+)?\s*(?:s|ms|min|M|k)?(?=\s*(?:events/s|/s\b))"
    r"|\b\d[\d,]*(?:\.\d+)?\s*(?:s|min)\b(?!\w)"
    r"|\b\d+(?:\.\d+)?\s[kMG]\b"
)


def _numbers(text: str) -> list[str]:
    return NUMBER.findall(VOLATILE.sub(" ", text))


def quoted_numbers_missing(quoted: str, output: str) -> list[str]:
    """Numbers of a page's quoted output that the run did not print.

    Each quoted line with numbers must match a line of the run's output that has those
    numbers in the same order (standard error and output interleave differently in a
    terminal than in a capture, so lines are matched, not their order; the quote may leave
    lines out).  A line starting ``$ `` shows the command; durations and rates (the
    machine's, not the seed's) are not compared.  Returns each number of a line that no
    output line matches, with that line.
    """
    printed = [_numbers(line) for line in output.split("\n")]

    def within(ns: list[str], got: list[str]) -> bool:
        at = 0
        for n in ns:
            try:
                at = got.index(n, at) + 1
            except ValueError:
                return False
        return True

    missing = []
    for line in quoted.split("\n"):
        ns = _numbers(line)
        if not ns or line.startswith("$ ") or any(within(ns, got) for got in printed):
            continue
        best = max(printed, key=lambda got: sum(n in got for n in ns))
        missing += [f"{n!r} in {line.strip()!r}" for n in ns if n not in best][:1] or [
            f"the order of {line.strip()!r}"
        ]
    return missing


def _run_page(page: Path, folder: Path) -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "100"}
    text = page.read_text()
    if "examples/" in text:
        subprocess.run(["cloudsched", "examples"], cwd=folder, env=env, check=True)
    output, where = None, ""
    for info, body, line in _blocks(page):
        words = info.split()
        if words[0] == "text":  # the output of the block before it, when that block ran
            if output is not None and "illustrative" not in words:
                missing = quoted_numbers_missing(body, output)
                assert not missing, (
                    f"{page.relative_to(ROOT)}:{line} quotes numbers that {where} did not "
                    f"print: {missing[:5]}\n--- it printed:\n{output[-3000:]}"
                )
            output = None
            continue
        output = None
        if "norun" in words:
            continue
        where = f"{page.relative_to(ROOT)}:{line}"
        if words[0] == "yaml":
            yaml.safe_load(body)
            for w in words[1:]:
                if w.startswith("file="):
                    (folder / w[5:]).write_text(body + "\n")
            continue
        cmd = ["bash", "-e", "-o", "pipefail", "-c", body]
        if words[0] == "python":
            cmd = [sys.executable, "-c", body]
        done = subprocess.run(
            cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=1200
        )
        assert done.returncode == 0, (
            f"{where} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        )
        output = done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_code_block_runs_outside_the_checkout(page, tmp_path):
    if not any(i.split()[0] in ("bash", "python", "yaml") for i, _, _ in _blocks(page) if i):
        pytest.skip("no code to run")
    _run_page(page, tmp_path)


def test_quoted_output_must_hold_the_numbers_the_run_printed():
    printed = (
        "  policy  d   r  load   mf T  sim T\n     jiq  -  10   0.9  1.765   1.77\n"
        "verdict: NOT pod:2r (p = 1.2e-29; 1,188 migrations); took 36 s, 6.32 M events/s\n"
    )
    same = "jiq  -  10   0.9  1.765   1.77\n...\n(p = 1.2e-29; 1,188 migrations); took 2 s"
    assert quoted_numbers_missing(same, printed) == []  # lines left out, a duration differs
    assert quoted_numbers_missing("1.77 1.765", printed) == ["the order of '1.77 1.765'"]
    changed = "jiq  -  10   0.9  1.766   1.77"
    assert quoted_numbers_missing(changed, printed) == [f"'1.766' in {changed!r}"]
    assert quoted_numbers_missing("$ cloudsched simulate jiq --servers 77", printed) == []
    assert quoted_numbers_missing("1,189 migrations", printed) != []
    assert quoted_numbers_missing("9.99 M events/s", printed) == []
    assert quoted_numbers_missing("events, events/s 617,516, 2.2 M", "617,516, 1.86 M") == []


def test_examples_command_writes_the_shipped_files(tmp_path, capsys):
    from cloudsched.cli import main
    from cloudsched.data import example_files

    shipped = example_files()
    assert {"plugins/pod.py", "storm-cluster.yaml", "wordcount.yaml"} <= set(shipped)
    out = tmp_path / "ex"
    for _ in range(2):  # the second time finds them all there
        with pytest.raises(SystemExit) as done:
            main(["examples", "--out", str(out)])
        assert done.value.code in (0, None)
    for name, data in shipped.items():
        assert (out / name).read_bytes() == data
        assert (ROOT / "examples" / name).read_bytes() == data  # the checkout's links
    (out / "cluster.yaml").write_text("machines: []\n")
    with pytest.raises(SystemExit) as done:
        main(["examples", "--out", str(out)])
    assert done.value.code == 2 and "cluster.yaml" in capsys.readouterr().err
    assert (out / "cluster.yaml").read_text() == "machines: []\n"  # nothing overwritten
