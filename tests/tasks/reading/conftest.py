"""What the reading tests share: the real data slice as a market and the task's composed settings;
each module builds its own samples over them (its own stocks and interval)."""

from __future__ import annotations

import pytest

from candlebench.market.market import load_market
from helpers import SLICE, setup_of


@pytest.fixture(scope="module")
def market():
    return load_market([SLICE], name="PSE")


@pytest.fixture(scope="module")
def cfg():
    return setup_of("task=reading")
