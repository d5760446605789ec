"""The one place that decides how numba kernels are compiled.

Compiled kernels are cached on disk (``cache=True``).  Numba needs a writable place for the
cache (next to the sources, in the user's cache folder, or ``NUMBA_CACHE_DIR``); where there
is none (a read-only install and no writable home), the cache moves to a private folder
under the system's temporary directory, and if even that fails kernels are compiled
without a cache (slower start, same results), each time with one warning.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["kernel"]

_state = {"cache": True, "warned": False}


def _warn(message: str) -> None:
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _cannot_cache(exc: RuntimeError) -> bool:
    return "cannot cache" in str(exc)


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with on-disk caching (``cache=True``).

    Kernels hold no Python objects, do no I/O and keep no global state: they read and
    write the arrays they are given and advance the ``np.random.Generator`` passed in.
    """
    if _state["cache"]:
        try:
            return cast(F, numba.njit(cache=True, nogil=True)(fn))
        except RuntimeError as exc:
            if not _cannot_cache(exc):
                raise
        folder = os.path.join(tempfile.gettempdir(), f"cloudsched-numba-{os.getuid()}")
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            numba.config.CACHE_DIR = folder  # type: ignore[attr-defined]  # read when located
            compiled = numba.njit(cache=True, nogil=True)(fn)
            _warn(f"no writable numba cache next to the package or in the home folder: "
                  f"caching compiled kernels in {folder}")  # fmt: skip
            return cast(F, compiled)
        except (OSError, RuntimeError) as exc:
            if isinstance(exc, RuntimeError) and not _cannot_cache(exc):
                raise
            _state["cache"] = False
            _warn("no writable folder for numba's cache: kernels are compiled at every start")
    return cast(F, numba.njit(cache=False, nogil=True)(fn))
