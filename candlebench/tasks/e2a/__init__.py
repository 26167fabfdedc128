"""The E2A-style evidence-to-action task (after E2A-Bench, whose code and rules were never
published): anchors.py (evidence anchors), samples.py, parse.py, claims/ (the claim matcher and polarity), metrics.py,
compare.py, responders.py (reference baselines), verify.py (the second pass), report.py and
task.py (the Task)."""
