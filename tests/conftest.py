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
