import math

import numpy as np
import pytest

from cloudsched.dispatch.workload.distributions import (
    BoundedPareto,
    Deterministic,
    Empirical,
    Exponential,
    HyperExponential,
    LogNormal,
    Uniform,
    parse_spec,
)
from cloudsched.errors import ParameterError

SPECS = [
    Exponential(1.0),
    Exponential(3.0),
    Deterministic(2.0),
    Uniform(1.0),
    Uniform(5.0, 0.2),
    LogNormal(1.0, 2.0),
    LogNormal(0.5, 0.5),
    HyperExponential(1.0, 3.0),
    HyperExponential(2.0, 1.0),
    BoundedPareto(1.0, 1.5, 1000.0),
    BoundedPareto(2.0, 2.5, 100.0),
    Empirical(np.array([1.0, 2.0, 2.0, 7.0]), 1.0),
]


@pytest.mark.parametrize("dist", SPECS, ids=repr)
def test_sample_moments_match_spec(dist):
    n = 400_000
    x = dist.sample(np.random.default_rng(12345), n)
    assert x.shape == (n,) and np.all(x > 0)
    # tolerances from the CLT: 5 standard errors of the sample mean and variance
    se_mean = math.sqrt(dist.variance / n)
    assert abs(x.mean() - dist.mean) <= 5 * se_mean + 1e-12
    m4 = np.mean((x - x.mean()) ** 4)
    se_var = math.sqrt(max(m4 - x.var() ** 2, 0.0) / n)
    assert abs(x.var() - dist.variance) <= 5 * se_var + 1e-12


@pytest.mark.parametrize("dist", SPECS, ids=repr)
def test_cv_and_scaling(dist):
    other = dist.scaled(4.0)
    assert other.mean == pytest.approx(4.0)
    assert other.cv == pytest.approx(dist.cv, rel=1e-9)


def test_named_cvs():
    assert LogNormal(1.0, 2.0).cv == pytest.approx(2.0)
    assert HyperExponential(1.0, 3.0).cv == pytest.approx(3.0)
    assert Uniform(1.0).cv == pytest.approx(1 / math.sqrt(3))
    p = BoundedPareto(1.0, 1.5, 1000.0)
    assert p.low < 1.0 < p.high
    assert p.sample(np.random.default_rng(0), 10_000).max() <= 1000.0


def test_parse_spec(tmp_path):
    assert parse_spec("exp") == Exponential(1.0)
    assert parse_spec("det:mean=2") == Deterministic(2.0)
    assert parse_spec("lognormal:cv=2").cv == pytest.approx(2.0)
    assert parse_spec("h2:cv=3,mean=2").mean == 2.0
    assert parse_spec("pareto:alpha=1.5,max=1000").high == 1000.0
    sample = tmp_path / "s.txt"
    sample.write_text("1 2\n3,4\n")
    emp = parse_spec(f"empirical:{sample}")
    assert emp.mean == pytest.approx(1.0)
    assert emp.variance == pytest.approx(np.var([1, 2, 3, 4]) / 2.5**2)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("gamma", "exp, det"),
        ("lognormal:cv", "key=number"),
        ("lognormal:cv=abc", "key=number"),
        ("lognormal:cv=-1", "cv"),
        ("h2:cv=0.5", "cv"),
        ("uniform:cv=0.9", "cv"),
        ("exp:mean=0", "mean"),
        ("exp:rate=3", "unknown option"),
        ("pareto:alpha=1.5,max=0.5", "max"),
        ("empirical:/no/such/file", "readable"),
    ],
)
def test_bad_specs(spec, fragment):
    with pytest.raises(ParameterError) as exc:
        parse_spec(spec)
    assert fragment in str(exc.value)
    assert str(exc.value).startswith("--service")
