"""Experiments and reports built on the public API: sweeps, reproductions, the demo.

The names below load on first use (PEP 562): the demo and the reports import pandas and
matplotlib, which a command that only simulates should not pay for.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "run_demo": "cloudsched.experiments.demo",
    "Report": "cloudsched.experiments.report",
    "reproduce": "cloudsched.experiments.reproduce",
    "reproduce_dgp": "cloudsched.experiments.reproduce",
    "reproduce_jiq": "cloudsched.experiments.reproduce",
    "load_results": "cloudsched.experiments.sweep",
    "load_spec": "cloudsched.experiments.sweep",
    "run_sweep": "cloudsched.experiments.sweep",
}

__all__ = [
    "Report",
    "load_results",
    "load_spec",
    "reproduce",
    "reproduce_dgp",
    "reproduce_jiq",
    "run_demo",
    "run_sweep",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'cloudsched.experiments' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
