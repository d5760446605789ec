"""Task dispatch in server farms: mean-field predictions, fluid trajectories, simulation.

Policies (see :mod:`cloudsched.dispatch.policies`): ``random``, ``round-robin``, ``jsq``,
``pod``, ``jiq``, ``jiq-original``, ``jiq-pod``, ``jiq-threshold``, ``jiq-sq``, and any
plug-in (:func:`register_policy`, written against :mod:`cloudsched.dispatch.view`).
"""

from cloudsched.dispatch import view
from cloudsched.dispatch.plugin import PluginError, Policy, hook, register_policy
from cloudsched.dispatch.policies import (
    MEANFIELD_POLICIES,
    POLICIES,
    NoMeanFieldModelError,
    get_policy,
    policy_table,
)
from cloudsched.dispatch.result import SimulationResult
from cloudsched.dispatch.simulation import run_simulation, simulate
from cloudsched.dispatch.spec import SimulationSpec
from cloudsched.dispatch.theory.fluid import FluidTrajectory, fluid_steady_state, fluid_trajectory
from cloudsched.dispatch.theory.meanfield import (
    MeanFieldPrediction,
    check_prediction,
    iqueue_distribution,
    jiq_p0,
    tail_probabilities,
)
from cloudsched.dispatch.theory.prediction import predict

__all__ = [
    "MEANFIELD_POLICIES",
    "POLICIES",
    "FluidTrajectory",
    "MeanFieldPrediction",
    "NoMeanFieldModelError",
    "PluginError",
    "Policy",
    "SimulationResult",
    "SimulationSpec",
    "check_prediction",
    "fluid_steady_state",
    "fluid_trajectory",
    "get_policy",
    "hook",
    "iqueue_distribution",
    "jiq_p0",
    "policy_table",
    "predict",
    "register_policy",
    "run_simulation",
    "simulate",
    "tail_probabilities",
    "view",
]
