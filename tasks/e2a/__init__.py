"""The E2A-style evidence-to-action task (after E2A-Bench, whose code and rules were never
published). So far: the deterministic evidence anchors (anchors.py); the task object, prompts,
parser, claim matcher, metrics and report are still to come (issue 11)."""
