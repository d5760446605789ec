"""The one place that decides how numba kernels are compiled.

:func:`kernel` compiles a module-level function in nopython mode and caches it on disk
(``cache=True``).  :func:`specialised` compiles a kernel built by a factory around
compile-time constants (a policy's hooks): numba's own cache would key such a closure by the
identity of the functions it holds, which changes at every start, so it gets a cache keyed by
a stable fingerprint instead (the factory passes one that changes whenever the code the
kernel is made of changes).

Numba needs a writable place for the cache (next to the sources, in the user's cache folder,
or ``NUMBA_CACHE_DIR``); where there is none (a read-only install and no writable home), the
cache moves to a private folder under the system's temporary directory, and if even that
fails kernels are compiled without a cache (slower start, same results), each time with one
warning.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
from numba.core.caching import FunctionCache

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["kernel", "specialised"]

_state = {"cache": True, "warned": False}


def _njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` (looked up at each call; its private ``_nrt`` option is untyped)."""
    return numba.njit(*args, **options)
_OPTIONS = {"nogil": True}


def _warn(message: str) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _cannot_cache(exc: RuntimeError) -> bool:
    return "cannot cache" in str(exc)


def _with_cache(make: Callable[[], F]) -> F | None:
    """Run ``make`` (which sets up a disk cache), falling back to a temporary folder.

    Returns None when no folder can hold a cache (the caller compiles without one).
    """
    if not _state["cache"]:
        return None
    try:
        return make()
    except RuntimeError as exc:
        if not _cannot_cache(exc):
            raise
    folder = os.path.join(tempfile.gettempdir(), f"cloudsched-numba-{os.getuid()}")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        numba.config.CACHE_DIR = folder  # type: ignore[attr-defined]  # read when located
        compiled = make()
        _warn(f"no writable numba cache next to the package or in the home folder: "
              f"caching compiled kernels in {folder}")  # fmt: skip
        return compiled
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and not _cannot_cache(exc):
            raise
        _state["cache"] = False
        _warn("no writable folder for numba's cache: kernels are compiled at every start")
    return None


def kernel(
    fn: F | None = None, *, nrt: bool = True, inline: bool = False, cache: bool = True
) -> Any:
    """Compile ``fn`` in nopython mode with on-disk caching (``cache=True``).

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
            compiled = _with_cache(lambda: cast(F, _njit(cache=True, **options)(f)))
        return compiled if compiled is not None else cast(F, _njit(**options)(f))

    return wrap if fn is None else wrap(fn)


class _FingerprintCache(FunctionCache):
    """numba's function cache, with the closure part of the index key replaced by a string."""

    def __init__(self, py_func: Callable[..., Any], fingerprint: str) -> None:
        super().__init__(py_func)
        self._fingerprint = fingerprint

    def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, codegen.magic_tuple(), (code, self._fingerprint))


def specialised(fn: F, fingerprint: str, **options: Any) -> F:
    """Compile the closure ``fn`` (nopython) with a disk cache keyed by ``fingerprint``.

    ``fingerprint`` must change whenever any code ``fn`` calls changes (numba only checks
    the file ``fn`` is defined in).  ``options`` go to ``numba.njit`` (``boundscheck``).
    """

    def make() -> F:
        dispatcher = _njit(**_OPTIONS, **options)(fn)
        dispatcher._cache = _FingerprintCache(dispatcher.py_func, fingerprint)
        return cast(F, dispatcher)

    compiled = _with_cache(make)
    return compiled if compiled is not None else cast(F, _njit(**_OPTIONS, **options)(fn))
