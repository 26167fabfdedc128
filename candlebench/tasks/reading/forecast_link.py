"""Reading next to forecasting: for a model run that also answered the forecast task in the same
out_dir (a forecast run of the same name), its forecast IC and its forecast direction accuracy split
by whether it read the trend of those same charts right (a 2x2 per model).

The trend questions are ``change`` (the drawn move, first to last bar) and ``ma20`` (the last close
against the medium MA); a stock and cutoff is *read right* when every trend question asked of its
daily and weekly charts (chart modality) got the right answer, *read wrong* otherwise; one with no
trend question asked is left out. Forecast direction right: sign of the score = sign of r_H
(``(pred > 0) == (r_H > 0)``, the forecast metrics' binarisation). Computed when the reading run is
scored, from the forecast run's parsed.parquet as it is then (``run`` and ``sweep`` score forecast
first: ``ReadingTask.scored_after``; score the reading run again after re-scoring forecast alone).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from candlebench.core.layout import RunPaths
from candlebench.tasks.reading.metrics import verdicts

TREND = ("change", "ma20")


def forecast_link(reading: pd.DataFrame, forecast: RunPaths) -> dict[str, Any] | None:
    """None when no scored forecast run of that name exists."""
    if not (forecast.parsed.exists() and forecast.metrics.exists()):
        return None
    metrics = json.loads(forecast.metrics.read_text())
    horizon = int(metrics["horizon"])
    v = verdicts(reading)
    v = v[(v["modality"] == "chart") & v["question"].isin(TREND)]
    read = v.groupby(["code", "cutoff"])["right"].all().rename("read_right").reset_index()
    answers = pd.read_parquet(forecast.parsed, columns=["code", "cutoff", "pred", f"r_{horizon}"]).dropna(subset=["pred"])
    joined = read.merge(answers, on=["code", "cutoff"])
    joined["direction_right"] = (joined["pred"] > 0) == (joined[f"r_{horizon}"] > 0)

    def cell(part: pd.DataFrame) -> dict[str, Any]:
        return {"n": len(part), "direction_accuracy": float(part["direction_right"].mean()) if len(part) else None}

    return {"run": forecast.name, "horizon": horizon, "ic_mean": metrics.get("ic_mean"),
            "direction_accuracy": metrics.get("accuracy"), "n": len(joined),
            "read_right": cell(joined[joined["read_right"]]), "read_wrong": cell(joined[~joined["read_right"]])}
