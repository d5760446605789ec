"""The table of dispatch policies: the built-in ones and the plug-ins loaded so far.

A policy is named by its registered name (``jiq-pod``) or, for a plug-in, by the file that
defines it and its name, ``path/to/policy.py:NAME`` (``path.py`` alone when the file
registers one policy).  :func:`get_policy` resolves either to a
:class:`~cloudsched.dispatch.plugin.Policy`, which says what the policy needs (dispatchers,
``d``, a threshold, I-queues) and which mean-field model describes it.
"""

from __future__ import annotations

from cloudsched.dispatch import (
    balancers,  # noqa: F401  (registers the production balancers)
    builtin_policies,  # noqa: F401  (registers the built-ins)
)
from cloudsched.dispatch.plugin import PluginError, Policy, load_plugin, registered
from cloudsched.errors import ParameterError
from cloudsched.policy_table import (
    TABLE,
    NoMeanFieldModelError,
    check_meanfield_policy,
    with_capability,
)

__all__ = [
    "MEANFIELD_POLICIES",
    "POLICIES",
    "NoMeanFieldModelError",
    "check_meanfield_policy",
    "get_policy",
    "policy_table",
]

#: The built-in dispatch policies, in the order the paper introduces them.
POLICIES: tuple[str, ...] = tuple(registered())

#: Built-in policies with a closed-form mean field, which plug-ins may borrow (the model
#: table, :mod:`cloudsched.policy_table`; design note ``dispatch-meanfield.md``).
MEANFIELD_POLICIES: tuple[str, ...] = with_capability("closed_form")


def _split(ref: str) -> tuple[str, str | None]:
    """``path.py:NAME`` -> (path, NAME); ``path.py`` -> (path, None)."""
    head, sep, tail = ref.rpartition(":")
    if sep and head.endswith(".py"):
        return head, tail
    return ref, None


def get_policy(ref: str | Policy) -> Policy:
    """Return the policy named ``ref``: a registered name or ``path/to/policy.py[:NAME]``.

    Raises
    ------
    ParameterError
        For an unknown name; :class:`~cloudsched.dispatch.plugin.PluginError` (a
        ParameterError) for a plug-in file that cannot be loaded or lacks ``NAME``.
    """
    if isinstance(ref, Policy):
        return ref
    if not isinstance(ref, str):
        raise ParameterError("policy", ref, "a policy name or path/to/policy.py:NAME")
    table = registered()
    if ref in table:
        return table[ref]
    path, name = _split(ref)
    if not path.endswith(".py"):
        raise ParameterError(
            "policy", ref, "one of " + ", ".join(POLICIES) + ", or a plug-in path/to/policy.py:NAME"
        )
    names = load_plugin(path)
    if name is None:
        if len(names) != 1:
            raise PluginError(
                ref, f"the file registers {len(names)} policies ({', '.join(names)}): add :NAME"
            )
        name = names[0]
    if name not in names:
        raise PluginError(
            ref, f"the file registers no policy {name!r} (it registers {', '.join(names)})"
        )
    return registered()[name]


def policy_table() -> list[dict[str, object]]:
    """One row per registered policy: name, description, what it needs, the engines it runs on.

    A built-in's engines are its row of :mod:`cloudsched.policy_table`; a plug-in runs on
    the per-server engine (its hooks).
    """
    return [
        {
            "policy": p.name,
            "description": p.description,
            "dispatchers": p.dispatchers,
            "d": p.d or "",
            "threshold": p.threshold,
            "iqueues": p.iqueues,
            "mean_field": p.meanfield or "",
            "engines": ", ".join(TABLE[p.name].engines if p.builtin else ("servers",)),
            "source": p.source or "built-in",
        }
        for p in registered().values()
    ]
