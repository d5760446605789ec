"""Up-front resource checks: refuse, with the estimate, work that cannot fit in memory.

The limit is a fraction of the memory the system reports as available
(``/proc/meminfo``'s ``MemAvailable``, or total physical memory elsewhere), overridable
with the environment variable ``CLOUDSCHED_MAX_MEMORY`` (bytes, or with a ``K``/``M``/``G``/
``T`` suffix).  A limit given that way is the whole process's: what it already holds (its
resident memory: the interpreter, numba, the data read so far) counts against it too.
Estimates are per-item costs measured on this code (for example about 180 bytes per
simulated server), so they catch the sizes that would die in ``MemoryError``, not the ones
that merely come close.
"""

from __future__ import annotations

import math
import os

from cloudsched.errors import ParameterError

__all__ = ["INT_LIMIT", "check_memory", "memory_limit", "parse_memory"]

#: Largest integer parameter accepted anywhere (the kernels count in int64).
INT_LIMIT = 2**62
#: Share of the available memory a single run may plan to use.
MEMORY_SHARE = 0.8
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _available() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 2**34


def parse_memory(raw: str, name: str = "CLOUDSCHED_MAX_MEMORY") -> int:
    """Bytes in ``raw`` (``8G``, ``512M``, ``1.5T``, ``123456``); errors name ``name``."""
    text = raw.strip().upper().removesuffix("B")
    unit = text[-1] if text and text[-1] in _UNITS else ""
    try:
        value = float(text[: len(text) - len(unit)]) * _UNITS[unit]
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise ParameterError(name, raw, "a positive number of bytes, optionally with K, M, G or T")
    return int(value)


def memory_limit() -> int:
    """Bytes a run may plan to use (``CLOUDSCHED_MAX_MEMORY`` or a share of what is free)."""
    raw = os.environ.get("CLOUDSCHED_MAX_MEMORY", "")
    if raw.strip():
        return parse_memory(raw)
    return int(MEMORY_SHARE * _available())


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"


def _resident() -> int:
    """Bytes this process holds now (Linux ``/proc/self/statm``; 0 where unknown)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def check_memory(name: str, value: object, need: float, what: str) -> None:
    """Raise :class:`ParameterError` on ``name`` if ``need`` bytes exceed the memory limit.

    Under a limit given in ``CLOUDSCHED_MAX_MEMORY`` the process's resident memory counts
    too (the default limit is a share of what is still free, which excludes it already).
    """
    limit = memory_limit()
    held = _resident() if os.environ.get("CLOUDSCHED_MAX_MEMORY", "").strip() else 0
    if need + held > limit:
        also = f" besides the {_human(held)} this process holds" if held else ""
        raise ParameterError(
            name,
            value,
            f"small enough to fit in memory: {what} needs about {_human(need)}"
            f"{also}, {_human(limit)} allowed (--max-memory or CLOUDSCHED_MAX_MEMORY changes "
            "the limit)",
        )
