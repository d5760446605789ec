"""Experiments and reports built on the public API (the demo, reproductions)."""

from cloudsched.experiments.demo import run_demo
from cloudsched.experiments.report import Report

__all__ = ["Report", "run_demo"]
