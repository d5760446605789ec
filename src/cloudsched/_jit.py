"""The one place that decides how numba kernels are compiled and where their cache lives.

:func:`kernel` compiles a module-level function in nopython mode and caches it on disk;
:func:`specialised` compiles a kernel built by a factory around compile-time constants (a
policy's hooks), keyed by a fingerprint the factory passes.

**Nothing stale runs.**  numba keys its disk cache on the kernel's own file only, so a kernel
whose helpers (inlined or called), records or constants live in another module would keep
running its old machine code after that module changed.  Here every cache key also holds
:func:`source_fingerprint`: a hash of the package version and of the source of every module
the kernel's module refers to, transitively (cloudsched's own modules, and a user's modules
outside the installed libraries, such as a plug-in and the files it imports).  Editing any
of them recompiles the kernel.

**Nobody else's cache.**  A cache entry is machine code that numba loads and runs, so the
folder that holds it must be the user's own: owned by this user and writable by nobody else.
numba picks the folder (next to the sources, ``NUMBA_CACHE_DIR``, or the user's cache
folder); when that folder is not private, or there is none, the cache moves to
``<tmp>/cloudsched-numba-<uid>``, created 0700 and used only while it is a directory owned by
this user with no access for others.  If even that fails (another user planted it, say),
kernels are compiled without a cache (slower start, same results), with one warning.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import site
import stat
import sys
import sysconfig
import tempfile
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, TypeVar, cast

import numba
from numba.core.caching import FunctionCache

from cloudsched._compile_lock import one_at_a_time

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["kernel", "private_folder", "source_fingerprint", "specialised"]

_state = {"cache": True, "warned": False}
_OPTIONS = {"nogil": True}
_FINGERPRINTS: dict[str, str] = {}
_CHECKED: dict[str, bool] = {}
_IMPORTS: dict[str, frozenset[tuple[str, str]]] = {}  # per source file, computed once a process


def _njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` (looked up at each call; its private ``_nrt`` option is untyped)."""
    return numba.njit(*args, **options)


def _warn(message: str) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(message, RuntimeWarning, stacklevel=3)


# --- what a kernel is compiled from ---------------------------------------------------------


def _library_paths() -> tuple[str, ...]:
    """Folders of the standard library and of installed packages (not a user's own code)."""
    paths = set(site.getsitepackages()) | {site.getusersitepackages()}
    paths |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.join(os.path.realpath(p), "") for p in paths if p)


def _tracked(module: ModuleType, libraries: tuple[str, ...]) -> bool:
    """Whether a module's source can change under a cached kernel: cloudsched's, or a user's."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return False
    name = module.__name__
    if name == "cloudsched" or name.startswith("cloudsched."):
        return True
    return not os.path.realpath(file).startswith(libraries)


def _statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Yield every statement in ``body``, nested ones included.

    Imports are statements: walking only statements, not expressions, finds them all at a
    tenth of ``ast.walk``'s cost.  (An except clause or a match case is yielded too.)
    """
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                stack.extend(reversed([n for n in inner if isinstance(n, ast.AST)]))


