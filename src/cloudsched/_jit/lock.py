"""Processes that need the same kernel at once compile it once: a lock file per cache key."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator
from typing import Any

from numba.core.compiler_lock import global_compiler_lock

__all__ = ["file_lock", "lock_path", "one_at_a_time"]


def one_at_a_time(dispatcher: Any) -> Callable[[Any], Any]:
    """``dispatcher.compile`` under a lock file per cache key, across processes.

    Processes that start together (a sweep's workers) would each compile the same kernel;
    under the lock one compiles and saves it, the others wait and load it (numba's
    ``compile`` looks in the disk cache first); other kernels and specialisations compile
    at the same time.  numba's compiler lock is taken first, so no thread holds a file lock
    while it waits for numba's.  No lock file: no lock.
    """
    compile_ = dispatcher.compile

    def compile(sig: Any) -> Any:
        with global_compiler_lock, file_lock(lock_path(dispatcher, sig)):
            return compile_(sig)

    return compile


def lock_path(dispatcher: Any, sig: Any) -> str | None:
    """Return the lock file of ``dispatcher``'s cache entry for ``sig``, beside its index."""
    try:
        key = dispatcher._cache._index_key(sig, dispatcher.targetctx.codegen())
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
        return f"{dispatcher._cache._cache_file._index_path}.{digest}.lock"
    except AttributeError:
        return None


@contextlib.contextmanager
def file_lock(path: str | None) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created 0600) while the block runs.

    Across processes and threads (``flock`` on a descriptor of its own); no file (None, or
    one that cannot be opened): no lock.
    """
    try:
        fd = -1 if path is None else os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        fd = -1
    if fd < 0:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
