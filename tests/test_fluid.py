import numpy as np
import pytest

from cloudsched.dispatch import fluid_steady_state, fluid_trajectory, predict
from cloudsched.errors import ParameterError


@pytest.mark.parametrize(
    ("policy", "lam", "r", "d"),
    [
        ("jiq", 0.5, 10.0, 1),
        ("jiq", 0.9, 10.0, 1),
        ("jiq", 0.8, 2.0, 1),
        ("jiq-pod", 0.5, 10.0, 2),
        ("jiq-pod", 0.9, 10.0, 2),
        ("jiq-pod", 0.95, 5.0, 3),
        ("pod", 0.9, 10.0, 2),
        ("random", 0.7, 10.0, 1),
    ],
)
def test_ode_limit_equals_closed_form(policy, lam, r, d):
    traj = fluid_steady_state(policy, lam, r=r, d=d)
    pred = predict(policy, lam, r=r, d=d, tail_tol=1e-14)
    tail = pred.tails[0]
    n = min(tail.size, traj.tail.shape[1])
    assert traj.p0[-1] == pytest.approx(pred.p0[0], abs=1e-6)
    assert np.max(np.abs(traj.tail[-1, :n] - tail[:n])) < 1e-6
    assert traj.mean_tasks[-1] / lam == pytest.approx(pred.mean_response_time[0], abs=1e-6)


def test_mass_is_conserved_and_state_valid():
    traj = fluid_trajectory("jiq-pod", 0.9, r=10, d=2, horizon=30, initial_tasks=4)
    assert np.all(traj.tail <= 1 + 1e-9) and np.all(traj.tail >= -1e-12)
    assert np.all(np.diff(traj.tail, axis=1) <= 1e-12)  # s_i non-increasing in i
    assert np.all((traj.p0 >= 0) & (traj.p0 <= 1))
    assert traj.state.sum() == pytest.approx(1.0, abs=1e-9)


def test_recovery_after_burst_moves_towards_steady_state():
    traj = fluid_trajectory("jiq-pod", 0.9, r=10, d=2, horizon=120, initial_load=0.99)
    target = predict("jiq-pod", 0.9, r=10, d=2).mean_response_time[0] * 0.9
    gap = np.abs(traj.mean_tasks - target)
    assert gap[0] > 0.5
    assert np.all(np.diff(gap) <= 1e-9)
    assert gap[-1] < 1e-3


def test_starting_at_steady_state_stays_there():
    traj = fluid_trajectory("jiq", 0.8, r=10, horizon=10, initial_load=0.8, num_points=5)
    assert np.ptp(traj.mean_tasks) < 1e-8
    assert np.ptp(traj.p0) < 1e-8


def test_bad_input():
    with pytest.raises(ParameterError, match="policy"):
        fluid_trajectory("jsq", 0.5)
    with pytest.raises(ParameterError, match="horizon"):
        fluid_trajectory("jiq", 0.5, horizon=0)
    with pytest.raises(ParameterError, match="load"):
        fluid_trajectory("jiq", 1.2)
