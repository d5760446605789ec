"""Theory, simulation and the live run of the same setting, side by side.

For each policy :func:`compare_lab` runs the lab, then simulates the same farm (servers,
dispatchers, d, service law, slow servers as speeds) at the offered load and at the load
the servers actually carried, and asks the finite-N theory
(:func:`cloudsched.dispatch.theory.finite.predict_finite`, ``auto``: exact or refined mean field)
where there is one (exponential service, equal speeds).  The live mean is shown as
measured and with the fixed forwarding overhead subtracted (``live - overhead``), which is
the number to hold against the model: the model has no network.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError
from cloudsched.lab.result import LabResult
from cloudsched.lab.run import run_lab
from cloudsched.lab.spec import LabSpec
from cloudsched.policy_table import TABLE
from cloudsched.progress import Progress, counted
from cloudsched.results import half_of

__all__ = ["compare_lab", "compare_notes"]


def _own_model(spec: LabSpec) -> bool:
    """Whether the own-counts model and simulation apply (exp service, equal speeds).

    One proxy's own counts are the true counts: then the global policy is the model.
    """
    from cloudsched.dispatch.workload.distributions import Exponential

    view, k = spec.counts
    return view == "own" and k > 1 and not spec.slow and isinstance(spec.law, Exponential)


def _theory(spec: LabSpec) -> dict[str, Any] | None:
    from cloudsched.dispatch.theory.finite import predict_finite
    from cloudsched.dispatch.workload.distributions import Exponential

    model = TABLE.get(spec.policy)
    if model is None or spec.slow or not isinstance(spec.law, Exponential) or spec.load >= 1.0:
        return None
    if _own_model(spec):  # K proxies, each on its own counts: the many-server limit
        from cloudsched.dispatch.theory.proxies import own_meanfield

        p = own_meanfield(spec.policy, spec.load, spec.counts[1], d=spec.d)
        how = "exact" if p.exact else "closure"
        source = f"theory (N -> inf, {spec.counts[1]} own counts, {how})"
        return {"source": source, "mean": p.mean_response_time, "half_width": None}
    if not (model.refined or model.exact_at(spec.dispatchers)):
        return None  # only the N -> infinity limit (round-robin with several dispatchers)
    pred = predict_finite(
        spec.policy, spec.servers, [spec.load], r=spec.servers / spec.dispatchers, d=spec.d
    )[0]
    name = "N -> inf limit" if pred.source == "meanfield" else pred.source
    return {"source": f"theory ({name})", "mean": pred.value, "half_width": None}


def _simulate(spec: LabSpec, load: float, keep: bool) -> Any:
    from cloudsched.dispatch import simulate

    own = _own_model(spec)
    return simulate(
        spec.policy,
        servers=spec.servers,
        load=load,
        dispatchers=spec.counts[1] if own else spec.dispatchers,
        view="own" if own else "shared",
        d=spec.d,
        service=spec.service,
        speeds=spec.speeds if spec.slow else None,
        rng=spec.seed,
        keep_response_times=keep and not own,  # the delay engine keeps no records
        options=spec.simulate_options or None,
    )


def _row(
    policy: str,
    source: str,
    mean: float,
    half: float | None,
    p99: float | None,
    messages: dict[str, float] | None,
    p0: float | None,
) -> dict[str, Any]:
    m = messages or {}
    return {
        "policy": policy,
        "source": source,
        "mean": mean,
        "half_width": half,
        "p99": p99,
        "join": m.get("join"),
        "delete": m.get("delete"),
        "probe": m.get("probe"),
        "p0": p0,
    }


def compare_one(spec: LabSpec) -> tuple[list[dict[str, Any]], dict[str, np.ndarray], LabResult]:
    """Rows (theory, simulations, live) for one policy, the CDF samples, the live result."""
    live = run_lab(spec)
    rec = live.record
    rows = []
    theory = _theory(spec)
    if theory is not None:
        rows.append(_row(spec.policy, theory["source"], theory["mean"], None, None, None, None))
    sim = _simulate(spec, spec.load, keep=True)
    rows.append(
        _row(
            spec.policy,
            "simulation",
            sim.mean_response_time,
            half_of(sim.ci95),
            sim.percentiles["p99"],
            sim.messages,
            sim.p0,
        )
    )
    carried = live.lab["achieved_load"]
    if math.isfinite(carried) and 0 < carried < 1 and abs(carried - spec.load) > 1e-3:
        at = _simulate(spec, carried, keep=False)
        rows.append(
            _row(
                spec.policy,
                "sim, carried load",
                at.mean_response_time,
                half_of(at.ci95),
                at.percentiles["p99"],
                at.messages,
                at.p0,
            )
        )
    half = half_of(rec.ci95)
    over = live.lab["overhead"]
    rows.append(
        _row(
            spec.policy,
            "live",
            rec.mean_response_time,
            half,
            rec.percentiles["p99"],
            rec.messages,
            rec.p0,
        )
    )
    rows.append(
        _row(
            spec.policy,
            "live - overhead",
            rec.mean_response_time - over,
            half,
            rec.percentiles["p99"] - over,
            rec.messages,
            rec.p0,
        )
    )
    for r in rows:
        r["load"] = spec.load if r["source"] == "simulation" or "theory" in r["source"] else carried
        r["vs simulation"] = (
            r["mean"] / sim.mean_response_time - 1 if sim.mean_response_time else None
        )
    ok = live.frame[live.frame["measured"] & (live.frame["status"] == "ok")]
    cdf = {"live - overhead": ok["latency"].to_numpy() / spec.unit - over}
    if sim.response_times is not None:  # not kept by the own-counts (delay) engine
        cdf["simulation"] = np.asarray(sim.response_times, dtype=float)
    return rows, cdf, live


def compare_lab(
    spec: LabSpec, policies: list[str], progress: Progress | None = None
) -> tuple[list[dict[str, Any]], dict[str, dict[str, np.ndarray]], list[LabResult]]:
    """:func:`compare_one` for each policy in turn (the same setting otherwise).

    ``progress``: called with the share of policies done and the one starting.
    """
    if spec.faults:
        raise ParameterError(
            "kill",
            "given",
            "none for compare (the simulator has no killed servers or lost messages: use lab run)",
        )
    specs = [replace(spec, policy=p) for p in policies]  # each spec checks its policy
    rows, cdfs, lives = [], {}, []
    for i, s in enumerate(specs):
        if progress is not None:
            fraction, counts = counted(i, len(specs), "policies")
            progress(fraction, f"{s.policy} {counts}")
        r, c, live = compare_one(s)
        rows += r
        cdfs[s.policy] = c
        lives.append(live)
    return rows, cdfs, lives


def compare_notes(spec: LabSpec, policies: list[str]) -> list[str]:
    """Say what differs between the live system and the models it is compared with."""
    notes = []
    for p in policies:
        one = replace(spec, policy=p)
        view, k = one.counts
        if view != "own" or k == 1:
            continue
        who = "each dispatcher's" if one.balancer == "lab" else f"each {one.balancer} process's"
        if one.balancer == "nginx" and one.workers > 1:
            who = (
                "each dispatcher's (its workers share a zone)"
                if one.zone
                else "each NGINX worker's (no shared zone)"
            )
        if _own_model(one):
            notes.append(
                f"{p} live decides on {who} own open requests, {k} proxies in all; the "
                "simulation does too, and the theory is its many-server limit"
            )
        else:
            notes.append(
                f"{p} live decides on {who} own open requests; with this service law or "
                "slow servers the models are the global policy (no own-counts model)"
            )
    return notes
