"""The scipy-free quantiles behind every interval agree with scipy's."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from cloudsched._quantiles import normal_quantile, t_quantile


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5000), st.floats(1e-6, 1 - 1e-6))
def test_t_quantile_agrees_with_scipy(nu, p):
    expected = float(special.stdtrit(nu, p))
    assert t_quantile(p, nu) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("nu", [1, 2, 3, 4, 5, 9, 10, 19, 20, 99, 100])
def test_t_quantiles_of_the_intervals(nu):
    for p in (0.9, 0.95, 0.975, 0.995, 0.9995):
        assert t_quantile(p, nu) == pytest.approx(float(special.stdtrit(nu, p)), rel=1e-12)
        assert t_quantile(1 - p, nu) == pytest.approx(-t_quantile(p, nu), rel=1e-12)


def test_normal_quantile_and_bad_arguments():
    assert normal_quantile(0.975) == pytest.approx(float(special.ndtri(0.975)), rel=1e-14)
    assert t_quantile(0.5, 7) == 0.0
    assert math.isclose(t_quantile(0.975, 10**6), normal_quantile(0.975), rel_tol=1e-5)
    with pytest.raises(ValueError, match="p must be"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="nu must be"):
        t_quantile(0.9, 0)
