"""Names of the task-dispatch policies and what each one supports.

The canonical names are the ones used on the command line and in result records.
Integer codes are what compiled kernels receive (see :mod:`cloudsched.dispatch`).
"""

from __future__ import annotations

from cloudsched.errors import ParameterError

__all__ = [
    "MEANFIELD_POLICIES",
    "POLICIES",
    "NoMeanFieldModelError",
    "check_meanfield_policy",
    "check_policy",
]

#: Every dispatch policy the toolkit knows, in the order the seed introduces them.
POLICIES: tuple[str, ...] = (
    "random",
    "round-robin",
    "jsq",
    "pod",
    "jiq",
    "jiq-original",
    "jiq-pod",
    "jiq-threshold",
    "jiq-sq",
)

#: Policies with a mean-field model (design note ``dispatch-meanfield.md``).
MEANFIELD_POLICIES: tuple[str, ...] = ("random", "pod", "jsq", "jiq", "jiq-pod")


def check_policy(policy: str) -> str:
    """Return ``policy`` if it is a known dispatch policy, else raise :class:`ParameterError`."""
    if policy not in POLICIES:
        raise ParameterError("policy", policy, "one of " + ", ".join(POLICIES))
    return policy


def check_meanfield_policy(policy: str) -> str:
    """Return ``policy`` if it has a mean-field model; raise a clear error otherwise."""
    check_policy(policy)
    if policy not in MEANFIELD_POLICIES:
        raise NoMeanFieldModelError(policy)
    return policy


class NoMeanFieldModelError(ParameterError):
    """The policy is known, but the toolkit has no mean-field model for it."""

    verbatim = True

    def __init__(self, policy: str) -> None:
        super().__init__("policy", policy, "one of " + ", ".join(MEANFIELD_POLICIES))
        self.args = (
            f"no mean-field model for {policy}; policies with a model: "
            + ", ".join(MEANFIELD_POLICIES)
            + " (simulate it instead: cloudsched simulate)",
        )

    def __str__(self) -> str:
        return str(self.args[0])
