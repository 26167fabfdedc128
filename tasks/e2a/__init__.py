"""The E2A-style evidence-to-action task (after E2A-Bench, whose code and rules were never
published). So far the scoring side, each piece tested on its own: the deterministic evidence
anchors (anchors.py), the answer parser (parse.py), the claim matcher and rationale polarity
(claims.py), the metrics with stock-bootstrap intervals (metrics.py), the paired comparison
(compare.py) and the reference responders (responders.py). Still to come
(issue 11): the task object on the Task interface (samples per modality, chart and text inputs,
English / Chinese prompts, JSON-schema decoding), the verify method, and the report's leaderboard and frontier plot."""
