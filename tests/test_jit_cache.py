"""The kernels' disk cache: falls back when it cannot be written (read-only installs), is keyed
on every source, and one process compiles what several need at once."""

import fcntl
import importlib
import os
import subprocess
import sys
import time
import warnings

import numba
import pytest


@pytest.fixture
def fresh_jit(monkeypatch):
    """The kernel module with its cache state as at the start (no warning given yet)."""
    import cloudsched._jit as jit
    import cloudsched._jit.cache as cache

    importlib.reload(cache)
    jit = importlib.reload(jit)
    yield jit
    monkeypatch.undo()
    importlib.reload(cache)
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
        f = fresh_jit.kernel(add_one, entry=True)
        g = fresh_jit.kernel(add_one, entry=True)
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
from cloudsched.dispatch.engines.servers.engine import ServersRun
from cloudsched.dispatch.engines.replication import RunSpec
eng = ServersRun(RunSpec("jiq-pod", 10, 2, 0.9, 2, end_tasks=100), np.random.default_rng(0))
eng.advance(10**6)
print(sum(eng._run.stats.cache_hits.values()), sum(eng._run.stats.cache_misses.values()))
"""


# a module of its own: numba caches only functions defined in files
TINY = """
from cloudsched._jit import kernel, specialised

def build(hook, fingerprint):
    def run(x):
        return hook(x) + 1
    return specialised(run, fingerprint, "tiny")

@kernel(nrt=False, inline=True, cache=False)
def double(x):
    return 2 * x

