"""cloudsched: choose and tune schedulers for cloud services by analysis and simulation.

The package covers two systems:

* task dispatch in server farms (:mod:`cloudsched.dispatch`): JIQ, JIQ-Pod(d), Pod(d),
  Random, JSQ and their variants, with mean-field predictions and simulation;
* graph-job placement for stream processing (:mod:`cloudsched.placement`).
"""

from cloudsched.errors import ParameterError

__all__ = ["ParameterError", "__version__"]


def __getattr__(name: str) -> str:
    """Read ``__version__`` from the installed metadata when first asked for.

    Importing importlib.metadata would cost every command 15 ms.
    """
    if name != "__version__":
        raise AttributeError(f"module 'cloudsched' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("cloudsched")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        value = "0.0.0"
    globals()["__version__"] = value
    return value
