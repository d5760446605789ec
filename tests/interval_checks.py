"""Checks that a set of 95% intervals is honest, with the power of coverage counting from
fewer runs (for the slow statistical tests).

Counting covered intervals uses one bit of each run; the standardised error of each run,
``z = (mean - truth) / se`` with ``se`` the half-width over the interval's t quantile,
uses all of it.  Under an honest procedure the ``z`` are Student's t with the interval's
degrees of freedom (mapped here to standard normals through their distribution function),
so their sum of squares is chi-square with one degree of freedom per run; intervals a
fifth too narrow (88% coverage) or a bias of a fifth of a standard error inflate it.

Power, for equal false alarms: 60 runs with at least 56 covered (the rule this replaced)
pass an honest procedure with probability 0.82 and intervals a fifth too narrow with
probability 0.14.  The sum of squares of 40 runs against chi-square's 0.82 quantile passes
an honest procedure with probability 0.82 and the narrow one with probability 0.15, and a
bias of half a standard error with probability 0.46 (where coverage counting barely
moves): about the same strength against narrow intervals, more against bias, from two
thirds of the runs.  A coverage floor (the binomial 0.1% quantile)
is kept beside it, against a few wild intervals that the sum would average away.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import binom, chi2, norm, t

#: False-alarm probability of the sum-of-squares check (that of the coverage rule it
#: replaced: at least 56 of 60, which an honest procedure fails with probability 0.18).
FALSE_ALARM = 0.18


def check_intervals(
    runs: Sequence[tuple[float, tuple[float, float] | None]],
    truths: float | Sequence[float],
    *,
    dof: int = 19,
    truth_se: float | Sequence[float] = 0.0,
) -> tuple[int, float, float]:
    """Assert that the intervals of ``runs`` (``(mean, ci95)``) are honest about ``truths``.

    ``dof``: the degrees of freedom of the intervals' t quantile (20 batches: 19);
    ``truth_se``: the reference's own standard error, added in quadrature.  Returns
    ``(covered, statistic, limit)`` for messages.
    """
    k = len(runs)
    assert all(ci is not None for _, ci in runs), "a run gave no interval"
    means = np.array([m for m, _ in runs])
    lo = np.array([ci[0] for _, ci in runs])  # type: ignore[index]
    hi = np.array([ci[1] for _, ci in runs])  # type: ignore[index]
    truth = np.broadcast_to(np.asarray(truths, dtype=float), (k,))
    ref_se = np.broadcast_to(np.asarray(truth_se, dtype=float), (k,))
    covered = int(np.sum((lo <= truth) & (truth <= hi)))
    se = (hi - lo) / 2 / t.ppf(0.975, dof)
    z = (means - truth) / np.sqrt(se**2 + ref_se**2)
    u = norm.ppf(t.cdf(z, dof))
    statistic = float(np.sum(u**2))
    limit = float(chi2.ppf(1 - FALSE_ALARM, k))
    floor = binom.ppf(0.001, k, 0.95)
    assert covered >= floor, f"{covered} of {k} intervals cover (at least {floor:g} expected)"
    assert statistic <= limit, (
        f"standardised errors spread too wide: sum of squares {statistic:.1f} > {limit:.1f} "
        f"({covered} of {k} cover)"
    )
    return covered, statistic, limit
