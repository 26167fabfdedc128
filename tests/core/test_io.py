"""core.io's JSON for pages: a browser's JSON.parse reads it whatever a judge let through."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from candlebench.core.io import json_bytes

pytestmark = pytest.mark.unit


def test_json_bytes_writes_non_finite_numbers_as_null_and_the_rest_as_json_does():
    value = {"rows": [1.5, math.inf, -math.inf, math.nan, np.float64("inf")], "detail": {"x": {"y": [math.nan]}},
             "text": "高于", "n": 3}
    assert json.loads(json_bytes(value)) == {"rows": [1.5, None, None, None, None], "detail": {"x": {"y": [None]}},
                                             "text": "高于", "n": 3}
    plain = {"a": [1, 2.5, None, "x"], "b": {"c": True}}
    assert json_bytes(plain) == json.dumps(plain, ensure_ascii=False, separators=(",", ":")).encode()
