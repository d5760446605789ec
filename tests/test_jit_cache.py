"""A numba cache that cannot be written falls back, never fails (issue: read-only installs)."""

import importlib
import warnings

import numba
import pytest


@pytest.fixture
def fresh_jit(monkeypatch):
    import cloudsched._jit as jit

    jit = importlib.reload(jit)
    yield jit
    monkeypatch.undo()
    importlib.reload(jit)


def _refusing(real, refuse_all):
    """An ``njit`` whose cached compiles fail as numba's do without a writable locator."""
    calls = {"n": 0}

    def njit(*args, **kw):
        if kw.get("cache"):
            calls["n"] += 1
            if refuse_all or calls["n"] == 1:
                raise RuntimeError("cannot cache function 'f': no locator available for file 'x'")
        return real(*args, **kw)

    return njit


@pytest.mark.parametrize("refuse_all", [False, True])
def test_kernel_compiles_when_no_cache_can_be_written(fresh_jit, monkeypatch, refuse_all):
    monkeypatch.setattr(numba, "njit", _refusing(numba.njit, refuse_all))
    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)

    def add_one(x):
        return x + 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = fresh_jit.kernel(add_one)
        g = fresh_jit.kernel(add_one)
    assert f(1) == 2 and g(41) == 42
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1  # one warning, however many kernels
    expected = "compiled at every start" if refuse_all else "caching compiled kernels in"
    assert expected in messages[0]


def test_other_compile_errors_are_not_hidden(fresh_jit, monkeypatch):
    def broken(*args, **kw):
        raise RuntimeError("something else")

    monkeypatch.setattr(numba, "njit", broken)
    with pytest.raises(RuntimeError, match="something else"):
        fresh_jit.kernel(lambda x: x)


CHILD = """
import numpy as np
from cloudsched.dispatch.engine import Engine
from cloudsched.dispatch.replication import RunSpec
eng = Engine(RunSpec("jiq-pod", 10, 2, 0.9, 2, end_tasks=100), np.random.default_rng(0))
eng.advance(10**6)
print(sum(eng._run.stats.cache_hits.values()), sum(eng._run.stats.cache_misses.values()))
"""


def test_a_policy_kernel_is_compiled_once_then_loaded_from_disk(tmp_path):
    """The specialised kernels (closures over a policy's hooks) hit numba's disk cache."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    def run() -> list[str]:
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                             env=env, check=True, timeout=600)  # fmt: skip
        return out.stdout.split()

    runs = [run(), run()]
    assert runs[0] == ["0", "1"]  # compiled
    assert runs[1] == ["1", "0"]  # loaded


def test_the_fingerprint_is_part_of_the_cache_key():
    import cloudsched._jit as jit

    def f(x):
        return x

    a, b = jit._FingerprintCache(f, "one"), jit._FingerprintCache(f, "two")
    codegen = type("Codegen", (), {"magic_tuple": lambda self: ("x",)})()
    assert a._index_key((), codegen) != b._index_key((), codegen)
    assert a._index_key((), codegen) == jit._FingerprintCache(f, "one")._index_key((), codegen)
