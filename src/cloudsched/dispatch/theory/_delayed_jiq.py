"""The right-hand side of the ``join``-delay mean field (``jiq``, ``jiq-pod``), compiled.

The equations are those of :mod:`cloudsched.dispatch.theory.delayed` (its module notes): busy
levels ``q_1..q_K``, listed idle servers ``y_1..y_J`` by the size of their I-queue, the idle
servers whose join is on its way ``f``, and ``H``, the integral of the rate at which such a
server gets a fallback task.  Compiled because the method of steps calls it four times a step
over thousands of time units.
"""

from __future__ import annotations

import math

from cloudsched._jit import kernel

__all__ = ["jiq_rhs"]


@kernel(nrt=False, entry=True, label="the delayed JIQ mean field")
def jiq_rhs(x, then, dx, lam, r, d, levels, jl):
    """Write the derivative of ``x`` into ``dx`` (``then``: ``q1`` and ``H`` a delay ago)."""
    q1_then, h_then = then
    f = x[levels + jl]
    big_h = x[levels + jl + 1]
    land = q1_then * math.exp(-(big_h - h_then))  # joins sent a delay ago whose server stayed idle
    listed = 0.0
    for j in range(jl):
        listed += r * x[levels + j] / (j + 1.0)
    p0 = max(0.0, 1.0 - listed)
    s1 = 0.0
    for i in range(levels):
        s1 += x[i]
    kappa = 0.0
    power = 1.0
    for _ in range(d):
        kappa += power
        power *= s1
    hit_rate = lam * p0 * kappa  # a fallback task to one idle server
    for i in range(levels + jl + 2):
        dx[i] = 0.0
    # busy levels: pod(d) fallback moves level i to i + 1 (i = 1..K-1), service i to i - 1
    above = s1
    for i in range(levels - 1):
        nxt = above - x[i]  # s_{i+2}
        up = lam * p0 * (above**d - nxt**d)
        dx[i] -= up
        dx[i + 1] += up
        dx[i] += x[i + 1]
        dx[i + 1] -= x[i + 1]
        above = nxt
    dx[0] -= x[0]  # level 1 empties: idle, its join on its way
    hits = hit_rate * f
    for j in range(jl):
        y = x[levels + j]
        size = j + 1.0
        hit = y * (hit_rate + lam * r / size)
        hits += hit
        dx[levels + j] -= hit
        into = p0 if j == 0 else r * x[levels + j - 1] / j  # a join lands in a queue of j
        dx[levels + j] += land * into
        if j + 1 < jl:
            grow = y * r * land  # the others of a queue of size j + 1 when one joins
            shrink = x[levels + j + 1] * size * (hit_rate + lam * r / (size + 1.0))
            dx[levels + j] += shrink - grow
            dx[levels + j + 1] += grow - shrink
        else:
            dx[levels + j] += land * r * y / size  # joins beyond J fold into J
    dx[0] += hits
    dx[levels + jl] = x[0] - land - hit_rate * f
    dx[levels + jl + 1] = hit_rate
