"""The production balancers: peak EWMA, least_time, least request, Prequal, gRPC's WRR.

Each is a built-in policy, registered after the papers' nine (the table's order); what they
share is :mod:`.slots`, each rule its own module: :mod:`.ewma`, :mod:`.least_time`,
:mod:`.wlr`, :mod:`.prequal`, :mod:`.wrr`.
"""

from __future__ import annotations

from cloudsched.dispatch import builtin_policies  # noqa: F401  (registered first: the table's order)
from cloudsched.dispatch.balancers import ewma, least_time, prequal, wlr, wrr  # noqa: F401  (registers them)

__all__: list[str] = []  # the policies are reached through the registry
