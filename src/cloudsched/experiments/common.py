"""What the reproductions share: their sizes, the sweep runner and interval helpers."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cloudsched.errors import check_choice
from cloudsched.experiments.sweep import parse_spec, run_sweep

__all__ = [
    "CITATIONS",
    "LEVELS",
    "Setting",
    "ci_half",
    "half_width",
    "mean_points",
    "run_grid",
    "size_of",
]

#: The two papers whose figures and tables are reproduced ("Figure 4" means theirs).
CITATIONS = {
    "jiq": 'Chunpu Wang, Chen Feng and Julian Cheng, "Distributed Join-the-Idle-Queue for '
    'Low Latency Cloud Services", IEEE/ACM Transactions on Networking, 2018',
    "dgp": 'Javad Ghaderi, Sanjay Shakkottai and R. Srikant, "Scheduling Storms and Streams '
    'in the Cloud", ACM SIGMETRICS 2015',
}

#: Sizes of a reproduction: the demo's, ``--quick`` and the full one.
LEVELS = ("demo", "quick", "full")

_SIZES: dict[str, dict[str, Any]] = {
    "demo": {
        "precision": 0.03,
        "max_tasks": 20_000_000,
        "loads": [0.3, 0.6, 0.8, 0.9, 0.95],
        "ns": [100, 1000, 10_000],
        "trace_loads": [0.58, 0.78, 0.96],
        "dgp_horizon": 50_000.0,
        "mw_horizon": 500.0,
        "frames": [0.1, 0.3, 1.0, 3.0, 10.0],
        "alphas": [0.002],
        "betas": [0.8, 0.4, 0.2, 0.1, 0.05],
    },
    "quick": {
        "precision": 0.015,
        "max_tasks": 20_000_000,
        "loads": [0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95],
        "ns": [100, 300, 1000, 3000, 10_000, 30_000, 100_000],
        "trace_loads": [0.58, 0.68, 0.78, 0.88, 0.96],
        "dgp_horizon": 200_000.0,
        "mw_horizon": 2000.0,
        "frames": [0.1, 0.3, 1.0, 3.0, 10.0],
        "alphas": [0.001, 0.002, 0.004],
        "betas": [0.8, 0.4, 0.2, 0.1, 0.05],
    },
    "full": {
        "precision": 0.005,
        "max_tasks": 500_000_000,
        "loads": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98],
        "ns": [100, 300, 1000, 3000, 10_000, 30_000, 100_000],
        "trace_loads": [0.58, 0.64, 0.7, 0.76, 0.82, 0.88, 0.92, 0.96],
        "dgp_horizon": 1_000_000.0,
        "mw_horizon": 20_000.0,
        "frames": [0.1, 0.3, 1.0, 3.0, 10.0, 30.0],
        "alphas": [0.001, 0.002, 0.004],
        "betas": [1.6, 0.8, 0.4, 0.2, 0.1, 0.05, 0.025],
    },
}


def size_of(level: str) -> dict[str, Any]:
    """Return the grid sizes and run lengths of ``level`` (one of :data:`LEVELS`)."""
    return _SIZES[check_choice("level", level, LEVELS)]


def run_grid(
    out_dir: Path, name: str, s: Setting, kind: str, fixed: dict[str, Any], grid: dict[str, Any]
) -> pd.DataFrame:
    """Run (or resume) one sweep under ``out_dir/sweeps/name`` and return its rows.

    One replication of ``kind`` at each point of ``grid`` (with ``fixed``), on ``s.workers``
    workers, from seed ``s.seed``.  ``param.*`` columns lose their prefix (dropped where a
    result column holds the same).
    """
    doc = {"kind": kind, "seed": s.seed, "replications": 1, "fixed": fixed, "grid": grid}
    spec = parse_spec(doc, f"reproduce:{name}", str(out_dir))
    df = run_sweep(spec, out_dir / "sweeps" / name, workers=s.workers, resume=True)
    for c in [c for c in df.columns if c.startswith("param.")]:
        key = c[len("param.") :]
        df = df.drop(columns=c) if key in df.columns else df.rename(columns={c: key})
    return df


def ci_half(df: pd.DataFrame) -> np.ndarray:
    """Half-widths of the dispatch rows' ``ci95_low``/``ci95_high`` (NaN where withheld)."""
    return ((df["ci95_high"] - df["ci95_low"]) / 2).to_numpy(dtype=float)


def mean_points(df: pd.DataFrame, by: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Return load, mean response time and its half-width per value of column ``by``."""
    return {
        str(lab): (g["load"].to_numpy(), g["mean_response_time"].to_numpy(), ci_half(g))
        for lab, g in df.groupby(by, sort=False)
    }


def half_width(df: pd.DataFrame, name: str) -> np.ndarray:
    """Return the 95% half-width of placement column ``name`` (NaN where withheld)."""
    return (df[f"{name}_ci95_high"] - df[name]).to_numpy(dtype=float)


@dataclass(frozen=True)
class Setting:
    """How big, on how many workers, from which root seed.

    ``size`` is one level's entry of :mod:`~cloudsched.experiments.common`.
    """

    size: dict[str, Any]
    workers: int
    seed: int

    def offset(self, k: int) -> Setting:
        """Return the same setting from root seed ``seed + k`` (one per grid of a figure)."""
        return replace(self, seed=self.seed + k)

    @property
    def run(self) -> dict[str, Any]:
        """The run-length arguments of every simulation."""
        return {"precision": self.size["precision"], "max_tasks": self.size["max_tasks"]}

    @property
    def length(self) -> str:
        """The run length in words, for captions."""
        return (
            f"each run until its 95% interval is within {self.size['precision']:.1%} of "
            f"the mean (at most {self.size['max_tasks']:,} tasks)"
        )