run = build(double, "tiny-double")
"""
TINY_CHILD = """
from tiny_kernel import run
print(run(20), sum(run.stats.cache_hits.values()), sum(run.stats.cache_misses.values()))
"""


def _twice(tmp_path, child: str) -> list[list[str]]:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }

    def run() -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", child],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=600,
        )
        return out.stdout.split()

    return [run(), run()]


def test_a_specialised_kernel_is_compiled_once_then_loaded_from_disk(tmp_path):
    """A closure over a compiled hook (what a policy's kernel is) hits numba's disk cache:
    shown on the smallest such closure."""
    (tmp_path / "tiny_kernel.py").write_text(TINY)
    first, second = _twice(tmp_path, TINY_CHILD)
    assert first == ["41", "0", "1"]  # compiled
    assert second == ["41", "1", "0"]  # loaded


@pytest.mark.slow
def test_a_policy_kernel_is_compiled_once_then_loaded_from_disk(tmp_path):
    """The real specialised kernel of a policy (jiq-pod) hits the disk cache too."""
    first, second = _twice(tmp_path, CHILD)
    assert first == ["0", "1"]  # compiled
    assert second == ["1", "0"]  # loaded


def test_the_fingerprint_is_part_of_the_cache_key():
    import cloudsched._jit.cache as jit

    def f(x):
        return x

    a, b = jit.SourceCache(f, "one"), jit.SourceCache(f, "two")
    codegen = type("Codegen", (), {"magic_tuple": lambda self: ("x",)})()
    assert a._index_key((), codegen) != b._index_key((), codegen)
    assert a._index_key((), codegen) == jit.SourceCache(f, "one")._index_key((), codegen)


# --- nothing stale runs: the key covers every source a kernel is compiled from ------------

PACKAGE = {
    "__init__.py": "",
    "consts.py": "STEP = 1\n",
    "helper.py": (
        "from cloudsched._jit import kernel\n"
        "from tinypkg.consts import STEP\n\n"
        "@kernel(inline=True)\n"
        "def bump(x):\n"
        "    return x + STEP\n"
    ),
    "main.py": (
        "from cloudsched._jit import kernel\n"
        "from tinypkg.helper import bump\n\n"
        "@kernel(entry=True)\n"
        "def run(x):\n"
        "    return bump(x) * 10\n"
    ),
}
RUN = """
from tinypkg.main import run
print(run(1), sum(run.stats.cache_hits.values()), sum(run.stats.cache_misses.values()))
"""


def _tiny(tmp_path, files):
    import os
    import subprocess
    import sys

    pkg = tmp_path / "src" / "tinypkg"
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (pkg / name).write_text(text)
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(tmp_path / "src"),
    }
    out = subprocess.run(
        [sys.executable, "-c", RUN],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    return out.stdout.split()


def test_editing_a_helper_module_recompiles_the_kernel(tmp_path):
    """numba alone keys the cache on main.py: edits of helper.py or consts.py ran old code."""
    assert _tiny(tmp_path, PACKAGE) == ["20", "0", "1"]  # compiled
    assert _tiny(tmp_path, PACKAGE) == ["20", "1", "0"]  # loaded from the disk cache
    edited = {**PACKAGE, "helper.py": PACKAGE["helper.py"].replace("x + STEP", "x + 2 * STEP")}
    assert _tiny(tmp_path, edited) == ["30", "0", "1"]  # the helper's new code, compiled
    constant = {**edited, "consts.py": "STEP = 5\n"}
    assert _tiny(tmp_path, constant) == ["110", "0", "1"]  # a constant imported by name
    assert _tiny(tmp_path, constant) == ["110", "1", "0"]


def test_the_placement_and_dispatch_kernels_are_keyed_on_their_helpers():
    import cloudsched.dispatch.builtin_policies
    import cloudsched.dispatch.engines.servers.kernel
    import cloudsched.placement._kernel  # noqa: F401
    from cloudsched._jit import source_modules

    def names(root):
        return {name for name, _ in source_modules(root)}

    placement = names("cloudsched.placement._kernel")
    assert {
        "cloudsched.placement._kernel_slots",
        "cloudsched.placement._kernel_propose",
        "cloudsched.placement.state",
        "cloudsched.placement.policies",
        "cloudsched._jit",
    } <= placement
    assert {"cloudsched.dispatch.view", "cloudsched.dispatch.engines.records"} <= names(
        "cloudsched.dispatch.engines.servers.kernel"
    )
    # a built-in policy's kernel also follows its hooks' module
    assert "cloudsched.dispatch.builtin_policies" in names("cloudsched.dispatch.builtin_policies")
    # installed libraries are versioned, not hashed
    assert not any(n.startswith(("numpy", "numba")) for n in placement)


KEYS = """
import sys
if sys.argv[1] == "all":  # everything the package has, imported first
    import cloudsched.cli, cloudsched.dispatch, cloudsched.placement, cloudsched.experiments
    import cloudsched.dispatch.engines.servers.kernel, cloudsched.experiments.checklb
    import cloudsched.warmup, cloudsched.lab.run
import importlib
from cloudsched._jit.sources import source_fingerprint
for name in sys.argv[2:]:
    importlib.import_module(name)
    print(name, source_fingerprint(name))
"""


def test_a_kernels_key_does_not_depend_on_what_else_was_imported():
    """Once a kernel's key followed only the modules already imported (and the submodules a
    package had gained), so one kernel got two keys in two processes and compiled twice."""
    roots = [
        "cloudsched.dispatch.engines.delay.kernel",
        "cloudsched.dispatch.engines.counts.kernel",
        "cloudsched.dispatch.engines.servers.kernel",
        "cloudsched.placement._kernel",
        "cloudsched.experiments.checklb_ewma",
    ]

    def keys(first):
        out = subprocess.run(
            [sys.executable, "-c", KEYS, first, *roots],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        return out.stdout

    alone = keys("alone")
    assert alone.count("\n") == len(roots)
    assert keys("all") == alone


def _imports_by_full_walk(module):
    """The slow reference: every import node anywhere in the tree (``ast.walk``)."""
    import ast

    with open(module.__file__, "rb") as fh:
        tree = ast.parse(fh.read())
    package = (
        module.__name__
        if module.__file__.endswith("__init__.py")
        else module.__name__.rpartition(".")[0]
    )
    pairs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            pairs.update((a.name, "") for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            pairs.update((base, a.name) for a in node.names)
    return pairs


def test_the_statement_walk_finds_every_import_a_full_walk_finds(tmp_path):
    import sys

    import cloudsched.cli
    import cloudsched.dispatch
    import cloudsched.placement  # noqa: F401
    from cloudsched._jit import sources

    nested = tmp_path / "nested_imports.py"
    nested.write_text(
        "import a\n"
        "try:\n    import b\nexcept ImportError:\n    from c import d\nelse:\n    import e\n"
        "finally:\n    import f\n"
        "with open('x') as fh:\n    import g\n"
        "if True:\n    import h\nelif False:\n    import i\nelse:\n    import j\n"
        "def fn():\n    import k\n    class Inner:\n        from l import m\n"
        "async def co():\n    async with x:\n        import n\n"
        "while True:\n    import o\nfor _ in ():\n    pass\nelse:\n    import p\n"
        "match 1:\n    case 1:\n        import q\n"
    )
    fake = type(sys)("nested_imports")  # parsed only, never run
    fake.__file__ = str(nested)
    found = sources.import_pairs(fake.__name__, fake.__file__)
    assert {name for name, _ in found} == set("abcefghijklnopq"), found
    assert found == _imports_by_full_walk(fake)
    mods = [
        m
        for n, m in sorted(sys.modules.items())
        if n.startswith("cloudsched") and getattr(m, "__file__", "").endswith(".py")
    ]
    assert len(mods) > 50
    for module in mods:
        found = sources.import_pairs(module.__name__, module.__file__)
        assert found == _imports_by_full_walk(module), module.__name__


def test_the_package_version_is_part_of_the_key(monkeypatch):
    import cloudsched._jit.sources as jit

    jit._FINGERPRINTS.clear()
    a = jit.source_fingerprint("cloudsched.placement._kernel_slots")
    jit._FINGERPRINTS.clear()
    monkeypatch.setattr(jit, "_version", lambda: "9.9.9")
    b = jit.source_fingerprint("cloudsched.placement._kernel_slots")
    jit._FINGERPRINTS.clear()
    assert a != b


def test_the_optimisation_level_is_part_of_the_key(monkeypatch):
    """numba's own key leaves NUMBA_OPT out: a kernel compiled at -O0 (50 times slower here)
    would be loaded at the default level."""
    from numba import types

    from cloudsched.placement._kernel import fill

    def key(level):
        monkeypatch.setattr(numba.config, "OPT", level)
        return fill._cache._index_key((types.int64,), fill.targetctx.codegen())

    assert key(0) != key(3) and key(3) == key(3)


# --- nobody else's cache ----------------------------------------------------------------


def test_the_fallback_folder_is_created_private(tmp_path):
    import os
    import stat

    from cloudsched._jit import private_folder

    folder = private_folder(str(tmp_path))
    st = os.lstat(folder)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
    assert private_folder(str(tmp_path)) == folder  # reused while private


@pytest.mark.parametrize("planted", ["open", "symlink", "other-user", "file"])
def test_a_fallback_folder_planted_by_someone_else_is_refused(tmp_path, planted):
    import os

    from cloudsched._jit import private_folder

    folder = tmp_path / f"cloudsched-numba-{os.getuid()}"
    if planted == "open":
        folder.mkdir()
        folder.chmod(0o777)
    elif planted == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    elif planted == "file":
        folder.write_text("")
    else:
        if os.getuid() != 0:
            pytest.skip("only root can give a folder to another user")
        folder.mkdir(mode=0o700)
        os.chown(folder, 65534, 65534)
    with pytest.raises(PermissionError, match="not a private folder"):
        private_folder(str(tmp_path))


def test_a_cache_folder_others_can_write_is_not_used(fresh_jit, tmp_path, monkeypatch):
    """NUMBA_CACHE_DIR (or any folder numba picks) open to others: the private one instead."""
    import os
    import tempfile

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    def add_two(x):
        return x + 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = fresh_jit.kernel(add_two, entry=True)
    assert f(1) == 3
    assert "is not private to this user" in str(caught[0].message)
    private = tmp_path / "tmp" / f"cloudsched-numba-{os.getuid()}"
    assert str(f._cache._cache_path).startswith(str(private))


GREEDY = """
import numpy as np
from cloudsched.placement import Cluster, JobType, chain, simulate_placement
cluster = Cluster(np.array([2, 2]), cpu=[100.0, 100.0])
jobs = [JobType("pair", 0.5, 1.0, chain(2).with_demands(60.0, 0.0))]
res = simulate_placement("greedy", cluster, jobs, horizon=200.0, rng=1, compare_bound=False)
print(round(res.mean_partition_cost, 6))
"""


@pytest.mark.slow
def test_a_planted_bug_in_a_real_kernel_helper_is_compiled_in(tmp_path):
    """The issue's case, on the package itself: greedy's CPU check lives in _kernel_slots.py.

    A copy of the package runs greedy on machines that hold one 60% executor each (every
    pair is cut: cost 1 per job); planting "every machine fits" in the helper must show up
    (pairs on one machine, cost 0) although the kernel's own file is unchanged.
    """
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import cloudsched

    src = tmp_path / "src"
    shutil.copytree(
        Path(cloudsched.__file__).parent,
        src / "cloudsched",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(src)}

    def run():
        out = subprocess.run(
            [sys.executable, "-c", GREEDY],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=900,
            cwd=tmp_path,
        )
        return float(out.stdout.split()[-1])

    assert run() == 1.0
    helper = src / "cloudsched" / "placement" / "_kernel_slots.py"
    text = helper.read_text()
    check = "    if mo.par[S.P_RES] == 0.0:\n        return True\n    return res[0, m]"
    planted = text.replace(check, check.replace("mo.par[S.P_RES] == 0.0", "True"))
    assert planted != text
    helper.write_text(planted)
    assert run() == 0.0


# --- processes that need one kernel at once compile it once ---------------------------------


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
        numba.config.reload_config()
        import tiny_kernel
        from numba import types

        from cloudsched._jit.lock import lock_path

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
                [sys.executable, "-c", TINY_CHILD], stdout=subprocess.PIPE, text=True, env=env
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


def test_an_overload_is_saved_under_the_index_lock_data_first(tmp_path, monkeypatch):
    """Two processes saving two overloads of one helper at once must not lose one, nor
    leave a key naming the other's code: the index is read and written under its lock,
    and the data file exists before the index names it."""
    import pickle

    from cloudsched._jit.cache import SourceCache

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))

    def helper(x):
        return x

    cache = SourceCache(helper)
    index = cache._cache_file
    lock = f"{index._index_path}.lock"
    real_save_index = type(index)._save_index
    seen = []

    def checked_save_index(self, overloads):
        fd = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # another process could not take it now
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        for name in overloads.values():  # every entry's data is already written
            assert os.path.exists(os.path.join(self._cache_path, name))
        seen.append(dict(overloads))
        real_save_index(self, overloads)

    monkeypatch.setattr(type(index), "_save_index", checked_save_index)
    index.save("key-a", ("code a",))
    other = SourceCache(helper)._cache_file  # a second process: its own view of the index
    other.save("key-b", ("code b",))
    assert len(seen) == 2
    assert index.load("key-a") == ("code a",) and index.load("key-b") == ("code b",)
    with open(index._index_path, "rb") as fh:
        pickle.load(fh)
        _, overloads = pickle.loads(fh.read())
    assert sorted(overloads) == ["key-a", "key-b"] and len(set(overloads.values())) == 2


TWIN = """
from cloudsched._jit import kernel

