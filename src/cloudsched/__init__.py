"""cloudsched: choose and tune schedulers for cloud services by analysis and simulation.

The package covers two systems:

* task dispatch in server farms (:mod:`cloudsched.dispatch`): JIQ, JIQ-Pod(d), Pod(d),
  Random, JSQ and their variants, with mean-field predictions and simulation;
* graph-job placement for stream processing (:mod:`cloudsched.placement`).
"""

from importlib.metadata import PackageNotFoundError, version

from cloudsched.errors import ParameterError

try:
    __version__ = version("cloudsched")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["ParameterError", "__version__"]
