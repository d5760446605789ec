"""The one place that decides how numba kernels are compiled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["kernel"]


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode with on-disk caching (``cache=True``).

    Kernels hold no Python objects, do no I/O and keep no global state: they read and
    write the arrays they are given and advance the ``np.random.Generator`` passed in.
    """
    return cast(F, numba.njit(cache=True, nogil=True)(fn))
