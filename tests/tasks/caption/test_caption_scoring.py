"""The caption judge on what real answers contain: line separators and control characters in one
text never move another's score, empty answers score 0 without a crash, CIDEr of a caption does
not depend on which other samples a run answered, COS and BERTScore read whole texts (and equal
the libraries on short ones), and every reported value lies inside its own interval."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from candlebench.tasks.caption.metrics import clean

pytestmark = pytest.mark.stages  # Java and the encoder; the first test alone would be a unit test

REFS = [
    "The stock rallied from 52.50 to 60.00 on the daily chart. Volume expanded as buyers returned. We remain constructive.",
    "Prices slid toward support near 40 while volume faded. The trend is down and we expect further downside.",
    "A quiet range held between 10.20 and 11.00 for weeks. Volatility is low and we would wait for a breakout.",
    "Shares gapped higher after the report and closed near the highs. The uptrend is intact and buyers are in control.",
]
CANDS = [
    "The stock rose from 52.50 to 60.00 as volume grew. We are constructive.",
    "Prices fell toward support near 40 on fading volume. We expect more downside.",
    "The stock traded in a tight range with low volatility. Wait for a breakout.",
    "The shares gapped up and closed near the highs; the uptrend holds.",
]
META = {"degree": ["daily"], "time": [], "price": ["52.50", "60.00"]}
SEPARATORS = ["\r", "\n", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\t", "\x00", "\u200b",
              "\ufeff", "\u202e"]


@given(st.lists(st.sampled_from([*SEPARATORS, "a", "b", " ", "é", "中", "."]), max_size=60).map("".join))
def test_clean_text_is_one_printable_line(text):
    out = clean(text)
    assert len(out.splitlines()) <= 1 and out.isprintable() and out == out.strip() and "  " not in out
    assert clean(out) == out


@pytest.fixture(scope="module")
def scorer(tmp_path_factory):
    from candlebench.tasks.caption.metrics import CaptionScorer, CaptionSettings

    return CaptionScorer(CaptionSettings(cache_dir=str(tmp_path_factory.mktemp("cache"))))


TEXT_METRICS = ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos")


@settings(max_examples=4, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.sampled_from(SEPARATORS)), min_size=1, max_size=4), st.booleans())
def test_a_separator_in_one_text_never_moves_another_samples_score(scorer, cuts, in_reference):
    """Anywhere in a caption: only that caption's scores may move. In a reference, beside a space (a
    line break where a space was): no score moves at all, not even CIDEr's, whose document
    frequencies are over the references."""
    base = scorer.score(CANDS, REFS, [META] * 4).per
    cands, refs = list(CANDS), list(REFS)
    target = refs if in_reference else cands
    text = target[1]
    for at, sep in sorted(cuts, reverse=True):
        at = min(at, len(text))
        if in_reference:
            at = text.rfind(" ", 0, at) + 1
        text = text[:at] + sep + text[at:]
    target[1] = text
    moved = scorer.score(cands, refs, [META] * 4).per
    for name in TEXT_METRICS:
        if in_reference:
            assert np.allclose(moved[name], base[name]), name
        else:
            assert np.allclose(np.delete(moved[name], 1), np.delete(base[name], 1)), name


def test_an_exact_copy_with_a_carriage_return_still_scores_one(scorer):
    copy = REFS[0].replace(". ", ".\r\n", 1).replace("Volume", "Volume\u2028", 1)
    per = scorer.score([copy, CANDS[1]], REFS[:2], [META] * 2).per
    for name in ("bleu4", "meteor", "rouge_l", "bertscore_f1", "cos"):
        assert per[name][0] == pytest.approx(1.0, abs=1e-5), name


@pytest.mark.parametrize("empty", ["", None, "   \n\t", "\u200b\r\n"])
def test_an_empty_answer_scores_zero_and_is_counted(scorer, empty):
    scored = scorer.score([empty, CANDS[1]], REFS[:2], [META] * 2)
    for name in TEXT_METRICS:
        assert scored.per[name][0] == 0.0, name
        assert scored.per[name][1] > 0, name
    corpus = scorer.corpus(scored)
    assert corpus["n_empty"] == 1
    assert scorer.corpus(scorer.score([empty], REFS[:1], [META]))["n_empty"] == 1  # alone too: no crash


def test_cider_of_a_caption_does_not_depend_on_what_else_the_run_answered(scorer):
    """Document frequencies come from the task's whole reference set (background), not the answered samples."""
    alone = scorer.score(CANDS[:1], REFS[:1], [META], background=REFS[1:]).per["cider"][0]
    together = scorer.score(CANDS, REFS, [META] * 4).per["cider"][0]
    assert alone == pytest.approx(together)
    without = scorer.score(CANDS[:1], REFS[:1], [META]).per["cider"][0]  # the old way: DF of one sample
    assert without != pytest.approx(together)


