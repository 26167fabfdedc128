"""The runner's GIL switch interval (infer.gil_switch_ms) as a context: set inside, restored after."""

from __future__ import annotations

import sys

import pytest

from candlebench.inference.runner import gil_switch_interval

pytestmark = pytest.mark.unit


def test_the_switch_interval_holds_inside_and_is_restored_after_an_error():
    before = sys.getswitchinterval()
    with pytest.raises(RuntimeError):
        with gil_switch_interval(0.5):
            assert sys.getswitchinterval() == 0.0005
            raise RuntimeError("a failed run")
    assert sys.getswitchinterval() == before
    with gil_switch_interval(None):  # None: Python's own, untouched
        assert sys.getswitchinterval() == before
