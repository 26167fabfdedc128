"""What crosses from a task to the libraries: one parsed answer (:class:`Parsed`, which a task's
parser returns and a record stores) and one finalised run (:class:`RunAnswers`, which score, compare
and the report's sample browser read). Plain data, so the libraries need no task to hold them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Parsed:
    answer: Any  # JSON-safe parsed answer; None when nothing could be parsed
    tier: str  # how it was parsed (the task's tiers), "none" when it was not
    reason: str | None  # why it failed, or what is odd about it (a flag)
    columns: Mapping[str, Any] = field(default_factory=dict)  # the task's flat columns


@dataclass(frozen=True)
class RunAnswers:
    """A finalised run as score and compare see it."""

    name: str
    parsed: "pd.DataFrame"
    samples: "pd.DataFrame"
    info: Mapping[str, Any]  # run.json
    metrics: Mapping[str, Any] | None = None


def has_answer(text: str | None, error: str | None) -> bool:
    """The one meaning of "answered", in every stage, console line, status line and table: a text,
    and no error. A failed generation, a baseline's "no prediction" and an imported empty answer are
    records of a sample, but not answers: a run holding one is partial, never starred or ranked."""
    return error is None and text is not None


def answered_rows(parsed: "pd.DataFrame") -> "pd.Series":
    """:func:`has_answer` of each row of a parsed table (a table without an error column: none failed)."""
    answered = parsed["text"].notna()
    return answered & parsed["error"].isna() if "error" in parsed else answered


# What a judge reads of one answer. A model's answer here is at most a few thousand tokens
# (model.max_new_tokens <= 4096, ~20,000 characters with its reasoning), so these bounds leave the
# answers of every configured model whole; an imported 10 MB answer kept METEOR's Java process busy
# for over 7 minutes and no caption run was scored. METEOR's cost grows faster than the length
# (one 10,000-character caption 0.5 s, one of 100,000 30 s, on this project's 2-core machine).
MAX_TEXT_CHARS = 100_000  # the raw answer a parser reads
MAX_ANSWER_CHARS = 8_000  # the parsed answer (as JSON) a judge reads: a caption, an analysis and rationale


def bounded(parse: Callable[[str | None], Parsed]) -> Callable[[str | None], Parsed]:
    """``parse`` behind the bounds every judge has: an answer over :data:`MAX_TEXT_CHARS`, one
    whose parsed answer is over :data:`MAX_ANSWER_CHARS`, or one whose parsed answer or columns hold
    a non-finite number, is a failure (no answer, tier "none") whose reason says which (and how
    long); its text stays in the record, its scores are those of no answer."""

    def judged(text: str | None) -> Parsed:
        if text is not None and len(text) > MAX_TEXT_CHARS:
            return _no_answer(parse, f"answer of {len(text):,} characters, over the {MAX_TEXT_CHARS:,} a parser reads")
        parsed = parse(text)
        try:  # a parser that kept NaN or inf: no metric, table or page can hold it (each parser's own
            # rules say so first; this is the second line)
            size = 0 if parsed.answer is None else len(json.dumps(parsed.answer, ensure_ascii=False, allow_nan=False))
            json.dumps(dict(parsed.columns), allow_nan=False, default=str)
        except ValueError:
            return _no_answer(parse, "a number that is not finite in the parsed answer")
        if size > MAX_ANSWER_CHARS:
            return _no_answer(parse, f"parsed answer of {size:,} characters, over the {MAX_ANSWER_CHARS:,} a judge reads")
        return parsed

    return judged


def _no_answer(parse: Callable[[str | None], Parsed], reason: str) -> Parsed:
    return Parsed(None, "none", f"{reason}: scored as no answer", dict(parse(None).columns))
