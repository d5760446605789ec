"""One shape for every progress callback: ``progress(fraction, status)``.

Every long computation of the package (a simulation, a placement run, a fluid trajectory,
an exact chain, the static bound, a sweep, ``compare``) takes an optional
:data:`Progress` and calls it as ``progress(fraction, status)``: ``fraction`` is the share
done, in [0, 1], or negative when the computation cannot tell (a search, an open-ended run
before its first estimate); ``status`` is a short text, possibly empty (``"3 of 10
runs"``, ``"precision 1.2% (target 1%)"``).  The command line's bars take exactly this
shape, so any callback can be handed to any computation.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Progress", "counted"]

#: A progress callback: ``progress(fraction, status)`` (see the module notes).
Progress = Callable[[float, str], None]


def counted(done: int, total: int, what: str = "runs") -> tuple[float, str]:
    """Return the fraction and status of ``done`` of ``total`` items (``(3 of 10 runs)``)."""
    return (done / total if total > 0 else 1.0), f"({done} of {total} {what})"
