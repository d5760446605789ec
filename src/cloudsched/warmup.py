"""Compiling kernels ahead of use (``cloudsched warmup``).

A kernel compiles the first time a run needs it, once per machine and cloudsched version,
and is then loaded from the disk cache (:mod:`cloudsched._jit`).  :func:`warmup` compiles
them before that first run, each :class:`Target` in a process of its own, as many at once
as the machine has cores: the kernels of the policies named, or all of them.  A target is
compiled by the smallest run that needs its kernels (a few hundred tasks), so it compiles
exactly what a real run of it loads.  A target whose kernels are cached costs its process's
start, about a second.
"""

from __future__ import annotations

import multiprocessing
import os
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from cloudsched.errors import ParameterError
from cloudsched.progress import Compile, Progress, counted, watch_compiles

__all__ = ["Target", "Warmed", "targets", "warm", "warmup"]

#: Placement policies, by the simulator kernel they run.
PLACEMENT = {
    "storm-default": "baselines",
    "greedy": "baselines",
    "resource-aware": "baselines",
    "dgp": "dgp",
    "dgp-clock": "dgp",
    "maxweight": "dgp",
}


@dataclass(frozen=True)
class Target:
    """Kernels compiled together.

    ``kind`` (dispatch, placement, check-lb), the policy or law ``name``, and for dispatch
    the ``engine`` (``exponential``, ``general``, ``counts``, ``classes``, ``delay``).
    """

    kind: str
    name: str
    engine: str = ""

    @property
    def label(self) -> str:
        """The target in words."""
        if self.kind == "dispatch":
            engine = {
                "exponential": "per-server, Markov clock",
                "general": "per-server, event list",
                "counts": "occupancy counts",
                "classes": "speed classes",
                "delay": "message delays",
            }[self.engine]
            return f"{self.name} ({engine})"
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Warmed:
    """A target done.

    The kernels it ``compiled`` (their labels), the seconds that took (``seconds``, 0 when
    every kernel was cached) and the seconds of its whole process (``wall``).
    """

    target: Target
    compiled: tuple[str, ...]
    seconds: float
    wall: float


def _dispatch_targets(name: str) -> list[Target]:
    from cloudsched.dispatch.policies import get_policy
    from cloudsched.policy_table import TABLE

    pol = get_policy(name)
    out = [Target("dispatch", name, "exponential"), Target("dispatch", name, "general")]
    if pol.builtin:
        engines = TABLE[pol.name].engines
        out += [Target("dispatch", name, e) for e in ("counts", "classes", "delay") if e in engines]
    return out


#: The checks that run a kernel of their own (least_time's scan, peak EWMA's costs, Envoy's
#: EDF, the worker-count filter), each with the law of the log it is compiled on.
KERNEL_CHECKS = {"least-time": "least-time", "ewma": "ewma", "wlr": "wlr", "workers": "pod:2"}


def compile_check(check: str) -> None:
    """Run ``check`` (a key of :data:`KERNEL_CHECKS`) once on a small generated log.

    What ``cloudsched warmup`` calls: the run compiles the check's kernels (or loads them).
    """
    import tempfile
    from pathlib import Path

    from cloudsched.dispatch.workload.upstreams import read_upstream_log
    from cloudsched.experiments.checklb import check_lb
    from cloudsched.experiments.checklb_workers import worker_loglik
    from cloudsched.testing.balancer_logs import balancer_log

    law = KERNEL_CHECKS[check]
    weights = [1.0, 2.0, 1.0] if law == "wlr" else None
    lines = balancer_log(law, k=3, load=0.5, requests=300, seed=0, weights=weights)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "access.log"
        path.write_text("\n".join(lines) + "\n")
        log = read_upstream_log(path, "nginx")
        if check == "workers":
            worker_loglik(log, law, 2, whole_run=True)
            return
        given = None
        if weights is not None:
            given = ",".join(f"{h}={w:g}" for h, w in zip(log.names, weights, strict=True))
        check_lb(log, law, weights=given, whole_run=True)


