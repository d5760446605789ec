"""The values in access-log fields: times (NGINX's, HAProxy's, ISO 8601) and durations.

:mod:`.formats` reads each format's lines with these; an unusable value stops the reader
with a one-line :class:`~cloudsched.dispatch.workload.logfiles.TraceError` naming the file
and the line.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from cloudsched.dispatch.workload.logfiles import MAX_VALUE, TraceError
from cloudsched.errors import ParameterError

__all__ = ["clf_time", "duration", "iso_time", "log_time", "nginx_regex", "start_time"]


def nginx_regex(log_format: str) -> re.Pattern[str]:
    """Compile an NGINX ``log_format`` string into a regular expression with named groups.

    A variable (``$name`` or ``${name}``) matches up to the first character of the literal
    text that follows it (``[^"]*`` before a quote), the last one to the end of the line.
    """
    parts = re.split(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", log_format)
    literals, names = parts[0::2], parts[1::2]
    if len(set(names)) != len(names):
        raise ParameterError("log_format", log_format, "a format naming each variable once")
    pattern = "^" + re.escape(literals[0])
    for name, literal in zip(names, literals[1:], strict=True):
        stop = literal[:1]
        body = f"[^{re.escape(stop)}]*" if stop else ".*"
        if name.startswith("upstream_") and name.endswith("_time"):  # retries and redirects:
            body = r"[0-9.-]+(?:(?:, | : )[0-9.-]+)*"  # "0.010, 0.004 : 0.002", or "-"
        elif name in ("upstream_addr", "upstream_status") and stop == " ":
            body = r"[^ ,]+(?:(?:, | : )[^ ,]+)*"  # "10.0.0.1:80, 10.0.0.2:80 : unix:/s"
        pattern += f"(?P<{name}>{body}){re.escape(literal)}"
    return re.compile(pattern + r"\s*$")


_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}


def clf_time(text: str) -> tuple[float, bool]:
    """``01/Dec/2026:18:00:00 +0000`` or HAProxy's ``01/Dec/2026:18:00:00.123`` (UTC)."""
    day, month, rest = text.split("/", 2)
    year, hh, mm, ss = rest[:4], rest[5:7], rest[8:10], rest[11:].split(" ")[0]
    zone = rest[11:].split(" ")[1] if " " in rest[11:] else "+0000"
    if month not in _MONTHS:
        raise ValueError(text)
    stamp = datetime.fromisoformat(
        f"{year}-{_MONTHS[month]:02d}-{int(day):02d}T{hh}:{mm}:{ss}{zone}"
    )
    return stamp.timestamp(), "." in ss


def iso_time(text: str) -> tuple[float, bool]:
    """Return an ISO 8601 time in seconds since the epoch, and whether it has a fraction.

    A time without a zone is taken as UTC.
    """
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp(), "." in text


def log_time(where: str, name: str, text: str) -> tuple[float, bool]:
    """Read a time field: ``msec`` (seconds since the epoch), ``time_local`` or ISO 8601."""
    try:
        if name == "msec":
            return float(text), True
        if name == "time_local":
            return clf_time(text)
        return iso_time(text)
    except (ValueError, IndexError, KeyError):
        raise TraceError(where, f"${name} is not a time: {text!r}") from None


def start_time(where: str, text: str, name: str) -> tuple[float, bool, float]:
    """Read an Envoy start: ISO 8601, or seconds since the epoch (``%START_TIME(%s.%3f)%``).

    Returns the time, whether it is exact (seconds since the epoch always are, as the
    workload reader has always taken them) and its clock step.
    """
    text = text.strip()
    if text.replace(".", "", 1).isdigit():
        value = duration(where, text, name, 1.0)
        return (value or 0.0), True, 1e-3 if "." in text else 1.0
    try:
        stamp, fraction = iso_time(text)
    except ValueError:
        raise TraceError(where, f"{name} is not a time: {text[:40]!r}") from None
    return stamp, fraction, 1e-3 if fraction else 1.0


def duration(where: str, text: str, what: str, per_second: float) -> float | None:
    """Read a duration in its unit (``-``: None; NGINX retries ``a, b : c``: summed)."""
    text = text.strip().strip('"')
    if text in ("", "-"):
        return None
    try:
        value = sum(float(p) for p in re.split(r"[,:]\s*", text))
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise TraceError(where, f"{what} must be a number or '-', got {shown!r}") from None
    seconds = value * (1.0 / per_second)
    if not (math.isfinite(seconds) and abs(seconds) <= MAX_VALUE):
        raise TraceError(
            where,
            f"{what} must be a finite duration of at most {MAX_VALUE:g} s "
            f"({len(text)} characters given)",
        )
    return value
