"""Test-wide settings.

Hypothesis explores new examples on every local run; under CI (``CI=true``) it is
derandomised so that a CI run is reproducible.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
