"""Options of the production balancers, named and defaulted as the balancers ship them.

A policy's options are the ``options`` of its table row (:mod:`cloudsched.policy_table`),
each a :class:`~cloudsched.policy_table.PolicyOption`.  A run gives them as ``NAME=VALUE``
(``--option`` on the command line, ``options={...}`` in Python); :func:`resolve_options`
checks each against its range and returns the values the kernel reads (``par.opt``, in the
row's order).

Time: the simulator's unit is the mean service time.  A balancer's durations are in seconds
(Linkerd's decay of 10 s, NGINX's fail_timeout of 10 s), so a duration may be given with a
unit (``10s``, ``30ms``, ``250us``, ``3min``) and is converted with ``service-time``, the
real length of the mean service time (default 10 ms: state yours); a bare number is in
mean service times.  The card names the conversion.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.policy_options import FAMILY_OPTIONS, PolicyOption
from cloudsched.policy_table import TABLE

__all__ = [
    "SERVICE_TIME",
    "OptionError",
    "describe_options",
    "options_by_name",
    "parse_duration",
    "resolve_options",
]

#: The option that converts durations: the real length of one mean service time.
SERVICE_TIME = "service-time"
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|ms|s|min|h)?\s*$")


def parse_duration(name: str, text: str | float, unit_seconds: float | None) -> float:
    """Return ``text`` in mean service times (a bare number already is; ``10s`` is converted).

    ``unit_seconds``: the real length of a mean service time (None: only bare numbers are
    accepted, as for ``service-time`` itself, which must carry a unit).
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), None
    else:
        match = _DURATION.match(str(text))
        if match is None:
            raise ParameterError(
                name,
                text,
                "a duration: a number of mean service times, or with a unit "
                "(us, ms, s, min, h), e.g. 10s or 30ms",
            )
        value, unit = float(match.group(1)), match.group(2)
    if unit is None:
        if unit_seconds is None:
            raise ParameterError(name, text, "a duration with a unit, e.g. 10ms or 0.2s")
        return value
    seconds = value * _UNITS[unit]
    return seconds if unit_seconds is None else seconds / unit_seconds


def _given(options: Mapping[str, object] | Iterable[str] | None) -> dict[str, object]:
    """``NAME=VALUE`` strings or a mapping, as a dict (a repeated name is refused)."""
    if options is None:
        return {}
    if isinstance(options, Mapping):
        return {str(k): v for k, v in options.items()}
    out: dict[str, object] = {}
    for item in options:
        name, sep, value = str(item).partition("=")
        if not sep or not name.strip():
            raise ParameterError("option", item, "NAME=VALUE, e.g. decay=10s")
        if name.strip() in out:
            raise ParameterError("option", item, f"given once ({name.strip()} is repeated)")
        out[name.strip()] = value.strip()
    return out


class OptionError(ParameterError):
    """A bad ``NAME=VALUE``: the message names the option, the policy and the range."""

    def __init__(self, policy: str, name: str, text: object, allowed: str) -> None:
        super().__init__("option", f"{name}={text}", f"{name} of {policy}: {allowed}")
        self.args = (f"--option {name}={text}: {name} of {policy} must be {allowed}",)

    def __str__(self) -> str:
        return str(self.args[0])


def _value(policy: str, opt: PolicyOption, text: object, unit: float) -> float:
    """Return the kernel's value of one option (checked against its range)."""
    if opt.kind == "choice":
        if str(text) not in opt.choices:
            raise OptionError(policy, opt.name, text, "one of " + ", ".join(opt.choices))
        return float(opt.choices.index(str(text)))
    span = f"[{opt.low:g}, {opt.high:g}]"
    if opt.kind == "duration":
        try:
            value = parse_duration(opt.name, text, unit)  # type: ignore[arg-type]
        except ParameterError:
            raise OptionError(
                policy,
                opt.name,
                text,
                "a duration: mean service times, or with a unit "
                "(us, ms, s, min, h), e.g. 10s or 30ms",
            ) from None
        span += " mean service times"
    else:
        try:
            value = float(str(text))
        except ValueError:
            raise OptionError(policy, opt.name, text, f"a number in {span}") from None
    if not (math.isfinite(value) and opt.low <= value <= opt.high):
        raise OptionError(policy, opt.name, text, f"in {span}")
    if opt.kind == "int" and value != int(value):
        raise OptionError(policy, opt.name, text, f"a whole number in {span}")
    return value


def resolve_options(
    policy: str, options: Mapping[str, object] | Iterable[str] | None
) -> np.ndarray:
    """Return ``policy``'s option values for the kernel, in its row's order.

    Durations are in mean service times.  Unknown names are refused with the list of the
    policy's options; a policy without options refuses any.
    """
    row = TABLE.get(policy)
    given = _given(options)
    known = row.options if row is not None else ()
    names = [o.name for o in known]
    for name in given:
        if name not in names:
            if not names:
                raise OptionError(policy, name, given[name], f"absent: {policy} takes no options")
            raise OptionError(policy, name, given[name], "one of its options: " + ", ".join(names))
    if not known:
        return np.zeros(1)
    unit = 1.0
    if SERVICE_TIME in names:
        opt = known[names.index(SERVICE_TIME)]
        text = given.get(SERVICE_TIME, opt.default)
        allowed = "a duration with a unit in [1us, 1h], e.g. 10ms"
        try:
            unit = parse_duration(SERVICE_TIME, str(text), None)
        except ParameterError:
            raise OptionError(policy, SERVICE_TIME, text, allowed) from None
        if not (1e-6 <= unit <= 3600.0):
            raise OptionError(policy, SERVICE_TIME, text, allowed)
    values = []
    for opt in known:
        if opt.name == SERVICE_TIME:
            values.append(unit)
            continue
        values.append(_value(policy, opt, given.get(opt.name, opt.default), unit))
    return np.array(values, dtype=np.float64)


def options_by_name(
    policy: str, options: Mapping[str, object] | Iterable[str] | None
) -> dict[str, float]:
    """Return :func:`resolve_options` by option name (durations in mean service times)."""
    values = resolve_options(policy, options)
    row = TABLE.get(policy)
    names = [o.name for o in row.options] if row is not None else []
    return {n: float(v) for n, v in zip(names, values, strict=False)}


def _seconds(value: float) -> str:
    """Write a duration in seconds as a balancer's configuration does (10s, 30ms, 250us)."""
    for unit, scale in (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3)):
        if value >= scale:
            return f"{value / scale:.4g}{unit}"
    return f"{value / 1e-6:.4g}us"


def describe_options(policy: str, values: np.ndarray) -> str:
    """Describe the resolved options as the card shows them (empty without options).

    The policy's own, then the family's that differ from their defaults, then
    ``service-time``.
    """
    row = TABLE.get(policy)
    if row is None or not row.options:
        return ""
    names = [o.name for o in row.options]
    unit = float(values[names.index(SERVICE_TIME)]) if SERVICE_TIME in names else 1.0
    family = {o.name for o in FAMILY_OPTIONS}
    parts = []
    for opt, value in zip(row.options, values, strict=False):
        if opt.name == SERVICE_TIME:
            continue
        if opt.kind == "choice":
            shown = opt.choices[int(value)]
        elif opt.kind == "duration":
            shown = _seconds(value * unit) if value > 0 else "0"
        else:
            shown = f"{value:g}"
        if opt.name in family and shown == opt.default:
            continue
        parts.append(f"{opt.name}={shown}")
    parts.append(f"{SERVICE_TIME}={_seconds(unit)}")
    return ", ".join(parts)
