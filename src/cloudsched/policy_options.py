"""The options of the production balancers, named and defaulted as the balancers ship them.

Each production balancer's row in :mod:`cloudsched.policy_table` takes its options from
here; :mod:`cloudsched.dispatch.options` resolves what a run gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "EWMA_OPTIONS",
    "FAMILY_OPTIONS",
    "LEAST_TIME_OPTIONS",
    "OPTION_KINDS",
    "WLR_OPTIONS",
    "PolicyOption",
]

OPTION_KINDS = ("duration", "number", "int", "choice")


@dataclass(frozen=True)
class PolicyOption:
    """One option of a production balancer: its name as the balancer names it, its default.

    ``kind``: ``duration`` (a number of mean service times, or with a unit: ``10s``),
    ``number``, ``int`` or ``choice`` (one of ``choices``); ``low`` / ``high``: its range
    (durations in mean service times); ``help``: what it does, and where the default comes
    from.
    """

    name: str
    default: str
    kind: str
    help: str
    low: float = 0.0
    high: float = math.inf
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in OPTION_KINDS or (self.kind == "choice") != bool(self.choices):
            raise ValueError(f"{self.name}: kind in {OPTION_KINDS}, choices for a choice")


#: The options every production balancer takes, first and in this order (the kernels read
#: them by position): the real length of the mean service time, subsetting, servers that
#: join mid-run, and the servers' configured weights.
FAMILY_OPTIONS = (
    PolicyOption(
        "service-time",
        "10ms",
        "duration",
        low=0.0,
        help="real length of the mean service time: converts the balancer's durations "
        "(10s, 30ms) to the simulator's unit",
    ),
    PolicyOption(
        "subset",
        "0",
        "int",
        low=0,
        high=2**31,
        help="each dispatcher (client) balances over a random subset of this many servers "
        "(gRPC A68 random subsetting); 0: all servers",
    ),
    PolicyOption(
        "join-count",
        "0",
        "int",
        low=0,
        high=2**31,
        help="the last this-many servers join mid-run (at join-time): a scale-up or a rollout",
    ),
    PolicyOption(
        "join-time",
        "0",
        "duration",
        low=0.0,
        help="when the joining servers join (before it no dispatcher knows them)",
    ),
    PolicyOption(
        "weights",
        "equal",
        "choice",
        choices=("equal", "speed"),
        help="the servers' configured weights: equal, or each server's speed (an operator "
        "who sets weights to instance size)",
    ),
)


#: ewma's options, after the family's.
# fmt: off
EWMA_OPTIONS = (
    *FAMILY_OPTIONS,
    PolicyOption(
        "decay", "10s", "duration", low=1e-9,
        help="time constant of the EWMA (Linkerd's EWMA_DECAY, 10 s)",
    ),
    PolicyOption(
        "default-rtt", "30ms", "duration", low=1e-9,
        help="latency assumed for a server before its first response (Linkerd: 30 ms)",
    ),
)
# fmt: on

#: least-time's options, after the family's.
# fmt: off
LEAST_TIME_OPTIONS = (
    *FAMILY_OPTIONS,
    PolicyOption(
        "mode", "header", "choice", choices=("header", "last_byte"),
        help="time to the response header or to its last byte (the same here: a "
        "simulated server sends its whole response when it completes)",
    ),
    PolicyOption(
        "inflight", "off", "choice", choices=("off", "on"),
        help="least_time ... inflight: requests still in flight count toward the "
        "average",
    ),
    PolicyOption(
        "fail-timeout", "10s", "duration", low=1e-9,
        help="NGINX's fail_timeout (10 s): an unchosen server's average halves once "
        "per fail_timeout",
    ),
)
# fmt: on

#: wlr's options, after the family's.
# fmt: off
WLR_OPTIONS = (
    *FAMILY_OPTIONS,
    PolicyOption(
        "choice-count", "2", "int", low=2, high=2**31,
        help="hosts sampled with equal weights (Envoy's choice_count, 2)",
    ),
    PolicyOption(
        "active-request-bias", "1.0", "number", low=0.0, high=1e6,
        help="exponent of (active + 1) in a weighted host's EDF weight (Envoy: 1.0)",
    ),
    PolicyOption(
        "slow-start-window", "0", "duration", low=0.0,
        help="a joining host ramps its weight over this window (Envoy's "
        "slow_start_window; 0: no slow start)",
    ),
    PolicyOption(
        "aggression", "1.0", "number", low=1e-6, high=1e6,
        help="slow start's aggression (Envoy: 1.0, a linear ramp)",
    ),
    PolicyOption(
        "min-weight-percent", "10", "number", low=0.0, high=100.0,
        help="slow start's floor, in percent of the weight (Envoy: 10)",
    ),
)
# fmt: on