def targets(names: Sequence[str] | None = None) -> list[Target]:
    """Return the targets of the policies ``names``, or of everything built in.

    ``names``: what ``simulate`` or ``place simulate`` takes (a plug-in file included);
    none or empty: every built-in kernel.  A dispatch policy: its per-server kernels (both
    clocks) and the count, speed-class and delay engines where it runs on them; a placement
    policy: the placement simulator it runs; everything adds check-lb's kernels.
    """
    from cloudsched.policy_table import TABLE

    if not names:
        out = [t for p in TABLE for t in _dispatch_targets(p)]
        shared = {t.engine for t in out if t.engine in ("counts", "classes", "delay")}
        out = [t for t in out if t.engine not in shared] + [
            Target("dispatch", "pod", e) for e in sorted(shared)
        ]
        out += [Target("placement", p) for p in ("storm-default", "dgp")]
        out += [Target("check-lb", check) for check in KERNEL_CHECKS]
        return _longest_first(out)
    found: list[Target] = []
    for name in names:
        if name in PLACEMENT:
            found.append(Target("placement", name))
            continue
        try:
            found += _dispatch_targets(name)
        except ParameterError:
            allowed = ", ".join([*TABLE, *PLACEMENT])
            raise ParameterError(
                "POLICY", name, f"a dispatch or placement policy ({allowed}) or a plug-in file"
            ) from None
    unique = list(dict.fromkeys(found))
    return _longest_first(unique)


def _longest_first(found: list[Target]) -> list[Target]:
    """Sort ``found`` with the slowest compiles first (a pool then ends together).

    Placement's simulators, then check-lb's, then the production balancers (the rows with
    memory per slot: the largest hooks), then the rest.
    """
    from cloudsched.policy_table import TABLE

    def rank(t: Target) -> int:
        if t.kind != "dispatch":
            return 0 if t.kind == "placement" else 1
        row = TABLE.get(t.name)
        return 2 if row is not None and row.memory == "slots" else 3

    return sorted(found, key=rank)


def _run_dispatch(t: Target) -> None:
    from cloudsched.dispatch import simulate

    extra: dict[str, object] = {"r": 10} if t.name.startswith("jiq") else {}
    engine = t.engine
    servers = 16
    if engine == "classes":
        extra["speeds"] = [1.0, 2.0] * (servers // 2)
    if engine == "delay":
        extra["delay"], engine = "info=0.5", "auto"
    simulate(
        t.name,
        servers=servers,
        load=0.5,
        tasks=500,
        engine=engine,
        rng=0,
        **extra,  # type: ignore[arg-type]
    )


def _run_placement(t: Target) -> None:
    from cloudsched.placement import JobType, chain, parse_cluster, simulate_placement

    cluster = parse_cluster("3x4")
    jobs = [JobType("chain", 1.0, 1.0, chain(3))]
    simulate_placement(t.name, cluster, jobs, horizon=5.0, rng=0, compare_bound=False)


def _run_check_lb(t: Target) -> None:
    compile_check(t.name)


_RUN: dict[str, Callable[[Target], None]] = {
    "dispatch": _run_dispatch,
    "placement": _run_placement,
    "check-lb": _run_check_lb,
}


def warm(target: Target) -> Warmed:
    """Compile ``target``'s kernels in this process (loading those already cached)."""
    compiled: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    with watch_compiles(_Collect(compiled)), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _RUN[target.kind](target)
    return Warmed(
        target,
        tuple(label for label, _ in compiled),
        sum(s for _, s in compiled),
        time.perf_counter() - t0,
    )


class _Collect:
    """A compile watcher that keeps each compile's label and duration."""

    def __init__(self, into: list[tuple[str, float]]) -> None:
        self.into = into
        self.current: tuple[str, float] | None = None

    def compiling(self, compile_: Compile | None) -> None:
        if compile_ is not None:
            self.current = (compile_.label, compile_.started)
        elif self.current is not None:
            self.into.append((self.current[0], time.perf_counter() - self.current[1]))
            self.current = None

    def say(self, line: str) -> bool:
        return True  # the caller reports what compiled


def warmup(
    found: Sequence[Target], workers: int | None = None, progress: Progress | None = None
) -> list[Warmed]:
    """Compile ``found`` in ``workers`` processes (default: one per core), longest first.

    Processes that need a kernel at once compile it once (:mod:`cloudsched._jit.lock`).
    Returns what each target compiled, in the order given.
    """
    workers = max(1, min(workers or os.cpu_count() or 1, len(found)))
    done: dict[Target, Warmed] = {}
    if progress is not None:
        progress(*counted(0, len(found), "targets"))
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(warm, t): t for t in found}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            if progress is not None:
                progress(*counted(len(done), len(found), "targets"))
    return [done[t] for t in found]
