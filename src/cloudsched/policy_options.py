"""The production balancers' rules and options, named and defaulted as the balancers ship them.

Each production balancer's row in :mod:`cloudsched.policy_table` takes from here its rule
(``*_RULE``: what it does, and the source file and function it was read from) and its
options (``*_OPTIONS``); :mod:`cloudsched.dispatch.options` resolves what a run gives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "EWMA_OPTIONS",
    "EWMA_RULE",
    "FAMILY_OPTIONS",
    "LEAST_TIME_OPTIONS",
    "LEAST_TIME_RULE",
    "OPTION_KINDS",
    "PREQUAL_OPTIONS",
    "PREQUAL_RULE",
    "WLR_OPTIONS",
    "WLR_RULE",
    "WRR_OPTIONS",
    "WRR_RULE",
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

_PAPER = "(our reading of the Prequal paper, NSDI 2024; Google's code is not public)"
#: prequal's options, after the family's.
# fmt: off
PREQUAL_OPTIONS = (
    *FAMILY_OPTIONS,
    PolicyOption(
        "probe-rate", "3", "number", low=0.0, high=64.0,
        help="probes sent per query, to uniform servers, answered before the next query "
        f"uses them (a fraction: a random whole number of that mean) {_PAPER}",
    ),
    PolicyOption(
        "pool", "16", "int", low=1, high=64,
        help=f"probes a client keeps; the oldest leaves when a new one comes {_PAPER}",
    ),
    PolicyOption(
        "reuse", "2", "int", low=1, high=2**31,
        help=f"queries one probe may serve before it leaves the pool {_PAPER}",
    ),
    PolicyOption(
        "max-age", "1s", "duration", low=1e-9,
        help=f"a probe older than this leaves the pool {_PAPER}",
    ),
    PolicyOption(
        "q-rif", "0.84", "number", low=0.0, high=1.0,
        help="a probe is hot when its requests in flight exceed this quantile of the "
        "pool's; the coldest by latency wins, or the least in flight when all are hot "
        f"{_PAPER}",
    ),
)
# fmt: on

# The rules, as read from each balancer's source (file and function).
EWMA_RULE = (
    "Linkerd / Finagle peak EWMA: P2C over two distinct servers, cost = "
    "peak-EWMA latency x (requests in flight + 1), the estimate decaying on every read "
    "(tower/src/load/peak_ewma.rs, RttEstimate::update; tower/src/balance/p2c/service.rs, "
    "p2c_ready_index; linkerd2-proxy EWMA_DEFAULT_RTT 30 ms, EWMA_DECAY 10 s; tower "
    "is Linkerd's balancer and a port of Finagle's PeakEwma)"
)
LEAST_TIME_RULE = (
    "NGINX least_time: (open source since 1.31.0) every server's estimated time "
    "avg x (1 + connections), the average an EWMA of whole-millisecond times with weight "
    "0.05, put in 20 ms clusters and capped at 5000 ms, ties by smooth weighted round "
    "robin, halved once per fail_timeout a server goes unchosen "
    "(src/http/modules/ngx_http_upstream_least_time_module.c, "
    "ngx_http_upstream_least_time_eta; ngx_http_upstream_round_robin.h, "
    "ngx_http_upstream_response_time_avg)"
)
WLR_RULE = (
    "Envoy LEAST_REQUEST: with equal weights and no host in slow start, the "
    "least active of choice_count hosts drawn with replacement; otherwise an EDF "
    "schedule of weight / (active + 1)^active_request_bias, a host's deadline set when "
    "it is picked; slow start scales a new host's weight by max((age / window)^(1 / "
    "aggression), min_weight_percent) (source/extensions/load_balancing_policies/"
    "least_request/least_request_lb.cc, hostWeight and unweightedHostPick; "
    "source/common/upstream/load_balancer_impl.cc, applySlowStartFactor)"
)
PREQUAL_RULE = (
    "Google Prequal (NSDI 2024, 'Load is not what you should balance'): each "
    "query sends probe-rate probes whose answers (the server's requests in flight and "
    "its latency estimate, here (RIF + 1) x its service-time estimate) join a pool; a "
    "query takes, among the pool's cold probes "
    "(requests in flight at most the q-rif quantile), the lowest latency, else the "
    "least in flight; a probe serves at most reuse queries and max-age; read from the "
    "paper (Google's implementation is not public)"
)

#: wrr's options, after the family's.
# fmt: off
WRR_OPTIONS = (
    *FAMILY_OPTIONS,
    PolicyOption(
        "weight-update-period", "1s", "duration", low=1e-9,
        help="how often a client rebuilds its schedule from the weights (gRPC A58: 1 s)",
    ),
    PolicyOption(
        "blackout-period", "10s", "duration", low=0.0,
        help="a server's weight is used only after it has reported this long (A58: 10 s)",
    ),
    PolicyOption(
        "weight-expiration-period", "3min", "duration", low=1e-9,
        help="a weight not refreshed for this long is forgotten (A58: 3 min)",
    ),
    PolicyOption(
        "server-window", "1s", "duration", low=1e-9,
        help="each server reports the requests per second and utilisation of its last "
        "complete window of this length (CHOICE: ORCA leaves the measurement to the server)",
    ),
)
# fmt: on
WRR_RULE = (
    "gRPC weighted_round_robin (A58): each response carries its server's load report "
    "(per-call ORCA: requests per second and utilisation); a client's weight for a server "
    "is qps / utilisation, used after blackout-period and forgotten after "
    "weight-expiration-period; every weight-update-period the client rebuilds a static "
    "stride schedule (weights scaled to 65535, capped at 10x the mean and floored at 1% of "
    "it, unknown ones at the mean; round robin with fewer than two known) "
    "(src/core/load_balancing/weighted_round_robin/static_stride_scheduler.cc, Make and "
    "Pick; weighted_round_robin.cc)"
)
