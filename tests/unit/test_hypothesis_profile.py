"""The suite's hypothesis profile (tests/conftest.py): no property test fails on how long an example or its
generation took, whatever else runs on the machine."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_the_loaded_profile_has_no_deadline_and_no_slowness_check() -> None:
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


@settings(max_examples=1, database=None)  # a test's own settings keep the profile's deadline
@given(st.integers())
def test_an_example_slower_than_hypothesis_default_deadline_passes(n: int) -> None:
    time.sleep(0.3)  # over the default 200 ms (and its 25 % slack): DeadlineExceeded without the profile
    assert isinstance(n, int)
