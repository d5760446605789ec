"""The production balancers: peak-EWMA P2C, NGINX least_time and Envoy's least request.

Each is a built-in policy, registered after the papers' nine (the table's order); what they
share is :mod:`.slots`, each rule its own module: :mod:`.ewma`, :mod:`.least_time`,
:mod:`.wlr`.
"""

from __future__ import annotations

from cloudsched.dispatch import builtin_policies  # noqa: F401  (registered first: the table's order)
from cloudsched.dispatch.balancers import ewma, least_time, wlr  # noqa: F401  (registers them)

__all__: list[str] = []  # the policies are reached through the registry