@kernel(inline=True)
def step(x):
    return x + 1

@kernel(entry=True)
def run(x):
    return step(x) * 2
"""
TWIN_CHILD = """
from twin_kernel import run, step
print(run(20), step(20), step(2.5))
"""


def test_a_helper_called_from_python_runs_its_twin_both_compiled_and_cached(tmp_path):
    """A helper has no Python wrapper (numba would crash the interpreter calling it from
    Python): a call from Python runs a twin compiled with one.  The two never share a
    cache entry, so neither loads the other's code."""
    (tmp_path / "twin_kernel.py").write_text(TWIN)
    first, second = _twice(tmp_path, TWIN_CHILD)
    assert first == second == ["42", "21", "3.5"]
    from cloudsched._jit.cache import SourceCache

    def f(x):
        return x

    codegen = type("Codegen", (), {"magic_tuple": lambda self: ("x",)})()
    helper = SourceCache(f, None, {"no_cpython_wrapper": True, "forceinline": True})
    twin = SourceCache(f, None, {"forceinline": True})
    assert helper._index_key((), codegen) != twin._index_key((), codegen)


_LITERALS = r"""
import gc, json
from numba.core import types
from numba.core.dispatcher import Dispatcher
from cloudsched.dispatch import simulate
from cloudsched.placement import JobType, chain, parse_cluster, simulate_placement

jobs = [JobType("chain", 1.0, 1.0, chain(3))]
simulate_placement("dgp", parse_cluster("3x3"), jobs, horizon=5.0, rng=0, compare_bound=False)
simulate("pod", servers=20, load=0.5, tasks=500, rng=0)
seen, literal = 0, []
for obj in gc.get_objects():
    if isinstance(obj, Dispatcher) and obj.py_func.__module__.startswith("cloudsched"):
        for sig in obj.signatures:
            seen += 1
            if any(isinstance(a, types.Literal) for a in sig):
                literal.append(f"{obj.py_func.__qualname__}{sig}")
print(json.dumps([seen, literal]))
"""


@pytest.mark.slow  # a cold compile of dgp's and pod's kernels: about 25 s
def test_no_kernel_or_helper_is_compiled_for_a_literal_argument(tmp_path):
    """numba types a constant argument (``0``, ``True``) as a literal type of its own, so a
    helper called with ``True`` in one place and ``False`` in another compiled twice
    (placement's ``log_q``: about a second of every cold run).  Helpers type their
    arguments plainly (cloudsched._jit.helpers): compiled from an empty cache (a helper
    loaded with its kernel is never typed on its own), a placement run and a dispatch run
    leave no signature of any of cloudsched's kernels or helpers with a literal type."""
    import json

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _LITERALS], env=env, capture_output=True, text=True, check=True
    )
    seen, literal = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen > 50  # the helpers were compiled here, each typed (69 when written)
    assert not literal, literal