def _import_pairs(module: ModuleType) -> frozenset[tuple[str, str]]:
    """Return (module, name) for every ``from module import name`` ("" for ``import module``)."""
    file = cast(str, module.__file__)
    if file not in _IMPORTS:
        try:
            with open(file, "rb") as fh:
                tree = ast.parse(fh.read(), filename=file)
        except (OSError, SyntaxError, ValueError):
            return frozenset()
        package = (
            module.__name__ if file.endswith("__init__.py") else module.__name__.rpartition(".")[0]
        )
        pairs: set[tuple[str, str]] = set()
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                pairs.update((alias.name, "") for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                pairs.update((base, alias.name) for alias in node.names)
        _IMPORTS[file] = frozenset(pairs)
    return _IMPORTS[file]


def _imported(module: ModuleType) -> set[str]:
    """Names of the modules ``module``'s source imports (a constant imported by name counts)."""
    out: set[str] = set()
    for base, name in _import_pairs(module):
        sub = f"{base}.{name}"  # a submodule, else a name defined in ``base``
        out.add(sub if name and sub in sys.modules else base)
    return out


def _referenced(module: ModuleType) -> set[str]:
    """Names of the modules ``module`` imports, and that its globals are or were defined in."""
    out = _imported(module)
    for value in list(vars(module).values()):
        if isinstance(value, ModuleType):
            out.add(value.__name__)
            continue
        inner = getattr(value, "py_func", None)  # a numba dispatcher: its Python function
        try:
            owner = getattr(value if inner is None else inner, "__module__", None)
        except Exception:  # an object whose attribute lookup fails: refers to nothing
            continue
        if isinstance(owner, str):
            out.add(owner)
    return out


def source_modules(root: str) -> list[ModuleType]:
    """Return the modules ``root`` refers to, transitively, whose source could change.

    cloudsched's own modules and a user's (not the standard library or installed packages),
    ``root`` included, sorted by name.
    """
    libraries = _library_paths()
    seen: dict[str, ModuleType] = {}
    stack = [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        module = sys.modules.get(name)
        if module is None or not _tracked(module, libraries):
            continue
        seen[name] = module
        stack.extend(_referenced(module) - seen.keys())
    return [seen[k] for k in sorted(seen)]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cloudsched")
    except PackageNotFoundError:
        return "unknown"


def source_fingerprint(root: str) -> str:
    """Hash of cloudsched's and numba's versions and of every source :func:`source_modules` finds.

    Computed once per module and process (sources do not change under a running program).
    """
    if root not in _FINGERPRINTS:
        h = hashlib.sha256(f"cloudsched {_version()} numba {numba.__version__}".encode())
        for module in source_modules(root):
            h.update(b"\0" + module.__name__.encode() + b"\0")
            try:
                with open(cast(str, module.__file__), "rb") as fh:
                    h.update(fh.read())
            except OSError:
                h.update(b"<unreadable>")
        _FINGERPRINTS[root] = h.hexdigest()
    return _FINGERPRINTS[root]


# --- where the cache lives ------------------------------------------------------------------


def _private_dir(path: str) -> bool:
    """Whether ``path`` (or, if it does not exist yet, its nearest existing parent) is safe.

    Safe: owned by this user and writable by nobody else, and no folder above it writable
    by others without the sticky bit (as /tmp has), so nobody else can swap it.
    """
    path = os.path.realpath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    try:
        st = os.stat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
        above = os.path.dirname(path)
        while True:
            up = os.stat(above)
            if up.st_mode & 0o002 and not up.st_mode & stat.S_ISVTX:
                return False
            if os.path.dirname(above) == above:
                return True
            above = os.path.dirname(above)
    except OSError:
        return False


def private_folder(base: str | None = None) -> str:
    """Return ``<base>/cloudsched-numba-<uid>``, created 0700, after checking it is private.

    ``base`` defaults to the system's temporary folder.  Raises :class:`PermissionError`
    when the folder exists but is not a directory owned by this user with no access for
    group or others (a symlink, another user's folder, a folder opened to others).
    """
    folder = os.path.join(base or tempfile.gettempdir(), f"cloudsched-numba-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(
            f"{folder} is not a private folder of this user (owner "
            f"{st.st_uid}, mode {stat.filemode(st.st_mode)})"
        )
    return folder


class _SourceCache(FunctionCache):
    """numba's function cache whose key also holds the fingerprint of every source used."""

    def __init__(self, py_func: Callable[..., Any], fingerprint: str | None = None) -> None:
        super().__init__(py_func)
        self._fingerprint = fingerprint

    def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
        # numba's key leaves out NUMBA_OPT: code compiled at -O0 would run at every level
        level = int(numba.config.OPT)  # type: ignore[attr-defined]
        sources = f"{source_fingerprint(self._py_func.__module__)} O{level}"
        if self._fingerprint is None:
            sig_key, magic, own = super()._index_key(sig, codegen)
            return (sig_key, magic, (*own, sources))
        # a closure over compiled hooks: numba would pickle them (their identity changes at
        # every start), so the factory's fingerprint stands for them
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, codegen.magic_tuple(), (code, sources, self._fingerprint))


def _cannot_cache(exc: Exception) -> bool:
    return isinstance(exc, RuntimeError) and "cannot cache" in str(exc)


def _cache_path(dispatcher: Any) -> str:
    return str(dispatcher._cache._cache_path)


def _safe(dispatcher: Any) -> bool:
    path = _cache_path(dispatcher)
    if path not in _CHECKED:
        _CHECKED[path] = _private_dir(path)
    return _CHECKED[path]


def _with_cache(make: Callable[[], F]) -> F | None:
    """Run ``make`` (which sets up a disk cache) where the cache is private, or return None.

    First where numba puts it; if numba finds no writable place, or the place is not
    private, in :func:`private_folder`.  None: no private folder can hold a cache (the
    caller compiles without one).
    """
    if not _state["cache"]:
        return None
    try:
        compiled = make()
        if _safe(compiled):
            return compiled
        refused = f"the numba cache folder {_cache_path(compiled)} is not private to this user"
    except RuntimeError as exc:
        if not _cannot_cache(exc):
            raise
        refused = "no writable numba cache next to the package or in the home folder"
    try:
        folder = private_folder()
        numba.config.CACHE_DIR = folder  # type: ignore[attr-defined]  # read when located
        compiled = make()
        if not _safe(compiled):
            raise PermissionError(f"{_cache_path(compiled)} is not private")
        _warn(f"{refused}: caching compiled kernels in {folder}")
        return compiled
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and not _cannot_cache(exc):
            raise
        _state["cache"] = False
        _warn(
            f"{refused}, and no private folder for numba's cache ({exc}): kernels are "
            "compiled at every start"
        )
    return None


def _cached(fn: Callable[..., Any], fingerprint: str | None, **options: Any) -> Any:
    dispatcher = _njit(cache=True, **options)(fn)
    dispatcher._cache = _SourceCache(dispatcher.py_func, fingerprint)
    dispatcher.compile = one_at_a_time(dispatcher)
    return dispatcher


def kernel(
    fn: F | None = None, *, nrt: bool = True, inline: bool = False, cache: bool = True
) -> Any:
    """Compile ``fn`` in nopython mode with a private, source-keyed disk cache.

    Kernels hold no Python objects, do no I/O and keep no global state: they read and
    write the arrays they are given and advance the ``np.random.Generator`` passed in.
    ``nrt=False`` compiles without numba's reference counting (the kernel allocates no
    array, and records of arrays pass through it at no cost); ``inline=True`` inlines it
    into its callers (numba's ``inline="always"``); ``cache=False`` keeps it off the disk
    (a plug-in's hooks: the kernel built from them is cached).  Use as ``@kernel`` or
    ``@kernel(nrt=False)``.
    """

    def wrap(f: F) -> F:
        options: dict[str, Any] = dict(_OPTIONS)
        if not nrt:
            options["_nrt"] = False
        if inline:
            options["inline"] = "always"
        compiled = None
        if cache:
            compiled = _with_cache(lambda: cast(F, _cached(f, None, **options)))
        return compiled if compiled is not None else cast(F, _njit(**options)(f))

    return wrap if fn is None else wrap(fn)


def specialised(fn: F, fingerprint: str, **options: Any) -> F:
    """Compile the closure ``fn`` (nopython) with a disk cache keyed by ``fingerprint``.

    ``fingerprint`` must change whenever any code ``fn`` calls changes beyond what
    :func:`source_fingerprint` of ``fn``'s module sees (a policy's hooks: the factory passes
    the fingerprint of their module).  ``options`` go to ``numba.njit`` (``boundscheck``).
    """
    compiled = _with_cache(lambda: cast(F, _cached(fn, fingerprint, **_OPTIONS, **options)))
    return compiled if compiled is not None else cast(F, _njit(**_OPTIONS, **options)(fn))
