import os

from hypothesis import HealthCheck, settings

# Seeded, derandomised property tests: the same examples on every run, never flaky.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