def test_cos_and_bertscore_read_the_whole_text(scorer):
    body = " ".join(f"On day {i} the stock moved sideways in a narrow band with average volume." for i in range(40))
    reference = body + " We expect further downside and would sell."
    reversed_ = body + " We expect a strong rally and would buy."
    scored = scorer.score([reference, reversed_], [reference, reference], [META] * 2)
    assert scored.per["cos"][0] == pytest.approx(1.0, abs=1e-5)
    assert scored.per["cos"][1] < scored.per["cos"][0] - 1e-4  # the closing opinion reaches the embedding
    assert scored.per["bertscore_f1"][1] < scored.per["bertscore_f1"][0] - 1e-4
    assert scored.windowed >= 2 and scorer.corpus(scored)["n_windowed"] == scored.windowed


def test_short_texts_score_as_the_libraries_score_them(scorer):
    from bert_score import BERTScorer
    from sentence_transformers import SentenceTransformer

    from candlebench.tasks.caption.metrics import default_encoder

    per = scorer.score(CANDS, REFS, [META] * 4).per
    _, _, f1 = BERTScorer(model_type=default_encoder(), num_layers=6, device="cpu").score(CANDS, REFS)
    assert np.allclose(per["bertscore_f1"], f1.numpy(), atol=1e-4)
    model = SentenceTransformer(default_encoder(), device="cpu")
    a, b = model.encode(CANDS, normalize_embeddings=True), model.encode(REFS, normalize_embeddings=True)
    assert np.allclose(per["cos"], (a * b).sum(axis=1), atol=1e-4)


def test_cached_references_score_the_same(scorer, tmp_path):
    from candlebench.tasks.caption.metrics import CaptionScorer, CaptionSettings

    first = scorer.score(CANDS, REFS, [META] * 4).per
    again = scorer.score(CANDS, REFS, [META] * 4).per  # references from the disk cache now
    fresh = CaptionScorer(CaptionSettings(cache_dir=str(tmp_path))).score(CANDS, REFS, [META] * 4).per
    for name in ("bertscore_f1", "cos"):
        assert np.array_equal(first[name], again[name]) and np.array_equal(first[name], fresh[name])
    assert list((tmp_path / "caption-embeddings").rglob("*.npz"))


def test_a_texts_embeddings_do_not_depend_on_the_texts_encoded_with_it(scorer):
    """A reference's cached embedding is that of the batch that first encoded it. Batched beside a
    longer window's padding, its states moved by up to 1e-3 (float16) and its scores by ~1e-6, so a
    score depended on what a process, or a test module, had scored before; now bit for bit alike."""
    body = " ".join(f"On day {i} the stock moved sideways in a narrow band with average volume." for i in range(40))
    alone = scorer.encoder.embed(REFS)
    mixed = scorer.encoder.embed([REFS[0], "Short.", body, *REFS[1:], *CANDS])
    assert mixed[2].windows > 1
    assert all(np.array_equal(a.tokens, b.tokens) for a, b in zip(alone, [mixed[0], *mixed[3:6]]))


