"""The demo's opening: the README's three questions, answered on a small example.

Which policy for a farm (``compare``), which choice count a power-of-d balancer needs
(``advise``), and where running Storm topologies should go (``place static``), each on a
small built-in example, with the command that asks it of one's own numbers.  The same
functions the commands call; the numbers are this run's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cloudsched.experiments.report import Report

__all__ = ["question_sections"]

#: The small examples: a farm of 100 servers at load 0.9; Storm's three storm-starter
#: topologies on eight supervisors of 24 executors (the README's).
SERVERS, LOAD, R = 100, 0.9, 10.0
CLUSTER = "8x24"
TOPOLOGIES = ("wordcount", "exclamation", "rolling-top-words")


def _interval(row: dict[str, Any], name: str) -> dict[str, Any]:
    """``name`` and its 95% interval as the report's tables show them."""
    return {
        name: row["mean_response_time"],
        f"{name}_ci95_low": row["ci95_low"],
        f"{name}_ci95_high": row["ci95_high"],
    }


def _policy(report: Report, seed: int) -> None:
    from cloudsched.experiments.compare import compare

    report.heading("Which policy for my farm?")
    pairs = compare(["jiq", "jiq-pod", "pod"], [LOAD], servers=SERVERS, rs=[R], seed=seed)
    rows = [
        {
            "policy": row["policy"],
            "d": row["d"],
            "mean field T": row["meanfield_T"],
            **_interval(row, "simulated T"),
            "p99": row["p99"],
            "messages per task": row["messages_per_task"],
        }
        for row, _ in pairs
    ]
    df = pd.DataFrame(rows)
    best = df.loc[df["simulated T"].idxmin()]
    report.table(
        df,
        "question-policy.csv",
        f"{SERVERS} servers at load {LOAD:g}, one dispatcher per {R:g} servers (JIQ's "
        "I-queues): mean response time by the mean field (N = inf) and simulated with its "
        "95% interval, p99, and messages per task, in mean service times.",
    )
    report.text(
        f"Here {best['policy']} has the shortest mean ({best['simulated T']:.3g}). On your "
        "own farm: `cloudsched compare jiq jiq-pod pod --servers N --r 10 --load L` "
        "(repeat `--load`, add policies, or `--trace LOG` to replay your own arrivals)."
    )


def _choices(report: Report, seed: int) -> None:
    from cloudsched.experiments.advise import advise

    report.heading("Which choice count does my power-of-d balancer need?")
    res = advise(servers=SERVERS, load=LOAD, tolerance=0.1, seed=seed)  # as the command
    rows = [
        {
            "d": "full scan" if r["full_scan"] else r["d"],
            "sampling": "with replacement" if r["with_replacement"] else "without",
            "p99": r["metric"],
            "p99_ci95_low": r["metric_low"],
            "p99_ci95_high": r["metric_high"],
            "mean": r["mean_response_time"],
        }
        for r in res.rows
    ]
    report.table(
        pd.DataFrame(rows),
        "question-choices.csv",
        f"pod(d) on {SERVERS} servers at load {LOAD:g}: p99 with its 95% interval and mean "
        "response time for each d tried, beside the full scan (least requests over all).",
    )
    scan = res.full_scan
    if res.recommended is not None:
        r = res.recommended
        sampling = "with" if r["with_replacement"] else "without"
        advice = (
            f"d = {r['d']} {sampling} replacement is the smallest d whose p99 "
            f"({r['metric']:.4g}, 95% interval up to {r['metric_high']:.4g}) is certified "
            f"within {res.tolerance:.0%} of the full scan's ({scan['metric']:.4g})"
        )
    else:
        advice = f"no d tried is certified within {res.tolerance:.0%} of the full scan"
    report.text(
        f"Advice: {advice}. On your own balancer: `cloudsched advise --servers N --load L` "
        "(`--target 5` for a p99 goal, `--metric mean`)."
    )


def _placement(report: Report) -> None:
    from cloudsched.data import flux_path
    from cloudsched.placement.cluster import cluster_from_text
    from cloudsched.placement.flux import load_flux
    from cloudsched.placement.static import BASELINES, place_baseline, place_static

    report.heading("Where should my running Storm topologies go?")
    cl = cluster_from_text(CLUSTER, None, None)
    tops = [load_flux(flux_path(t), traffic="grouping", ackers="storm") for t in TOPOLOGIES]
    best = place_static(cl, tops, solver="auto", time_limit=60.0)
    runs = [best, *(place_baseline(cl, tops, b, 4) for b in BASELINES)]
    rows = [
        {
            "scheduler": p.policy,
            "placed": f"{p.placed}/{len(tops)}",
            "traffic cost": p.cost,
            "machines": len({int(x) for m in p.machines if m is not None for x in m}),
            "lower bound": best.lower_bound,
        }
        for p in runs
    ]
    report.table(
        pd.DataFrame(rows),
        "question-placement.csv",
        f"Storm's storm-starter topologies ({', '.join(TOPOLOGIES)}) on {CLUSTER} (eight "
        "supervisors of 24 executors): traffic across machines of the optimised placement "
        "and of Storm's EvenScheduler and ResourceAwareScheduler, with the lower bound.",
    )
    proof = "proven optimal" if best.proven else f"within {best.gap:.1%} of the lower bound"
    ratios = ", ".join(
        f"{p.policy} {p.cost / best.cost:.2f} times" for p in runs[1:] if best.cost > 0
    )
    report.text(
        f"The optimised placement costs {best.cost:.4g} ({proof}); {ratios} that. For your "
        "own topologies: `cloudsched place static --cluster MxS --topology your.flux.yaml "
        "--assignment placement.json`, which the shipped Storm scheduler applies "
        "(`cloudsched place storm-scheduler`)."
    )


def question_sections(report: Report, out_dir: Path, seed: int) -> None:
    """Append the three questions' sections (module notes) to ``report``."""
    del out_dir  # tables only: their CSVs go where the report writes them
    _policy(report, seed)
    _choices(report, seed + 1)
    _placement(report)
