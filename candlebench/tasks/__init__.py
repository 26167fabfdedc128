"""The shipped tasks, one folder each (forecast, e2a, caption, reading). What they share, the task
API and the registry that finds them, is ``candlebench.task_api``."""
