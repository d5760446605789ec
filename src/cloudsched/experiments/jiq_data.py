"""The data behind the JIQ paper's tables and figures that need more than a sweep.

Figure 4 and its table (mean field), Figure 5 and Table II (prediction against
simulation), and the Google trace replays of Figures 9 and 10.  The paper: Chunpu Wang,
Chen Feng and Julian Cheng, "Distributed Join-the-Idle-Queue for Low Latency Cloud
Services" (under ``shared/seeds`` in the checkout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from cloudsched.dispatch.result import SimulationResult
from cloudsched.dispatch.simulation import simulate
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.dispatch.workload.traces import read_trace
from cloudsched.experiments.trace_replay import TRACE_POLICIES, replay
from cloudsched.results import interval_columns

__all__ = [
    "FIGURE4_CURVES",
    "GOOGLE_PART",
    "TRACE_POLICIES",
    "figure4_data",
    "figure4_table",
    "figure5_data",
    "find_google_part",
    "table2_data",
    "trace_cdf_data",
    "trace_load_data",
]

#: (label, policy, d) of the curves of the paper's Figure 4.
FIGURE4_CURVES = (
    ("Random", "random", 1),
    ("Pod(2)", "pod", 2),
    ("JIQ", "jiq", 1),
    ("JIQ-Pod(2)", "jiq-pod", 2),
)


def figure4_data(r: float = 10.0, loads: np.ndarray | None = None) -> pd.DataFrame:
    """Mean-field T against load for the four policies of Figure 4 (tidy frame)."""
    grid = np.linspace(0.02, 0.98, 49) if loads is None else np.asarray(loads, dtype=float)
    frames = []
    for label, policy, d in FIGURE4_CURVES:
        pred = predict(policy, grid, r=r, d=d)
        frames.append(
            pd.DataFrame(
                {
                    "policy": label,
                    "load": pred.loads,
                    "p0": pred.p0,
                    "mean_response_time": pred.mean_response_time,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def figure4_table(r: float = 10.0, loads: ArrayLike = (0.5, 0.9, 0.98)) -> pd.DataFrame:
    """Tabulate p0 and T per policy at a few loads (the design note's table)."""
    jiq = predict("jiq", loads, r=r)
    jiq_pod = predict("jiq-pod", loads, r=r, d=2)
    pod = predict("pod", loads, d=2)
    rnd = predict("random", loads)
    share = jiq.delete_rate / (jiq.delete_rate + jiq.join_rate)
    return pd.DataFrame(
        {
            "load": jiq.loads,
            "JIQ p0": jiq.p0,
            "JIQ T": jiq.mean_response_time,
            "JIQ-Pod(2) T": jiq_pod.mean_response_time,
            "Pod(2) T": pod.mean_response_time,
            "Random T": rnd.mean_response_time,
            "JIQ delete share": share,
        }
    )


def _paper_run(
    policy: str,
    load: float,
    servers: int,
    r: float,
    precision: float,
    max_tasks: int,
    seed: np.random.SeedSequence,
) -> SimulationResult:
    """One of the paper's runs (d = 2) until its interval is within ``precision``."""
    rng = np.random.default_rng(seed)
    kw: dict[str, Any] = {"precision": precision, "max_tasks": max_tasks}
    return simulate(policy, servers=servers, r=r, load=load, d=2, rng=rng, **kw)


def figure5_data(
    seed: int,
    servers: int = 1000,
    r: float = 10.0,
    precision: float = 0.01,
    max_tasks: int = 20_000_000,
) -> pd.DataFrame:
    """Predicted and simulated T against load for JIQ and JIQ-Pod(2) (one row per point).

    Each simulation runs until its 95% interval is within ``precision`` of its mean (at most
    ``max_tasks`` arrivals); points without a certified interval have NaN bounds.
    """
    loads = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)
    policies = (("JIQ", "jiq"), ("JIQ-Pod(2)", "jiq-pod"))
    streams = iter(np.random.SeedSequence(seed).spawn(len(loads) * len(policies)))
    rows = []
    for label, policy in policies:
        pred = predict(policy, loads, r=r, d=2)
        for k, lam in enumerate(loads):
            res = _paper_run(policy, lam, servers, r, precision, max_tasks, next(streams))
            low, high = res.ci95 if res.ci95 else (np.nan, np.nan)
            rows.append(
                {
                    "policy": label,
                    "load": lam,
                    "predicted": float(pred.mean_response_time[k]),
                    "simulated": res.mean_response_time,
                    "ci95_low": low,
                    "ci95_high": high,
                    "relative_error": res.mean_response_time / pred.mean_response_time[k] - 1,
                    "measured_tasks": res.measured_tasks,
                }
            )
    return pd.DataFrame(rows)


