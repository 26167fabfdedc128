"""``report:``, the report stage's block of the config, as typed values (built by
candlebench.core.settings.build); the browser's own settings are taken from it
(candlebench.report.browser.settings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from candlebench.core.rules import integer, number, one_of
from candlebench.core.settings import setting


@dataclass(frozen=True, kw_only=True)
class ReportSettings:
    runs: tuple[str, ...] | None  # the runs shown; None: every scored run
    compare: tuple[tuple[str, str], ...]  # pairs of runs compared beside the task's own comparisons
    pool: tuple[str, ...]  # other study folders whose runs join this report
    title: str
    dir: str
    embed: Any = setting((lambda v: v is True or v is False or v == "auto", "true, false or auto"))
    embed_max_mb: float = setting(number(0))
    thumb_px: int = setting(integer(16))
    bundle: bool = setting(one_of((True, False)))
    page_size: int = setting(integer(1))
    split_above: int = setting(integer(0))
