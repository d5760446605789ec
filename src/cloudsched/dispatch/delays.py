"""Message delays and stale views: what a dispatcher knows, and when it learns it.

Without delays every message takes effect at once and every dispatcher reads the true queue
lengths (the other engines, :mod:`cloudsched.dispatch.engines`).  :class:`Delays` says how
long each kind of message takes, fixed or exponential, in mean service times:

``info``
    Each change of a server's queue length is published to the dispatchers by an update
    message that takes this long; what ``pod``, ``jsq`` and ``jiq-pod`` read is the value of
    the newest update delivered.  With a fixed delay every dispatcher sees each server's
    length exactly that long ago; with exponential delays updates may overtake each other,
    and an older one that arrives late is ignored.
``join``
    An idle server's message to its I-queue (``jiq``, ``jiq-pod``): until it lands the server
    is idle and listed nowhere.
``delete``
    The delete request a server that received a task sends to the I-queue that lists it (or
    will: it follows the join on the same channel and never overtakes it).  Until it lands,
    the entry may hand the server a task while it is busy (counted as ``stale``).

Each server's join and delete messages travel on one ordered channel (as on a TCP
connection): a message lands at its delay or just after the one sent before it on that
channel, whichever is later.

``view="own"`` is the other kind of staleness: each of the M dispatchers counts only the
tasks it sent itself and has not seen finish (a proxy's active requests, as Envoy's
``LEAST_REQUEST`` or NGINX's ``least_conn`` per proxy), so it is blind to the others'
traffic.  ``pod`` and ``jsq`` choose on those counts.

The engine that runs these is :mod:`cloudsched.dispatch.engines.delay.engine`; its mean field,
solved by the method of steps, is :mod:`cloudsched.dispatch.theory.delayed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cloudsched.errors import ParameterError, check_real
from cloudsched.policy_table import TABLE, with_capability

__all__ = [
    "DELAY_KINDS",
    "DELAY_POLICIES",
    "MAX_DELAY",
    "VIEWS",
    "Delay",
    "Delays",
    "check_delay_policy",
    "parse_delays",
]

#: Message kinds that can be delayed.
DELAY_KINDS = ("info", "join", "delete")
#: The policies the delay engine runs, and the message kinds each one sends (the table).
DELAY_POLICIES = {p: TABLE[p].messages for p in with_capability("delay")}
#: What a dispatcher reads: the published lengths (``shared``) or its own active requests.
VIEWS = ("shared", "own")
#: Policies that choose on their own active requests with ``view="own"`` (the table).
OWN_VIEW_POLICIES = tuple(p for p in DELAY_POLICIES if "own" in TABLE[p].views)
#: Longest delay accepted, in mean service times.
MAX_DELAY = 1e6


@dataclass(frozen=True)
class Delay:
    """One kind's delay: ``mean`` (mean service times) and whether it is exponential."""

    mean: float = 0.0
    exponential: bool = False

    def __str__(self) -> str:
        if self.mean == 0.0:
            return "0"
        return f"exp:{self.mean:g}" if self.exponential else f"{self.mean:g}"


@dataclass(frozen=True)
class Delays:
    """Delays per message kind (see the module notes); all zero by default."""

    info: Delay = Delay()
    join: Delay = Delay()
    delete: Delay = Delay()

    @property
    def any(self) -> bool:
        """Whether some kind has a delay."""
        return any(getattr(self, k).mean > 0.0 for k in DELAY_KINDS)

    def __str__(self) -> str:
        kinds = [f"{k}={getattr(self, k)}" for k in DELAY_KINDS if getattr(self, k).mean > 0.0]
        return ",".join(kinds) or "none"


def _parse_one(kind: str, value: object) -> Delay:
    if isinstance(value, Delay):
        mean, exp = value.mean, value.exponential
    elif isinstance(value, str):
        text = value.strip().lower()
        exp = text.startswith("exp:")
        body = text[4:] if exp else text
        try:
            mean = float(body)
        except ValueError:
            raise ParameterError(
                "delay",
                f"{kind}={value}",
                "a number of mean service times (fixed) or exp:MEAN (exponential)",
            ) from None
    else:
        mean, exp = value, False  # type: ignore[assignment]
    mean = check_real(f"delay {kind}", mean, low=0.0, high=MAX_DELAY)
    return Delay(float(mean), bool(exp) and mean > 0.0)


def parse_delays(value: Delays | Mapping[str, object] | str | list[str] | None) -> Delays:
    """Read delays from ``"info=0.5,join=exp:0.2"``, a list of such items or a mapping.

    A kind written without ``=`` is refused; each value is ``X`` (fixed, in mean service
    times) or ``exp:X`` (exponential with mean ``X``).
    """
    if value is None:
        return Delays()
    if isinstance(value, Delays):
        return value
    items: dict[str, object] = {}
    if isinstance(value, Mapping):
        items = dict(value)
    else:
        parts = [value] if isinstance(value, str) else list(value)
        for part in (p for chunk in parts for p in str(chunk).split(",")):
            if not part.strip():
                continue
            kind, eq, text = part.partition("=")
            if not eq:
                raise ParameterError(
                    "delay", part, f"KIND=VALUE with KIND one of {', '.join(DELAY_KINDS)}"
                )
            items[kind.strip().lower()] = text
    for kind in items:
        if kind not in DELAY_KINDS:
            raise ParameterError("delay", kind, f"a kind among {', '.join(DELAY_KINDS)}")
    return Delays(**{k: _parse_one(k, v) for k, v in items.items()})


def check_delay_policy(policy: str, builtin: bool, delays: Delays, view: str, m: int) -> bool:
    """Check that ``policy`` can run with these delays and view; True if the delay engine runs.

    A delay on a kind of message the policy does not send, or ``view="own"`` for a policy
    that does not choose on queue lengths (or with one dispatcher, where it is the true
    view), is refused with a one-line error.
    """
    if view not in VIEWS:
        raise ParameterError("view", view, f"one of {', '.join(VIEWS)}")
    if not delays.any and view == "shared":
        return False
    if not builtin or policy not in DELAY_POLICIES:
        raise ParameterError(
            "policy",
            policy,
            f"one of {', '.join(DELAY_POLICIES)} with message delays or view='own'",
        )
    sent = DELAY_POLICIES[policy]
    for kind in DELAY_KINDS:
        if getattr(delays, kind).mean > 0.0 and kind not in sent:
            allowed = ", ".join(sent) or "none (it sends no messages)"
            raise ParameterError(f"delay {kind}", policy, f"a kind {policy} sends: {allowed}")
    if view == "own":
        if policy not in OWN_VIEW_POLICIES:
            raise ParameterError("view", view, f"'shared' for {policy} ('own': pod or jsq)")
        if delays.info.mean > 0.0:
            raise ParameterError(
                "delay info",
                str(delays.info),
                "0 with view='own' (a proxy's own counts are never late)",
            )
        if m < 2:
            raise ParameterError(
                "dispatchers", m, "at least 2 with view='own' (one proxy sees every task)"
            )
    return True
