"""The settings of one live run, checked before any process starts.

:class:`LabSpec` holds and validates everything :func:`cloudsched.lab.run_lab` needs; the
helpers parse the command-line forms ``--unit 20ms``, ``--slow 2:5x`` and ``--kill 3@10``.
Times given in seconds are wall-clock seconds; the model's time unit is ``unit`` seconds,
the mean of the service law (``--service``, mean 1 as in :mod:`cloudsched.dispatch`).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from cloudsched.dispatch.workload.distributions import Distribution, parse_spec
from cloudsched.errors import ParameterError, check_int, check_real
from cloudsched.policy_options import FAMILY_OPTIONS
from cloudsched.policy_table import TABLE, with_capability

__all__ = [
    "BALANCERS",
    "LAB_POLICIES",
    "MAX_SERVERS",
    "PROXY_POLICIES",
    "LabSpec",
    "parse_kill",
    "parse_slow",
    "parse_unit",
]

#: Policies the lab's own dispatchers run (the policy table's ``lab`` column).
LAB_POLICIES = with_capability("lab")
BALANCERS = ("lab", "nginx", "haproxy")
#: Most NGINX worker processes per dispatcher.
MAX_WORKERS = 16
#: Policies NGINX and HAProxy have: a directive of each in the policy table.
PROXY_POLICIES = tuple(
    p for p, row in TABLE.items() if row.nginx is not None and row.haproxy is not None
)
MAX_SERVERS = 64
MAX_DISPATCHERS = 16
MAX_REQUESTS = 2_000_000
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse_unit(text: str | float, name: str = "unit", low: float = 1e-3) -> float:
    """Seconds in ``20ms``, ``500us``, ``0.02s`` or a bare number of seconds (to 10 s)."""
    if isinstance(text, int | float):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(us|ms|s)?\s*", str(text))
        if not m:
            raise ParameterError(name, text, "a duration such as 20ms, 500us or 0.02s")
        value = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if not low <= value <= 10.0:
        raise ParameterError(name, text, f"a duration from {low * 1e3:g}ms to 10s")
    return value


def _per_server(
    name: str, items: list[str] | tuple[str, ...], servers: int, sep: str, unit: str, form: str
) -> list[tuple[str, int, float]]:
    """Split ``SERVER<sep>VALUE<unit>`` items; check the server; return (item, server, value)."""
    out = []
    for item in items:
        m = re.fullmatch(rf"\s*(\d+)\s*{sep}\s*([0-9]*\.?[0-9]+)\s*{unit}?\s*", item)
        if not m:
            raise ParameterError(name, item, form)
        if int(m.group(1)) >= servers:
            raise ParameterError(name, item, f"a server in 0..{servers - 1}")
        out.append((item, int(m.group(1)), float(m.group(2))))
    return out


def parse_slow(items: list[str] | tuple[str, ...], servers: int) -> dict[int, float]:
    """``["2:5x"]`` -> ``{2: 5.0}``: server 2 takes 5 times as long (factor in [1, 1000])."""
    out: dict[int, float] = {}
    for item, s, f in _per_server("slow", items, servers, ":", "x", "SERVER:FACTORx, e.g. 2:5x"):
        if not 1.0 <= f <= 1000.0:
            raise ParameterError("slow", item, "a factor in [1, 1000]")
        out[s] = f
    return out


def parse_kill(
    items: list[str] | tuple[str, ...], servers: int, duration: float
) -> dict[int, float]:
    """``["3@10"]`` -> ``{3: 10.0}``: kill server 3 ten seconds into the measurement."""
    out: dict[int, float] = {}
    for item, s, t in _per_server("kill", items, servers, "@", "s", "SERVER@SECONDS, e.g. 3@10"):
        if not 0.0 <= t < duration:
            raise ParameterError("kill", item, f"a time in [0, {duration:g}) seconds (--duration)")
        out[s] = t
    if out and len(out) >= servers:
        raise ParameterError("kill", ",".join(items), "fewer servers than --servers")
    return out


@dataclass(frozen=True)
class LabSpec:
    """One live run: servers, dispatchers, policy, traffic, faults and bounds.

    ``load`` is relative to the total capacity ``sum(1 / slow) / unit`` tasks per second;
    ``duration`` is the seconds of measured traffic; ``warmup`` is, as in ``simulate`` and
    ``place simulate``, the fraction of the run (warm-up and measurement) discarded first, in
    [0, 0.9], or seconds written with their unit (``"3s"``); ``kill`` maps a server to the
    second of the measurement at which it is killed (SIGKILL); ``workers``: NGINX worker
    processes per dispatcher, ``zone``: they share their counts (an upstream ``zone``).
    """

    policy: str
    servers: int = 8
    dispatchers: int = 2
    load: float = 0.7
    d: int = 2
    service: str = "exp"
    unit: float = 0.02
    duration: float = 20.0
    warmup: float | str = 0.15
    balancer: str = "lab"
    workers: int = 1
    zone: bool = False
    mode: str = "sleep"
    slow: dict[int, float] = field(default_factory=dict)
    kill: dict[int, float] = field(default_factory=dict)
    drop: float = 0.0
    max_inflight: int = 2000
    max_requests: int = 500_000
    probe_timeout: float = 0.05
    seed: int = 0
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Check every field; the first bad one raises :class:`ParameterError`."""
        if self.balancer not in BALANCERS:
            raise ParameterError("balancer", self.balancer, "one of " + ", ".join(BALANCERS))
        allowed = LAB_POLICIES if self.balancer == "lab" else PROXY_POLICIES
        if self.policy not in allowed:
            raise ParameterError(
                "policy",
                self.policy,
                f"one of {', '.join(allowed)} with --balancer {self.balancer}",
            )
        check_int("servers", self.servers, low=1, high=MAX_SERVERS)
        check_int("dispatchers", self.dispatchers, low=1, high=min(self.servers, MAX_DISPATCHERS))
        check_real("load", self.load, low=0.0, high=1.5, low_open=True)
        if TABLE[self.policy].probes == "d":  # the others do not probe d servers
            check_int("d", self.d, low=1, high=self.servers)
        nginx_d = self.balancer == "nginx" and TABLE[self.policy].probes == "d"
        if nginx_d and self.d != 2:  # NGINX's random takes two choices, no other number
            raise ParameterError("d", self.d, "2 with --balancer nginx (random two least_conn)")
        check_int("workers", self.workers, low=1, high=MAX_WORKERS)
        if (self.workers > 1 or self.zone) and self.balancer != "nginx":
            raise ParameterError(
                "workers" if self.workers > 1 else "zone",
                self.workers if self.workers > 1 else True,
                "used with --balancer nginx (NGINX's worker processes and shared zone)",
            )
        check_real("duration", self.duration, low=0.5, high=3600.0)
        self.warmup_seconds  # noqa: B018  (checks warmup)
        if self.mode not in ("sleep", "cpu"):
            raise ParameterError("mode", self.mode, "sleep or cpu")
        check_real("drop", self.drop, low=0.0, high=1.0, high_open=True)
        if self.drop > 0 and not TABLE[self.policy].iqueues:
            raise ParameterError(
                "drop",
                self.drop,
                "0 unless the policy has I-queues ("
                + ", ".join(p for p in LAB_POLICIES if TABLE[p].iqueues)
                + ")",
            )
        check_int("max_inflight", self.max_inflight, low=1, high=100_000)
        check_int("max_requests", self.max_requests, low=1, high=MAX_REQUESTS)
        parse_unit(self.probe_timeout, "probe_timeout", low=1e-4)
        check_int("seed", self.seed, low=0)
        parse_unit(self.unit)
        self.option_values  # noqa: B018  (checks options)
        law = self.law  # checks the spec
        expected = self.rate * (self.duration + self.warmup_seconds)
        if expected > self.max_requests:
            raise ParameterError(
                "duration",
                self.duration,
                f"at most {self.max_requests / self.rate - self.warmup_seconds:.3g} s at "
                f"{self.rate:.4g} requests/s (--max-requests {self.max_requests})",
            )
        if self.mode == "cpu" and self.load * self.servers > (os.cpu_count() or 1):
            raise ParameterError(
                "mode",
                self.mode,
                f"sleep when load x servers exceeds the {os.cpu_count()} cores "
                "(cpu-bound tasks would compete for too few cores)",
            )
        del law

    @property
    def counts(self) -> tuple[str, int]:
        """What a least-loaded choice reads: ``("own", K)`` (K proxies) or ``("shared", M)``.

        The lab's ``jsq`` counts its own outstanding requests (each of the M dispatchers);
        its ``pod`` probes the servers (their true lengths).  NGINX and HAProxy count their
        own open requests for ``jsq`` and ``pod``: each NGINX worker on its own unless the
        upstream has a shared ``zone``, so there are ``M x workers`` proxies without one.
        """
        pick = TABLE[self.policy].pick
        if pick not in ("least", "least of d") or (self.balancer == "lab" and pick != "least"):
            return "shared", self.dispatchers
        return "own", self.dispatchers * (1 if self.zone else self.workers)

    @property
    def option_values(self) -> dict[str, float]:
        """The policy's options resolved as ``simulate`` takes them (durations in units).

        The lab's ``unit`` is the mean service time, so ``service-time`` is not given here:
        it is the unit.  Policies without options take none.
        """
        from cloudsched.dispatch.options import SERVICE_TIME, resolve_options

        given = list(self.options)
        if any(str(o).split("=", 1)[0].strip() == SERVICE_TIME for o in given):
            raise ParameterError(
                "option", SERVICE_TIME, "not given in the lab (its --unit is the mean service time)"
            )
        row = TABLE[self.policy]
        if not row.options:
            if given:
                raise ParameterError("option", given[0], f"absent: {self.policy} takes no options")
            return {}
        values = resolve_options(self.policy, [*given, f"{SERVICE_TIME}={self.unit!r}s"])
        out = {o.name: float(x) for o, x in zip(row.options, values, strict=True)}
        for o in FAMILY_OPTIONS[1:]:  # subsets, servers joining, weights: not in the lab
            if out[o.name] != 0.0:  # each one's default (0, or the first choice)
                raise ParameterError(
                    "option", o.name, "at its default in the lab (its dispatchers do not run it)"
                )
        return out

    @property
    def seconds_options(self) -> list[str]:
        """The options as ``NAME=VALUE`` for the lab's dispatchers: durations in seconds."""
        kinds = {o.name: o.kind for o in TABLE[self.policy].options}
        return [
            f"{name}={value * self.unit if kinds[name] == 'duration' else value!r}"
            for name, value in self.option_values.items()
        ]

    @property
    def simulate_options(self) -> list[str]:
        """The options as ``simulate(options=...)`` takes them for the same setting."""
        if not TABLE[self.policy].options:
            return []
        return [*self.options, f"service-time={self.unit!r}s"]

    @property
    def warmup_seconds(self) -> float:
        """Seconds of load discarded before the measurement starts."""
        raw = self.warmup
        if isinstance(raw, str):
            m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*s\s*", raw)
            if m and float(m.group(1)) <= 600.0:
                return float(m.group(1))
        elif isinstance(raw, int | float) and not isinstance(raw, bool) and 0 <= raw <= 0.9:
            return self.duration * float(raw) / (1.0 - float(raw))
        raise ParameterError(
            "warmup",
            raw,
            "a fraction of the run in [0, 0.9] (as in simulate), "
            "or seconds with their unit, up to 600s (3s)",
        )

    @property
    def law(self) -> Distribution:
        """The service law (mean 1 time unit)."""
        return parse_spec(self.service, "service")

    @property
    def speeds(self) -> list[float]:
        """Each server's speed, ``1 / slow`` (1 for a normal server)."""
        return [1.0 / self.slow.get(i, 1.0) for i in range(self.servers)]

    @property
    def rate(self) -> float:
        """Requests per second of the whole farm."""
        return self.load * sum(self.speeds) / (self.law.mean * self.unit)

    @property
    def faults(self) -> bool:
        """Whether a fault the simulator does not model (kill, drop) is set."""
        return bool(self.kill) or self.drop > 0

    @property
    def lifetime(self) -> float:
        """Seconds a child may live at most (the run's bound plus a margin)."""
        return math.ceil(self.warmup_seconds + self.duration + 120.0)
