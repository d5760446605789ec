"""Where compiled kernels are cached: a folder private to the user, keyed on every source.

A cache entry is machine code that numba loads and runs, so the folder that holds it must be
the user's own: owned by this user and writable by nobody else.  numba picks the folder (next
to the sources, ``NUMBA_CACHE_DIR``, or the user's cache folder); when that folder is not
private, or there is none, the cache moves to ``<tmp>/cloudsched-numba-<uid>``, created 0700
and used only while it is a directory owned by this user with no access for others.  If even
that fails (another user planted it, say), kernels are compiled without a cache (slower
start, same results), with one warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import stat
import tempfile
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numba
from numba.core.caching import FunctionCache, IndexDataCacheFile

from cloudsched._jit.lock import file_lock
from cloudsched._jit.sources import source_fingerprint

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["SourceCache", "cache_folder", "private_folder", "with_cache"]

_state = {"cache": True, "warned": False}
_CHECKED: dict[str, bool] = {}


def _warn(message: str) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(message, RuntimeWarning, stacklevel=4)


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


class _LockedIndex(IndexDataCacheFile):
    """numba's index of a function's cached overloads, saved under a lock, data first.

    numba saves an entry by reading the function's index, adding the key and writing it
    back, then writing the data file: two processes that save two overloads of one
    function at once (a helper called with the records of two engines) could each keep
    only their own key, or leave a key naming the other's code.  Here one process saves
    at a time, and the data is on disk before the index names it.
    """

    def save(self, key: Any, data: Any) -> None:
        with file_lock(f"{self._index_path}.lock"):
            overloads = self._load_index()
            name = overloads.get(key)
            if name is None:
                taken = set(overloads.values())
                name = next(n for i in itertools.count(1) if (n := self._data_name(i)) not in taken)
            self._save_data(name, data)
            overloads[key] = name
            self._save_index(overloads)


class SourceCache(FunctionCache):
    """numba's function cache whose key also holds the fingerprint of every source used."""

    def __init__(
        self,
        py_func: Callable[..., Any],
        fingerprint: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(py_func)
        self._fingerprint = fingerprint
        # numba's key leaves out the options: a helper compiled without the Python wrapper
        # and its twin with it, from one function, would share a key
        self._options = repr(sorted((options or {}).items()))
        self._cache_file.__class__ = _LockedIndex

    def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
        # numba's key leaves out NUMBA_OPT: code compiled at -O0 would run at every level
        level = int(numba.config.OPT)  # type: ignore[attr-defined]
        module = self._py_func.__module__
        sources = f"{source_fingerprint(module)} O{level} {self._options}"
        if self._fingerprint is None:
            sig_key, magic, own = super()._index_key(sig, codegen)
            return (sig_key, magic, (*own, sources))
        # a closure over compiled hooks: numba would pickle them (their identity changes at
        # every start), so the factory's fingerprint stands for them
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, codegen.magic_tuple(), (code, sources, self._fingerprint))


def _cannot_cache(exc: Exception) -> bool:
    return isinstance(exc, RuntimeError) and "cannot cache" in str(exc)


def cache_folder(dispatcher: Any) -> str:
    """Return the folder that holds ``dispatcher``'s cache entries."""
    return str(dispatcher._cache._cache_path)


def _safe(dispatcher: Any) -> bool:
    path = cache_folder(dispatcher)
    if path not in _CHECKED:
        _CHECKED[path] = _private_dir(path)
    return _CHECKED[path]


def with_cache(make: Callable[[], F]) -> F | None:
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
        refused = f"the numba cache folder {cache_folder(compiled)} is not private to this user"
    except RuntimeError as exc:
        if not _cannot_cache(exc):
            raise
        refused = "no writable numba cache next to the package or in the home folder"
    try:
        folder = private_folder()
        numba.config.CACHE_DIR = folder  # type: ignore[attr-defined]  # read when located
        compiled = make()
        if not _safe(compiled):
            raise PermissionError(f"{cache_folder(compiled)} is not private")
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
