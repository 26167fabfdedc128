"""Parse failures of every run, by reason: how many, what share of the run's answers, and the first
raw text that failed that way (the sample browser shows the rest). An answer (a text, no error:
core.results.has_answer) with no parsed value is a failure, its reason the parser's. A sample with no
answer at all (a failed generation, a baseline's "no prediction") is no parse failure: its run is
partial, as its Answered cell says."""

from __future__ import annotations

import pandas as pd

from candlebench.core.results import answered_rows
from candlebench.report.model import Section, Table

EXAMPLE_CHARS = 160
# What failure_rows reads of parsed.parquet: the report reads these alone, one run at a time.
FAILURE_COLUMNS = ["sample_id", "answer", "reason", "text", "error"]


def failure_rows(run: str, parsed: pd.DataFrame) -> list[dict]:
    answers = parsed[answered_rows(parsed)]
    failed = answers[answers["answer"].isna()]
    rows = []
    for reason, group in failed.groupby(failed["reason"].fillna("(no reason given)"), sort=True):
        rows.append({"Run": run, "Reason": reason, "Count": len(group), "Share": round(len(group) / len(answers), 4),
                     "Sample": group["sample_id"].iloc[0], "First raw text": group["text"].iloc[0][:EXAMPLE_CHARS]})
    return rows


def failure_section(task: str, parsed: dict[str, pd.DataFrame]) -> Section | None:
    return failure_table(task, [r for run, frame in parsed.items() for r in failure_rows(run, frame)])


def failure_table(task: str, rows: list[dict]) -> Section | None:
    """The section of runs' :func:`failure_rows` (gathered one run at a time); None when none failed."""
    if not rows:
        return None
    return Section(f"{task}: parse failures", (Table("Parse failures by reason", pd.DataFrame(rows),
                                                     "Share: of the run's answered samples."),))
