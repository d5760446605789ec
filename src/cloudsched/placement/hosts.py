"""Host names of a cluster's machines: what Storm's supervisors report as their host."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from cloudsched.errors import InputError, ParameterError

__all__ = ["check_hosts", "group_hosts"]

_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._:-]{0,252})?")


def check_hosts(hosts: Sequence[str], machines: int, where: str = "--hosts") -> list[str]:
    """Return the host names, one per machine, after checking they can name supervisors."""
    names = [str(h).strip() for h in hosts]
    if len(names) != machines:
        raise ParameterError(where, len(names), f"{machines} host names, one per machine")
    for h in names:
        if not _HOST.fullmatch(h):
            raise ParameterError(
                where, h, "host names of letters, digits, '.', '-', '_' and ':' (at most 253)"
            )
    if len(set(names)) != len(names):
        dup = next(h for h in names if names.count(h) > 1)
        raise ParameterError(where, dup, "distinct host names (one supervisor each)")
    return names


def group_hosts(groups: list[Any], where: str) -> tuple[str, ...] | None:
    """Each machine's host name from the groups' ``hosts`` lists (all groups or none)."""
    named = ["hosts" in g for g in groups]
    if not any(named):
        return None
    if not all(named):
        raise InputError(where, "give 'hosts' for every group of machines or for none")
    names: list[str] = []
    for k, g in enumerate(groups):
        hosts, count = g["hosts"], g.get("count", 1)
        if (
            not isinstance(hosts, list)
            or len(hosts) != count
            or not all(isinstance(h, str) for h in hosts)
        ):
            raise InputError(where, f"machines[{k}].hosts must be a list of {count} host names")
        names += hosts
    return tuple(check_hosts(names, len(names), f"{where}: hosts"))
