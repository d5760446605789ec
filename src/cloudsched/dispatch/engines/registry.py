"""The simulator's engines by name: the one list of them (:mod:`.choice` chooses among them)."""

from __future__ import annotations

from typing import Any

from cloudsched.dispatch.engines.choice import Engine
from cloudsched.dispatch.engines.classes.engine import ENGINE as CLASSES
from cloudsched.dispatch.engines.counts.engine import ENGINE as COUNTS
from cloudsched.dispatch.engines.delay.engine import ENGINE as DELAY
from cloudsched.dispatch.engines.servers.engine import ENGINE as SERVERS

__all__ = ["ENGINES", "engine_table"]

#: Every engine, by name, in the order of the policy table's ``ENGINE_NAMES``.
ENGINES: dict[str, Engine] = {e.name: e for e in (SERVERS, COUNTS, CLASSES, DELAY)}


def engine_table() -> list[dict[str, Any]]:
    """One row per engine: what it runs (``cloudsched policies --engines`` and the docs)."""
    return [
        {
            "engine": e.name,
            "runs": ", ".join(e.policies) if e.name != "servers" else "every policy",
            "laws": e.laws,
            "speeds": e.speeds,
            "delays": e.delays,
            "views": ", ".join(e.views),
            "records": e.records,
            "summary": e.summary,
        }
        for e in ENGINES.values()
    ]
