import os
import signal

from hypothesis import HealthCheck, settings

# Seeded, derandomised property tests: the same examples on every run, never flaky.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The Ctrl-C tests send SIGINT to the commands they start.  A shell without job control that
# starts this run in the background ignores SIGINT, and its children inherit that: give them
# the terminal's disposition (a Python handler here becomes the default one across exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: The slow tier's longest checks (minutes each, the interval-coverage studies first):
#: collected first, so that the processes of ``-n 2`` share the shorter ones after them.
LONGEST_FIRST = (
    "test_simulate_slow.py",
    "test_finite_slow.py",
    "test_delays.py",
    "test_cli_fuzz.py",
    "test_placement_fuzz.py",
)


def pytest_collection_modifyitems(config, items):
    """Put the slow tier's longest files first (a stable sort: their order otherwise kept)."""

    def rank(item):
        name = item.path.name
        if item.get_closest_marker("slow") is None or name not in LONGEST_FIRST:
            return len(LONGEST_FIRST)
        return LONGEST_FIRST.index(name)

    items.sort(key=rank)
