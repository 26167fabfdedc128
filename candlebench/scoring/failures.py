"""Parse failures of every run, by reason: how many, what share of the run, and the first raw text
that failed that way (the sample browser shows the rest). An answer with no parsed value is a
failure; its reason is the parser's, or the generation error."""

from __future__ import annotations

import pandas as pd

from candlebench.scoring.report import Section, Table

EXAMPLE_CHARS = 160
# What failure_rows reads of parsed.parquet: the report reads these alone, one run at a time.
FAILURE_COLUMNS = ["sample_id", "answer", "reason", "text", "error"]


def failure_rows(run: str, parsed: pd.DataFrame) -> list[dict]:
    failed = parsed[parsed["answer"].isna()]
    rows = []
    for reason, group in failed.groupby(failed["reason"].fillna("(no reason given)"), sort=True):
        text = group["text"].dropna()
        generation_failed = "error" in group and group["error"].notna().any()
        example = text.iloc[0][:EXAMPLE_CHARS] if len(text) else "(no text: generation failed)" if generation_failed else "(no text)"
        rows.append({"Run": run, "Reason": reason, "Count": len(group), "Share": round(len(group) / len(parsed), 4),
                     "Sample": group["sample_id"].iloc[0], "First raw text": example})
    return rows


def failure_section(task: str, parsed: dict[str, pd.DataFrame]) -> Section | None:
    return failure_table(task, [r for run, frame in parsed.items() for r in failure_rows(run, frame)])


def failure_table(task: str, rows: list[dict]) -> Section | None:
    """The section of runs' :func:`failure_rows` (gathered one run at a time); None when none failed."""
    if not rows:
        return None
    return Section(f"{task}: parse failures", (Table("Parse failures by reason", pd.DataFrame(rows),
                                                     "Share: of the run's answered samples."),))
