"""Chart reading: can the model read the chart it forecasts from? (docs/reading.md); the task object is in task.py."""
