"""Run many independent simulations on every core (for the slow statistical tests)."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from cloudsched.dispatch import simulate


def _one(job: tuple[str, dict[str, Any], np.random.SeedSequence]) -> tuple[float, Any]:
    policy, kwargs, seq = job
    res = simulate(policy, rng=np.random.default_rng(seq), **kwargs)
    return res.mean_response_time, res.ci95


def run_seeds(policy: str, seeds: int, root: int, **kwargs: Any) -> list[tuple[float, Any]]:
    """``(mean, ci95)`` of ``seeds`` runs with streams ``SeedSequence(root).spawn(seeds)``."""
    jobs = [(policy, kwargs, seq) for seq in np.random.SeedSequence(root).spawn(seeds)]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2, mp_context=ctx) as pool:
        return list(pool.map(_one, jobs))