def test_each_reported_value_lies_in_its_own_interval_and_bleu_is_the_toolkits(scorer):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.meteor.meteor import Meteor

    cands = [CANDS[i % 4] + f" Day {i}." for i in range(24)]
    refs = [REFS[(i + i // 4) % 4] for i in range(24)]
    scored = scorer.score(cands, refs, [META] * 24)
    corpus, ci = scorer.corpus(scored), scorer.intervals(scored, n_boot=200, seed=1, meteor_boot=60)
    for name, interval in ci.items():
        if interval is None:  # IoU of a category the charts do not have: no value, no interval
            assert corpus[name] is None, name
            continue
        assert interval[0] - 1e-9 <= corpus[name] <= interval[1] + 1e-9, name
    tokens = scorer.tokenize([clean(t) for t in (*cands, *refs)])
    res, gts = {i: [tokens[i]] for i in range(24)}, {i: [tokens[24 + i]] for i in range(24)}
    assert corpus["bleu4"] == pytest.approx(Bleu(4).compute_score(gts, res, verbose=0)[0][3], rel=1e-9)
    assert corpus["meteor"] == pytest.approx(Meteor().compute_score(gts, res)[0], rel=1e-6)
    valid = np.arange(24) < 12  # the `valid` block: the same toolkits on a subset, no encoder run again
    part = scorer.score(cands[:12], refs[:12], [META] * 12, background=refs[12:])
    sub, direct = scorer.corpus(scored, valid), scorer.corpus(part)
    for name in ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos", "sa_f1"):
        assert sub[name] == pytest.approx(direct[name], rel=1e-6), name


def test_a_chinese_caption_has_a_real_length():
    from candlebench.tasks.caption.task import TASK
    from helpers import setup_of

    parse = TASK.parser(setup_of("task=caption", "task.words=[100,400]").settings)
    caption = "该股在2019年3月15日收于52.50元，随后放量上涨至60.00元，短期趋势向上。" * 4
    parsed = parse(caption)
    assert parsed.columns["words"] > 100 and "1 words" not in str(parsed.reason)


def test_a_caption_cut_while_reasoning_is_no_caption_and_says_so():
    """A closed reasoning block is not the caption; an unclosed one (the budget ran out while the model
    thought, or the template opened it) leaves only what came before it, and here that is nothing."""
    from candlebench.task_api.base import REASONING_CUT
    from candlebench.tasks.caption.task import TASK
    from helpers import setup_of

    parse = TASK.parser(setup_of("task=caption", "task.words=[1,400]").settings)
    assert parse("<think>\nthe close is up</think>\nThe stock rose 5%.").answer == "The stock rose 5%."
    cut = parse("<think>\nThe chart shows a rise; the close is 52.50 and")
    assert cut.answer is None and cut.reason == REASONING_CUT
    assert parse("The stock rose. <THINK> more").answer == "The stock rose."


def test_bertscore_reads_its_own_model_and_layer_and_cos_its_encoder(scorer, tmp_path):
    """task.metrics.bertscore_layers picks bert-score's layer (as BERTScorer's num_layers does); COS
    keeps the encoder's last layer; with the defaults both share one encoder."""
    from bert_score import BERTScorer

    from candlebench.tasks.caption.metrics import CaptionScorer, CaptionSettings, default_encoder

    assert scorer.bertscore_encoder is scorer.encoder
    shallow = CaptionScorer(CaptionSettings(bertscore_layers=3, cache_dir=str(tmp_path)))
    assert shallow.bertscore_encoder is not shallow.encoder
    assert shallow._meteor is scorer._meteor  # one METEOR (Java) process a Python process
    per, base = shallow.score(CANDS, REFS, [META] * 4).per, scorer.score(CANDS, REFS, [META] * 4).per
    _, _, f1 = BERTScorer(model_type=default_encoder(), num_layers=3, device="cpu").score(CANDS, REFS)
    assert np.allclose(per["bertscore_f1"], f1.numpy(), atol=1e-4) and not np.allclose(per["bertscore_f1"], base["bertscore_f1"])
    assert np.array_equal(per["cos"], base["cos"])


# Characters the PTB tokenizer has no rule for (each checked with its untokenizable=allDelete):
# U+FFFD (a cut UTF-8 sequence), U+0482 (the demo's), a Tamil sign, the bitcoin sign, an emoji
# (two UTF-16 units in Java).
UNTOKENIZABLE = ["\ufffd", "\u0482", "\u0bf5", "\u20bf", "\U0001f600"]


def test_a_character_the_tokenizer_cannot_read_is_deleted_as_the_library_deletes_it_and_nothing_is_said(scorer, capfd):
    """Java's "Untokenizable: ҂ (U+482)" on caption scoring alarmed users (last round silenced it
    for U+FFFD alone). Every such character is deleted, ending the token before it, as
    pycocoevalcap's own tokenizer call deletes it, and the word-overlap scores are those of the
    text with a space in its place; nothing is printed."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    def texts(c: str) -> list[str]:
        return [f"Prices rose{c} sharply.", f"a{c}b and {c}{c} c", c]

    odd = [t for c in UNTOKENIZABLE for t in texts(c)]
    capfd.readouterr()
    ours = scorer.tokenize(odd)
    cands = [CANDS[0].replace(" rose", f"{c} rose") for c in UNTOKENIZABLE]  # "The stock҂ rose from ..."
    per = scorer.score(cands, REFS[:1] * len(cands), [META] * len(cands)).per
    assert "Untokenizable" not in capfd.readouterr().err
    direct = PTBTokenizer().tokenize({i: [{"caption": t}] for i, t in enumerate(odd)})
    assert "Untokenizable" in capfd.readouterr().err  # what the library's call says of them
    assert ours == [direct[i][0] for i in range(len(odd))]
    assert ours == scorer.tokenize([t for _ in UNTOKENIZABLE for t in texts(" ")])
    plain = scorer.score(CANDS[:1], REFS[:1], [META]).per
    for metric in ("bleu4", "meteor", "rouge_l"):
        assert np.allclose(per[metric], plain[metric][0]), metric


def test_bertscore_and_cos_are_the_libraries_whichever_setting_scores_first(tmp_path):
    """In one process, as one test worker runs the module: BERTScore at layer 3 scored first, then
    the defaults, then layer 3 again, each equal to bert-score and sentence-transformers run
    directly (a fresh-clone `make test` once saw both differ by up to 0.13 after the other setting,
    though each passed alone). No setting may change a model another setting reads."""
    from bert_score import BERTScorer
    from sentence_transformers import SentenceTransformer

    from candlebench.tasks.caption.metrics import CaptionScorer, CaptionSettings, default_encoder

    model = SentenceTransformer(default_encoder(), device="cpu")
    cos = (model.encode(CANDS, normalize_embeddings=True) * model.encode(REFS, normalize_embeddings=True)).sum(axis=1)
    expected = {layers: BERTScorer(model_type=default_encoder(), num_layers=layers, device="cpu").score(CANDS, REFS)[2].numpy()
                for layers in (3, 6)}
    for n, layers in enumerate((3, 6, 3)):
        per = CaptionScorer(CaptionSettings(bertscore_layers=layers, cache_dir=str(tmp_path / str(n)))).score(
            CANDS, REFS, [META] * 4).per
        assert np.allclose(per["bertscore_f1"], expected[layers], atol=1e-4), (n, layers)
        assert np.allclose(per["cos"], cos, atol=1e-4), (n, layers)
