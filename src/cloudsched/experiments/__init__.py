"""Experiments and reports built on the public API: sweeps, reproductions, the demo."""

from cloudsched.experiments.demo import run_demo
from cloudsched.experiments.report import Report
from cloudsched.experiments.reproduce import reproduce, reproduce_dgp, reproduce_jiq
from cloudsched.experiments.sweep import load_results, load_spec, run_sweep

__all__ = ["Report", "load_results", "load_spec", "reproduce", "reproduce_dgp", "reproduce_jiq",
           "run_demo", "run_sweep"]
