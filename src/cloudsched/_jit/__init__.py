"""The one place that decides how numba kernels are compiled and where their cache lives.

:func:`kernel` compiles a module-level function in nopython mode and caches it on disk;
:func:`specialised` compiles a kernel built by a factory around compile-time constants (a
policy's hooks), keyed by a fingerprint the factory passes.

* **Nothing stale runs**: every cache key holds the hash of every source the kernel is
  compiled from (:mod:`cloudsched._jit.sources`).
* **Nobody else's cache**: the cache folder is the user's own, or none is used
  (:mod:`cloudsched._jit.cache`).
* **One compile**: processes that need a kernel at once compile it once
  (:mod:`cloudsched._jit.lock`); a helper compiles once and LLVM inlines it where it is
  called (:mod:`cloudsched._jit.helpers`).
* **Never in silence**: a compile that takes long says so (:mod:`cloudsched._jit.notice`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

from cloudsched._jit import notice
from cloudsched._jit.cache import SourceCache, private_folder, with_cache
from cloudsched._jit.helpers import as_helper, inlined_by_numba
from cloudsched._jit.lock import one_at_a_time
from cloudsched._jit.sources import source_fingerprint, source_modules

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["kernel", "private_folder", "source_fingerprint", "source_modules", "specialised"]

_OPTIONS = {"nogil": True}
#: numba's options for a function that only kernels call (no Python or C wrapper)
_NO_WRAPPER = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}

notice.install()


def _njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` (looked up at each call; its private ``_nrt`` option is untyped)."""
    return numba.njit(*args, **options)


def _cached(fn: Callable[..., Any], fingerprint: str | None, **options: Any) -> Any:
    dispatcher = _njit(cache=True, **options)(fn)
    dispatcher._cache = SourceCache(dispatcher.py_func, fingerprint, options)
    dispatcher.compile = one_at_a_time(dispatcher)
    return dispatcher


def _compiled(fn: Callable[..., Any], fingerprint: str | None, cache: bool, **options: Any) -> Any:
    compiled = None
    if cache:
        compiled = with_cache(lambda: _cached(fn, fingerprint, **options))
    return compiled if compiled is not None else _njit(**options)(fn)


def kernel(
    fn: F | None = None,
    *,
    nrt: bool = True,
    inline: bool = False,
    cache: bool = True,
    entry: bool = False,
    label: str | None = None,
) -> Any:
    """Compile ``fn`` in nopython mode with a private, source-keyed disk cache.

    Kernels hold no Python objects, do no I/O and keep no global state: they read and
    write the arrays they are given and advance the ``np.random.Generator`` passed in.
    ``entry=True``: Python calls it (it gets numba's Python wrapper; any other kernel is
    compiled without it, and a call from Python runs a twin compiled with it, made at the
    first such call); ``label`` names it in the line a long compile writes (default: its
    module and name).  ``inline=True``:
    LLVM inlines it where it is called (compiled once, :mod:`cloudsched._jit.helpers`).
    ``nrt=False`` compiles without numba's reference counting (the kernel allocates no
    array, and records of arrays pass through it at no cost); ``cache=False`` keeps it off
    the disk (a plug-in's hooks: the kernel built from them is cached).  Use as
    ``@kernel`` or ``@kernel(nrt=False)``.
    """

    def wrap(f: F) -> F:
        options: dict[str, Any] = dict(_OPTIONS)
        if not nrt:
            options["_nrt"] = False
        if inline:
            options["forceinline"] = True
        helper = {} if entry else _NO_WRAPPER

        def twin() -> Any:  # what Python's calls of a helper run (compiled at the first)
            compiled = _compiled(f, None, cache, **options)
            compiled._cloudsched_label = label or f"{f.__module__}.{f.__qualname__}"
            return as_helper(compiled, python=True, inline=False)

        compiled = _compiled(f, None, cache, **options, **helper)
        compiled = as_helper(compiled, python=entry, inline=inline, twin=twin)
        if entry:
            compiled._cloudsched_label = label or f"{f.__module__}.{f.__qualname__}"
        return cast(F, compiled)

    return wrap if fn is None else wrap(fn)


def specialised(fn: F, fingerprint: str, label: str, **options: Any) -> F:
    """Compile the closure ``fn`` (nopython) with a disk cache keyed by ``fingerprint``.

    ``fingerprint`` must change whenever any code ``fn`` calls changes beyond what
    :func:`source_fingerprint` of ``fn``'s module sees (a policy's hooks: the factory passes
    the fingerprint of their module); ``label`` names it in a long compile's line.
    ``options`` go to ``numba.njit`` (``boundscheck``): a kernel compiled with bounds
    checking inlines its helpers into its own code, so that their indexing is checked too.
    """
    compiled = _compiled(fn, fingerprint, True, **_OPTIONS, **options)
    compiled._cloudsched_label = label
    if options.get("boundscheck"):
        compile_ = compiled.compile

        def checked(sig: Any) -> Any:
            with inlined_by_numba():
                return compile_(sig)

        compiled.compile = checked
    return cast(F, compiled)
