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