def table2_data(
    seed: int,
    servers: int = 500,
    r: float = 10.0,
    load: float = 0.9,
    precision: float = 0.01,
    max_tasks: int = 20_000_000,
) -> pd.DataFrame:
    """Predicted and simulated occupancy q_i (fraction of servers with i tasks), i = 0..5."""
    streams = iter(np.random.SeedSequence(seed).spawn(2))
    rows = []
    for label, policy in (("JIQ", "jiq"), ("JIQ-Pod(2)", "jiq-pod")):
        pred = predict(policy, [load], r=r, d=2, tail_tol=1e-300).occupancy(0)
        res = _paper_run(policy, load, servers, r, precision, max_tasks, next(streams))
        for i in range(6):
            q_pred = float(pred[i]) if i < pred.size else 0.0
            q_sim = res.occupancy[i] if i < len(res.occupancy) else 0.0
            rows.append(
                {
                    "policy": label,
                    "i": i,
                    "q_i predicted": q_pred,
                    "q_i simulated": q_sim,
                    "relative_error": q_sim / q_pred - 1 if q_pred > 0 else float("nan"),
                }
            )
    return pd.DataFrame(rows)


#: The Google trace part replayed by the reproductions (it ships with the package).
GOOGLE_PART = "google2011-sample"


def find_google_part() -> Path:
    """Return the installed file of the shipped Google trace part (``google2011-sample``)."""
    from cloudsched.data import dataset_path

    return dataset_path(GOOGLE_PART)


def trace_cdf_data(
    seed: int, path: Path, servers: int = 4000, r: float = 10.0, load: float = 0.88
) -> tuple[dict[str, np.ndarray], pd.DataFrame, float]:
    """Replay a Google trace part under the five policies of :data:`TRACE_POLICIES`.

    Returns the response times per policy, a summary table, and the load that the trace's
    own times would put on ``servers`` servers.
    """
    trace = read_trace(path, "google2011").trace
    samples, rows = {}, []
    for label, _, res in replay(
        trace, [load], seed=seed, servers=servers, r=r, keep_response_times=True
    ):
        assert res.response_times is not None
        samples[label] = res.response_times
        rows.append(
            {
                "policy": label,
                "mean (s)": res.mean_response_time,
                **{f"{k} (s)": v for k, v in res.percentiles.items()},
            }
        )
    native = float(trace.services.sum() / trace.span / servers)
    return samples, pd.DataFrame(rows), native


def trace_load_data(seed: int, part: Path, loads: list[float], servers: int = 4000) -> pd.DataFrame:
    """Mean response time of the five policies on the replayed trace at several loads."""
    trace = read_trace(part, "google2011").trace
    rows = []
    for label, lam, res in replay(trace, loads, seed=seed, servers=servers):
        rows.append(
            {
                "policy": label,
                "load": lam,
                "mean_response_time": res.mean_response_time,
                **interval_columns(res.ci95),
                "p99": res.percentiles.get("p99", float("nan")),
                "steady_state": res.steady_state,
                "log_span": res.log_span,
            }
        )
    return pd.DataFrame(rows)
