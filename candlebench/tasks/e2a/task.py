"""The E2A-style evidence-to-action task on the Task interface.

A sample is a stock, an evaluation date and a modality (text / chart / both); the model answers
``{"analysis", "rationale", "action", "confidence"}``. Anchors and samples: :mod:`candlebench.tasks.e2a.samples`
and :mod:`candlebench.tasks.e2a.anchors`; parsing :mod:`candlebench.tasks.e2a.parse`; claims and polarity
:mod:`candlebench.tasks.e2a.claims`; metrics :mod:`candlebench.tasks.e2a.metrics`, whose ``PER_SAMPLE`` gives the
default compare, results and comparison tables and browser verdicts (scoring/per_sample.py); reference responders
:mod:`candlebench.tasks.e2a.responders`; the report's own tables and plots :mod:`candlebench.tasks.e2a.report`.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any, Callable, Mapping

import pandas as pd

from candlebench.core.results import MAX_ANSWER_CHARS, Parsed, RunAnswers
from candlebench.market.market import Market
from candlebench.rendering.inputs import text_column
from candlebench.scoring.numbers import fmt, pct
from candlebench.task_api.base import (BuiltSamples, Column, FirstPassAnswer, Inputs, RequestSpec, ScoreSettings, Task,
                                    TaskContext)
from candlebench.tasks.e2a.anchors import AnchorSettings
from candlebench.tasks.e2a.claims import extract_claims, judge
from candlebench.tasks.e2a.metrics import PER_SAMPLE
from candlebench.tasks.e2a.parse import parse_response
from candlebench.tasks.e2a.responders import RESPONDERS
from candlebench.tasks.e2a.samples import anchors_of, build_samples
from candlebench.tasks.e2a.verify import verify_prompt
from candlebench.tasks.e2a.settings import E2ASettings

CHART = "daily"


def anchor_settings(s: E2ASettings) -> AnchorSettings:
    return AnchorSettings(**s.anchors)


def _responder(name: str) -> Callable[..., Mapping[str, str | None]]:
    def answers(samples: pd.DataFrame, market: Market, s: E2ASettings, **params: Any) -> Mapping[str, str | None]:
        respond = RESPONDERS[name]
        return {row["sample_id"]: respond(anchors_of(row)) for _, row in samples.iterrows()}

    answers.__doc__ = RESPONDERS[name].__doc__
    return answers


def _said(row: Mapping[str, Any]) -> tuple[dict, str | None, str | None]:
    """The parsed answer, and the analysis and rationale its claims and polarity are read from: the
    raw text when nothing parsed (a response that states claims without an action still states them;
    UCR_all counts it), its first MAX_ANSWER_CHARS characters (an answer too long to parse is judged
    on that prefix)."""
    answer = json.loads(row["answer"]) if isinstance(row.get("answer"), str) else None
    if answer:
        return answer, answer.get("analysis"), answer.get("rationale")
    text = row.get("text")[:MAX_ANSWER_CHARS] if isinstance(row.get("text"), str) else None  # its judged prefix
    return {}, text, text


def scored_rows(parsed: pd.DataFrame) -> pd.DataFrame:
    """Per parsed response: its action, confidence, rationale polarity and claim verdicts against
    its window's anchors (the input of :func:`candlebench.tasks.e2a.metrics.e2a_metrics`)."""
    rows = []
    for row in parsed.to_dict("records"):
        answer, analysis, rationale = _said(row)
        rows.append({
            "sample_id": row["sample_id"], "code": row["code"], "cutoff": row["cutoff"], "modality": row["modality"],
            "action": answer.get("action"), "confidence": answer.get("confidence"),
            "strong_signals": int(row["strong_signals"]),
            **judge(analysis, rationale, anchors_of(row)),
        })
    return pd.DataFrame(rows, columns=["sample_id", "code", "cutoff", "modality", "action", "confidence", "polarity",
                                       "strong_signals", "supported", "contradicted", "unverifiable"])


