"""The multi-scale candlestick forecast benchmark (Hu et al. 2026); the task object is in task.py."""
