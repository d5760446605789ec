"""The simulator's engines by name: the one list of them (:mod:`.choice` chooses among them)."""

from __future__ import annotations

from cloudsched.dispatch.engines.choice import Engine
from cloudsched.dispatch.engines.classes.engine import ENGINE as CLASSES
from cloudsched.dispatch.engines.counts.engine import ENGINE as COUNTS
from cloudsched.dispatch.engines.delay.engine import ENGINE as DELAY
from cloudsched.dispatch.engines.servers.engine import ENGINE as SERVERS

__all__ = ["ENGINES"]

#: Every engine, by name, in the order of the policy table's ``ENGINE_NAMES``.
ENGINES: dict[str, Engine] = {e.name: e for e in (SERVERS, COUNTS, CLASSES, DELAY)}
