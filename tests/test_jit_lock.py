"""Processes that need the same kernel at once compile it once: the others load it."""

import fcntl
import os
import subprocess
import sys
import time

TINY = """
from cloudsched._jit import kernel, specialised

def build(hook, fingerprint):
    def run(x):
        return hook(x) + 1
    return specialised(run, fingerprint)

@kernel(nrt=False, inline=True, cache=False)
def double(x):
    return 2 * x

run = build(double, "tiny-double")
"""
CHILD = """
from tiny_kernel import run
print(run(20), sum(run.stats.cache_hits.values()), sum(run.stats.cache_misses.values()))
"""


def _waiters(path: str) -> int:
    """Processes blocked on a lock of ``path``'s file (Linux's /proc/locks marks them ``->``)."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks") as fh:
        return sum(1 for line in fh if "->" in line and dev in line.split())


def test_two_processes_that_start_together_compile_a_kernel_once(tmp_path):
    """Both children wait on the kernel's lock (held here); once it is released one compiles
    and saves, the other loads: one cache miss in all, where each would compile without it."""
    (tmp_path / "tiny_kernel.py").write_text(TINY)
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    sys.path.insert(0, str(tmp_path))
    old = os.environ.get("NUMBA_CACHE_DIR")
    try:
        os.environ["NUMBA_CACHE_DIR"] = env["NUMBA_CACHE_DIR"]
        import numba

        numba.config.reload_config()
        import tiny_kernel
        from numba import types

        from cloudsched._compile_lock import lock_path

        path = lock_path(tiny_kernel.run, (types.int64,))
        other = lock_path(tiny_kernel.run, (types.float64,))
        assert path is not None and other is not None and other != path
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tiny_kernel", None)
        if old is None:
            os.environ.pop("NUMBA_CACHE_DIR")
        else:
            os.environ["NUMBA_CACHE_DIR"] = old
        numba.config.reload_config()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    children = []
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env
            )
            for _ in range(2)
        ]
        deadline = time.monotonic() + 300  # a guard against a hang, not a measurement
        while _waiters(path) < 2:
            assert all(c.poll() is None for c in children), "a child ran without the lock"
            assert time.monotonic() < deadline, "the children never waited on the lock"
            time.sleep(0.05)
    finally:
        os.close(fd)
    outs = [c.communicate(timeout=600)[0].split() for c in children]
    assert all(c.returncode == 0 for c in children)
    assert sorted(outs) == [["41", "0", "1"], ["41", "1", "0"]]  # one compiled, one loaded