class E2ATask(Task[E2ASettings]):
    name = "e2a"
    columns = (Column("action", "string"), Column("confidence", "float64"))
    baselines = MappingProxyType({name: _responder(name) for name in RESPONDERS})
    references = MappingProxyType({"anchor_oracle": "acts on the very anchor facts the judge checks against: "
                                                    "UCR, RCI and ECI 0 by construction, a ceiling"})
    second_passes = ("verify",)
    settings_type = E2ASettings
    per_sample = PER_SAMPLE
    # 2: the score keeps each answer's indicators in parsed.parquet, which the default compare reads; runs
    # scored by v1 lack them and are scored again (the same verdicts and metrics).
    judge_version = 2

    def build_samples(self, market: Market, s: E2ASettings, ctx: TaskContext) -> BuiltSamples:
        frame, summary = build_samples(market, s, anchor_settings(s))
        return BuiltSamples(frame, summary)

    def inputs(self, s: E2ASettings) -> Inputs:
        return Inputs(charts=(CHART,), text=True)

    def prompt_identity(self, s: E2ASettings, ctx: TaskContext) -> str:
        intros = {m: s.inputs[s.language][m] for m in s.modalities}
        identity = s.prompt + "\n" + json.dumps(intros, ensure_ascii=False, sort_keys=True)
        if self.first_pass_run(s):
            identity += "\n" + json.dumps(s.verify[s.language], ensure_ascii=False, sort_keys=True)
        return identity

    def request(self, s: E2ASettings, ctx: TaskContext, sample: Mapping[str, Any], texts: Mapping[str, str],
                first_pass: FirstPassAnswer | None = None) -> RequestSpec:
        modality = str(sample["modality"])
        intro = s.inputs[s.language][modality]
        with_text = modality in ("text", "both")
        inputs = intro.format(ohlcv=texts[text_column()]) if with_text else intro
        prompt = s.prompt.format(inputs=inputs)
        if first_pass is not None:
            words = s.verify[s.language]
            prompt = verify_prompt(words["prompt"], words, prompt, first_pass, anchors_of(sample))
        return RequestSpec(prompt, (CHART,) if modality in ("chart", "both") else (),
                           (text_column(),) if with_text else ())

    def parser(self, s: E2ASettings) -> Callable[[str | None], Parsed]:
        def parse(text: str | None) -> Parsed:
            a = parse_response(text)
            answer = None if a.action is None else {"analysis": a.analysis, "rationale": a.rationale,
                                                    "action": a.action, "confidence": a.confidence}
            return Parsed(answer, a.tier, a.reason, {"action": a.action, "confidence": a.confidence})

        return parse

    def score(self, run: RunAnswers, s: E2ASettings, ctx: TaskContext, settings: ScoreSettings) -> dict:
        from candlebench.tasks.e2a.metrics import e2a_metrics, per_sample

        rows = scored_rows(run.parsed)
        out = e2a_metrics(rows, float(s.eci_confidence), int(s.eci_signals),
                          modalities=tuple(s.modalities), n_boot=settings.n_boot, seed=settings.seed)
        out["eci_confidence"], out["eci_signals"] = float(s.eci_confidence), int(s.eci_signals)
        identity = run.info.get("identity") or {}
        # metrics.json keys, read by the report (as run.json's identity names them, after task.method / task.revises)
        out["method"], out["revises"] = identity.get("method", "direct"), identity.get("revises")
        return {**out, "per_sample": per_sample(rows, float(s.eci_confidence), int(s.eci_signals))}

    def report_tables(self, runs, datasets=(), comparisons=None):
        from candlebench.tasks.e2a.report import tables

        return tables(runs, comparisons or {})

    def browse_detail(self, run: RunAnswers) -> pd.DataFrame:
        """The label is the window's anchor facts; each answer's detail, its claims with the anchor
        each was checked against and the verdict."""
        rows = []
        for row in run.parsed.to_dict("records"):
            anchors = anchors_of(row)
            _, analysis, rationale = _said(row)
            claims = extract_claims(f"{analysis or ''}\n{rationale or ''}", anchors)
            rows.append({
                "label": "; ".join(f"{k}: {v}" for k, v in anchors.labels.items()),
                "detail": {"claims": [{"sentence": c.sentence, "claim": c.claim, "anchor": c.anchor,
                                       "fact": anchors.labels.get(c.anchor) if c.anchor else None,
                                       "negated": c.negated, "verdict": c.verdict} for c in claims]},
            })
        return pd.DataFrame(rows, columns=["label", "detail"])

    def summary_line(self, m: Mapping[str, Any]) -> str:
        a = m["all"]
        return (f"NDR {fmt(a['ndr'], 3)}, coverage {fmt(a['coverage'], 3)}, UCR_dir {fmt(a['ucr_dir'], 3)}, "
                f"RCI {fmt(a['rci'], 3)}, ECI {fmt(a['eci'], 3)}, BUY:SELL {fmt(a['buy_sell_ratio'], 2)}, "
                f"no answer {pct(a['parse_failure_rate'])}, missing records {m['n_missing_records']}")


TASK = E2ATask()
