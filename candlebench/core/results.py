"""What crosses from a task to the libraries: one parsed answer (:class:`Parsed`, which a task's
parser returns and a record stores) and one finalised run (:class:`RunData`, which score, compare
and the report's sample browser read). Plain data, so the libraries need no task to hold them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Parsed:
    answer: Any  # JSON-safe parsed answer; None when nothing could be parsed
    tier: str  # how it was parsed (the task's tiers), "none" when it was not
    reason: str | None  # why it failed, or what is odd about it (a flag)
    columns: Mapping[str, Any] = field(default_factory=dict)  # the task's flat columns


@dataclass(frozen=True)
class RunData:
    """A finalised run as score and compare see it."""

    name: str
    parsed: "pd.DataFrame"
    samples: "pd.DataFrame"
    info: Mapping[str, Any]  # run.json
    metrics: Mapping[str, Any] | None = None
