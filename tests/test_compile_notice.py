"""A kernel that compiles says so: one line on stderr, the time it took before, the bars.

Shown on a tiny kernel of its own module (numba caches only functions defined in files),
compiled in a fresh process and cache; the slow tier runs the same on a real command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

TINY = """
from cloudsched._jit import kernel

@kernel(inline=True)
def _step(x):
    return x + 1

@kernel(entry=True, label="the tiny kernel")
def run(x):
    return _step(x) * 2
"""
CHILD = """
import sys
from tiny_notice import run
print(run(20))
"""


def _run(tmp_path, notice="0", child=CHILD):
    (tmp_path / "tiny_notice.py").write_text(TINY)
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "CLOUDSCHED_COMPILE_NOTICE": notice,
    }
    out = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["42"]
    return out.stderr


def _times(tmp_path):
    found = list((tmp_path / "cache").rglob("compile-times.json"))
    assert len(found) == 1, found
    return found[0]


def test_a_compile_says_what_compiles_once_and_how_long_it_took_last_time(tmp_path):
    first = _run(tmp_path)
    assert first.splitlines() == [
        "compiling the tiny kernel, once for this machine and version of cloudsched "
        "(`cloudsched warmup` compiles ahead of use)"
    ]
    took = json.loads(_times(tmp_path).read_text())["the tiny kernel"]
    assert took > 0
    assert _run(tmp_path) == ""  # loaded from the cache: nothing to say
    for code in (tmp_path / "cache").rglob("*.nb[ic]"):  # the cache cleared, its times kept
        code.unlink()
    third = _run(tmp_path)
    assert "compiling the tiny kernel" in third and "(last time here)" in third, third
    expected = f"{took:.1f} s" if took < 9.5 else f"{took:.0f} s"
    assert f"about {expected} (last time here)" in third


def test_off_says_nothing_and_a_broken_times_file_is_ignored(tmp_path):
    assert _run(tmp_path, notice="off") == ""
    path = _times(tmp_path)  # recorded even when nothing is said
    path.write_text("{not json")
    for code in (tmp_path / "cache").rglob("*.nb[ic]"):
        code.unlink()
    assert "compiling the tiny kernel" in _run(tmp_path)
    assert "the tiny kernel" in json.loads(path.read_text())  # rewritten whole


def test_a_watcher_sees_the_compile_start_and_end_and_prints_the_line(tmp_path):
    child = """
from cloudsched.progress import watch_compiles
seen = []
class Watch:
    def compiling(self, c):
        seen.append(None if c is None else c.label)
    def say(self, line):
        seen.append("said")
        return True
with watch_compiles(Watch()):
    from tiny_notice import run
    print(run(20))
import sys
print(seen, file=sys.stderr)
"""
    err = _run(tmp_path, child=child)
    assert err.strip() == "['the tiny kernel', 'said', None]"  # the line went to the watcher


def test_the_delay_and_the_line():
    from cloudsched._jit import notice
    from cloudsched.progress import Compile

    for raw, want in (("off", None), ("", 0.5), ("2", 2.0), ("0", 0.0), ("x", 0.5), ("-1", 0.5)):
        os.environ["CLOUDSCHED_COMPILE_NOTICE"] = raw
        try:
            assert notice.delay() == want, raw
        finally:
            os.environ["CLOUDSCHED_COMPILE_NOTICE"] = "off"
    line = notice.notice_line(Compile("pod's simulator (Markov clock)", 0.0, 12.34, "typical"))
    assert line == (
        "compiling pod's simulator (Markov clock), once for this machine and version of "
        "cloudsched: about 12 s (typical) (`cloudsched warmup` compiles ahead of use)"
    )


def test_the_plain_progress_line_names_a_compile_in_progress(monkeypatch):
    import time

    from cloudsched.cli.bars import LazyProgress
    from cloudsched.progress import Compile

    bar = LazyProgress("simulate", every=3600)
    try:
        bar(0.25, "precision 3%")
        assert "compiling" not in bar.line()
        bar.compiling(Compile("pod's start", time.perf_counter(), None, "typical"))
        assert "(compiling pod's start for 0 s)" in bar.line()
        assert bar.say("a line") is False  # no bar showing: the caller writes it
        bar.compiling(None)
        assert "compiling" not in bar.line()
    finally:
        bar.close()


@pytest.mark.slow
def test_a_cold_command_names_its_kernels_and_a_warm_one_is_silent(tmp_path):
    """The real thing: `simulate pod` from an empty cache, then again."""
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "CLOUDSCHED_COMPILE_NOTICE": "0.5",
    }
    argv = [sys.executable, "-m", "cloudsched", "simulate", "pod", "--servers", "10"]
    argv += ["--load", "0.5", "--tasks", "2000", "--seed", "1"]
    cold = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    assert cold.returncode == 0, cold.stderr
    lines = [x for x in cold.stderr.splitlines() if x.startswith("compiling ")]
    assert [x.split(",")[0] for x in lines] == [
        "compiling pod's start",
        "compiling pod's simulator (Markov clock)",
    ]
    warm = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    assert warm.returncode == 0 and "compiling" not in warm.stderr

    def results(out):  # the run's numbers (its speed aside)
        return [x for x in out.splitlines() if "events/s" not in x]

    assert results(warm.stdout) == results(cold.stdout)  # the same run, compiled or not
