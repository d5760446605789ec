"""The laws ``check-lb`` tests: the chance of each choice given the counts, and the tests.

A law is ``(kind, d, replace)`` (:func:`parse_law`).  Given the counts an arrival saw, it
gives the chance that the chosen upstream's level is below / at a level (:func:`level_probs`
of :func:`ranks`), each upstream's chance (:func:`choice_probabilities`) and the mean
log-likelihood of a log's choices (:func:`loglik`); :func:`uniforms` draws the randomised
transform's uniforms.
"""

from __future__ import annotations

import hashlib
import re
from math import comb
from typing import Any

import numpy as np

from cloudsched.errors import ParameterError

__all__ = [
    "SLIP",
    "candidates",
    "choice_probabilities",
    "level_probs",
    "loglik",
    "parse_law",
    "ranks",
    "uniforms",
]

#: Weight of a uniform choice mixed into each law for the best fit (see ``loglik``).
SLIP = 1e-3
_LAW = re.compile(r"^(random|least-request|round-robin|jiq|wlr|least-time|ewma|pod:(\d{1,3})(r?))$")


def parse_law(text: str) -> tuple[str, int, bool]:
    """``pod:2`` -> ("pod", 2, False); ``pod:2r`` -> with replacement; others (kind, 1, _)."""
    m = _LAW.match(str(text).strip().lower())
    if m is None or (m[2] is not None and int(m[2]) < 1):
        raise ParameterError(
            "expect", text, "random, least-request, round-robin, jiq, wlr, pod:D or pod:Dr (D >= 1)"
        )
    if m[2] is not None:
        return "pod", int(m[2]), m[3] == "r"
    return m[1], 1, False


def ranks(levels: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request: upstreams below the chosen one's level, at it, and the least level."""
    c = chosen[:, None]
    return (levels < c).sum(axis=1), (levels == c).sum(axis=1), levels.min(axis=1)


def level_probs(
    law: tuple[str, int, bool], below: np.ndarray, at: np.ndarray, low_idle: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``P(<c)`` and ``P(=c)`` under ``law`` of the level ``c`` of an upstream.

    ``below`` upstreams are under ``c`` and ``at`` are at it (arrays of one shape);
    ``low_idle``: whether the least level is 0 (broadcast against them).
    """
    kind, d, replace = law
    if kind == "random":
        return below / k, at / k
    if kind in ("least-request", "jiq"):
        least = (below > 0).astype(float), (below == 0).astype(float)
        if kind == "least-request":
            return least
        # jiq: the least loaded when one is idle, else uniform
        return np.where(low_idle, least[0], below / k), np.where(low_idle, least[1], at / k)
    above_eq = k - below  # upstreams with level >= c
    above = above_eq - at  # level >= c + 1
    if replace:
        ge_c, ge_c1 = (above_eq / k) ** d, (above / k) ** d
    else:
        table = np.array([comb(a, d) for a in range(k + 1)], dtype=float) / comb(k, d)
        ge_c, ge_c1 = table[above_eq], table[above]
    return 1.0 - ge_c, ge_c - ge_c1


def loglik(law: tuple[str, int, bool], ranks: tuple[np.ndarray, ...], k: int) -> float:
    """Mean log-probability per request of choosing the upstream chosen.

    Each law is mixed with a uniform choice of weight :data:`SLIP`, so that a handful of
    requests the log cannot order (two sent within its time step) do not rule a law out.
    """
    below, at, low = ranks
    _, at_p = level_probs(law, below, at, low == 0, k)
    p = (1.0 - SLIP) * at_p / np.maximum(at, 1) + SLIP / k
    return float(np.mean(np.log(p)))


def choice_probabilities(law: tuple[str, int, bool], levels: np.ndarray) -> np.ndarray:
    """Return the probability of each upstream (columns) at each arrival (rows) under ``law``.

    Every law here breaks ties among equally loaded upstreams uniformly (the sample's
    order, NGINX's second of two, Envoy's first: all symmetric), so an upstream's chance is
    that of its level over the upstreams at it.
    """
    n, k = levels.shape
    order = np.argsort(levels, axis=1, kind="stable")
    ranked = np.take_along_axis(levels, order, axis=1)
    cols = np.broadcast_to(np.arange(k), (n, k))
    new = np.ones((n, k), dtype=bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    below = np.maximum.accumulate(np.where(new, cols, 0), axis=1)  # first of its run
    ends = np.where(np.roll(new, -1, axis=1) | (cols == k - 1), cols, k)
    last = np.minimum.accumulate(ends[:, ::-1], axis=1)[:, ::-1]  # last of its run
    at = last - below + 1
    _, p_at = level_probs(law, below, at, (ranked[:, :1] == 0), k)
    out = np.empty((n, k))
    np.put_along_axis(out, order, p_at / at, axis=1)
    return out


def uniforms(seed: int, log: Any, n: int) -> np.ndarray:
    """``n`` uniforms for the randomised transform, from ``seed`` and the log's content.

    Keyed on the log's times and upstreams as well as the seed, so that two logs never
    share the draws: with one stream per seed, a conforming log of a deterministic law
    (whose transform is the draws themselves) would get a p-value fixed by its length.
    The same log and seed give the same p-value.
    """
    digest = hashlib.sha256()
    for part in (log.sent, log.end, log.upstream):
        digest.update(np.ascontiguousarray(part).tobytes())
    key = int.from_bytes(digest.digest()[:16], "little")
    return np.random.default_rng(np.random.SeedSequence([seed, key])).random(n)


def candidates(k: int) -> list[tuple[str, str, int, bool]]:
    """Return the laws the best fit compares, as (name, kind, d, replace), for ``k``."""
    out = [("random", "random", 1, False)]
    for d in range(2, min(k, 8) + 1):  # pod:k without replacement is least-request
        out += [(f"pod:{d}", "pod", d, False)] if d < k else []
        out += [(f"pod:{d}r", "pod", d, True)]
    return [*out, ("least-request", "least-request", 1, False), ("jiq", "jiq", 1, False)]
