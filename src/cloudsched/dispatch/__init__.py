"""Task dispatch in server farms: mean-field predictions, fluid trajectories, simulation.

Policies (see :mod:`cloudsched.dispatch.policies`): ``random``, ``round-robin``, ``jsq``,
``pod``, ``jiq``, ``jiq-original``, ``jiq-pod``, ``jiq-threshold``, ``jiq-sq``.
"""

from cloudsched.dispatch.fluid import FluidTrajectory, fluid_steady_state, fluid_trajectory
from cloudsched.dispatch.meanfield import (
    MeanFieldPrediction,
    check_prediction,
    iqueue_distribution,
    jiq_p0,
    predict,
    tail_probabilities,
)
from cloudsched.dispatch.plan import SimulationPlan, plan_simulation
from cloudsched.dispatch.policies import (
    MEANFIELD_POLICIES,
    POLICIES,
    NoMeanFieldModelError,
)
from cloudsched.dispatch.simulation import SimulationResult, simulate

__all__ = [
    "MEANFIELD_POLICIES",
    "POLICIES",
    "FluidTrajectory",
    "MeanFieldPrediction",
    "NoMeanFieldModelError",
    "SimulationPlan",
    "SimulationResult",
    "check_prediction",
    "fluid_steady_state",
    "fluid_trajectory",
    "iqueue_distribution",
    "jiq_p0",
    "plan_simulation",
    "predict",
    "simulate",
    "tail_probabilities",
]
