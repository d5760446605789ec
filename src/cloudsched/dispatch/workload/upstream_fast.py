"""NGINX access logs read a batch of lines at a time, for ``check-lb`` on long logs.

A line whose fields are plain (``$msec``, ``$request_time`` and ``$upstream_response_time``
plain decimal numbers, ``$msec`` positive, one upstream address without retries) is read
by one compiled regular expression over the whole batch (Arrow's RE2, through
``pyarrow.compute``) and Arrow's number parsing, which rounds as Python's ``float`` does;
every other line (retries, ``-``, a value out of range, a line not in the format) is read
by the per-line reader (:func:`cloudsched.dispatch.workload.formats.read_line`), which
gives it the same meaning and the same errors.  The fast pattern is a sub-language of the
per-line one (:func:`cloudsched.dispatch.workload.fields.nginx_regex`): where it matches,
both split the line alike, so the two readers give the same requests (a test reads logs
both ways).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["FastLines", "fast_pattern", "read_fast"]

_NUMBER = r"\d{{1,12}}(?:\.(?P<{0}_frac>\d{{1,9}}))?"
_NUMERIC = ("msec", "request_time", "upstream_response_time")


def fast_pattern(log_format: str) -> str | None:
    """Return the RE2 pattern of the plain lines of ``log_format``, or None.

    None: the format has no ``$msec`` clock, or names a variable twice (the per-line reader
    reads every line of it).
    """
    parts = re.split(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", log_format)
    literals, names = parts[0::2], parts[1::2]
    if len(set(names)) != len(names) or not {"msec", "request_time", "upstream_addr"} <= set(names):
        return None
    pattern = "^" + re.escape(literals[0])
    for name, literal in zip(names, literals[1:], strict=True):
        stop = literal[:1]
        if name in _NUMERIC:
            body = _NUMBER.format(name)
        elif name == "upstream_addr":
            body = f"[^{re.escape(stop)},]+" if stop else "[^ ,]+"
        else:
            body = f"[^{re.escape(stop)}]*" if stop else ".*"
        pattern += f"(?P<{name}>{body}){re.escape(literal)}"
    return pattern + r"\s*$"


@dataclass(frozen=True)
class FastLines:
    """The plain lines of a batch (``ok``) and what they say (entries of other rows: 0)."""

    ok: np.ndarray
    msec: np.ndarray
    total: np.ndarray
    upstream_last: np.ndarray | None  # $upstream_response_time, when the format has it
    digits: np.ndarray  # digits after the point: the larger of $msec's and $request_time's
    upstream: list[str | None]


def read_fast(texts: list[str], pattern: str) -> FastLines:
    """Read the plain lines of ``texts`` (one batch) with ``pattern`` (:func:`fast_pattern`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pc.utf8_rtrim_whitespace(pa.array(texts, type=pa.string()))
    m = pc.extract_regex(arr, pattern)
    ok = np.asarray(m.is_valid().to_numpy(zero_copy_only=False), dtype=bool)

    def field(name: str) -> pa.Array:
        return pc.struct_field(m, name)

    def number(name: str) -> np.ndarray:
        return np.asarray(pc.cast(field(name), pa.float64()).fill_null(0.0).to_numpy())

    def frac(name: str) -> np.ndarray:
        return np.asarray(pc.utf8_length(field(f"{name}_frac")).fill_null(0).to_numpy())

    msec, total = number("msec"), number("request_time")
    addr = field("upstream_addr")
    colon = pc.match_substring_regex(addr, "^:|:$|^-$").fill_null(True)
    ok &= ~np.asarray(colon.to_numpy(zero_copy_only=False), dtype=bool)  # the reader's cases
    ok &= msec > 0
    names = m.type.names if hasattr(m.type, "names") else [f.name for f in m.type]
    last = number("upstream_response_time") if "upstream_response_time" in names else None
    return FastLines(
        ok, msec, total, last, np.maximum(frac("msec"), frac("request_time")), addr.to_pylist()
    )
