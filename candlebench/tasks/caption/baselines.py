"""Reference captioners of the captioning task: two floors and the ceiling check.

* ``template``: one generic chart caption for every sample (``task.baseline.params.template.text``):
  what fluent text with no look at the chart scores.
* ``shuffled``: another sample's reference (a seeded derangement: never its own): what a real
  analyst's text about a different chart scores.
* ``describer``: the sample's own reference: every metric at its ceiling, the scorer end to end.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

TEMPLATE = ("The chart shows the stock's recent price action with its moving averages and volume. Prices moved "
            "within a range over the period, with several swings between support and resistance. The moving "
            "averages track the trend, and volume rose on the larger moves. The most recent candles show the "
            "market testing the levels reached earlier in the window. Traders will watch whether price holds above "
            "support or breaks through resistance, since either move would set the direction for the coming "
            "sessions. Until then the picture remains balanced, and we would wait for confirmation before taking a "
            "position in the stock for now.")


def template(samples: pd.DataFrame, market: Any, s: Any, text: str = TEMPLATE, **_: Any) -> Mapping[str, str]:
    return {sid: text for sid in samples["sample_id"]}


def shuffled(samples: pd.DataFrame, market: Any, s: Any, seed: int = 0, **_: Any) -> Mapping[str, str]:
    ids = samples["sample_id"].tolist()
    refs = samples["reference"].tolist()
    if len(ids) < 2:
        return {sid: None for sid in ids}  # no other sample to borrow from
    order = np.random.default_rng(seed).permutation(len(ids))
    # A cyclic shift of a random order is a derangement: every sample gets another's reference.
    give = {int(order[i]): int(order[(i + 1) % len(ids)]) for i in range(len(ids))}
    return {ids[i]: refs[give[i]] for i in range(len(ids))}


def describer(samples: pd.DataFrame, market: Any, s: Any, **_: Any) -> Mapping[str, str]:
    return dict(zip(samples["sample_id"], samples["reference"]))


BASELINES = {"template": template, "shuffled": shuffled, "describer": describer}
