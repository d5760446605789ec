import os
import signal

from hypothesis import HealthCheck, settings

# Seeded, derandomised property tests: the same examples on every run, never flaky.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The line a long compile writes (cloudsched._jit.notice) depends on what the kernel cache
# already holds: off here, so that what a test reads of a command's standard error is the
# same cold or warm; tests/test_compile_notice.py turns it on where it is the subject.
os.environ["CLOUDSCHED_COMPILE_NOTICE"] = "off"

# The Ctrl-C tests send SIGINT to the commands they start.  A shell without job control that
# starts this run in the background ignores SIGINT, and its children inherit that: give them
# the terminal's disposition (a Python handler here becomes the default one across exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


#: The quick tier (``python -m pytest -m quick``): files that together import every package
#: of cloudsched (tests/test_structure.py checks it) and run in under 3 minutes warm on two
#: processes, for a contributor's loop; the default tier runs them too.
QUICK = (
    "test_structure.py",
    "test_cli.py",
    "test_io.py",
    "test_simulate.py",
    "test_meanfield.py",
    "test_balancers.py",
    "test_counts_engine.py",
    "test_engine_choice.py",
    "test_general_engine.py",
    "test_distributions.py",
    "test_checklb.py",
    "test_lab_security.py",
    "test_placement_model.py",
    "test_report_tables.py",
)


def pytest_collection_modifyitems(config, items):
    """Mark the quick tier's tests (:data:`QUICK`) ``quick``; then see below.

    In the slow tier, start the longest tests first (their wall seconds in CI's last
    measured run, ``.ci/durations.json``, which ``.ci/summary.py --durations`` writes): the
    processes then end together instead of one waiting on a long test begun last.  Tests
    not listed keep their order, after the listed ones."""
    import json
    from pathlib import Path

    import pytest

    for item in items:
        if item.path.name in QUICK:
            item.add_marker(pytest.mark.quick)
    expr = config.option.markexpr or ""
    if "slow" not in expr or "not slow" in expr:
        return
    if "live" in expr and "not live" not in expr:  # serial: keep each file's lab together
        return
    path = Path(__file__).parents[1] / ".ci" / "durations.json"
    if not path.exists():
        return
    known = json.loads(path.read_text())
    items.sort(key=lambda item: -known.get(item.nodeid, 0.0))
