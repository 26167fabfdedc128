"""candlebench.tasks.forecast.parse: the three-tier score parser on realistic model outputs, plus properties."""

from __future__ import annotations

import dataclasses
import math
import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from candlebench.tasks.forecast.parse import TIERS, ParsedScore, parse_by_rules, parse_score

pytestmark = pytest.mark.unit

# (id, model output, expected value, expected tier, expected reason substring or None for "no reason")
CASES: list[tuple[str, str | None, float | None, str, str | None]] = [
    # --- tier 1: clean and near-clean tags --------------------------------------------------
    ("clean", "<score>0.125</score>", 0.125, "tag", None),
    ("qwen-newlines", "<score>\n0.032\n</score>", 0.032, "tag", None),
    ("spaces-plus", "<score> +0.125 </score>", 0.125, "tag", None),
    ("capitalised", "<Score>-0.047</Score>", -0.047, "tag", None),
    ("spaced-tag-names", "< score >0.210</ score >", 0.21, "tag", None),
    ("upper-with-prefix", "Answer: <SCORE> 0.250 </SCORE>", 0.25, "tag", None),
    ("many-decimals", "<score>0.0834721</score>", 0.0834721, "tag", None),
    ("leading-dot", "<score>.5</score>", 0.5, "tag", None),
    ("negative-leading-dot", "<score>-.2</score>", -0.2, "tag", None),
    ("integer-zero", "<score>0</score>", 0.0, "tag", None),
    ("negative-zero", "<score>-0.000</score>", 0.0, "tag", None),
    ("upper-bound", "<score>1.0</score>", 1.0, "tag", None),
    ("lower-bound", "<score>-0.500</score>", -0.5, "tag", None),
    (
        "gemma-preamble",
        "Based on the chart, the stock shows a bullish MA5/MA20 crossover with rising volume.\n\n"
        "<score>0.085</score>",
        0.085,
        "tag",
        None,
    ),
    (
        "explanation-after-tag",
        "<score>0.060</score>\n\nExplanation: the price bounced off the MA20 at 23.45 and volume rose 12%.",
        0.06,
        "tag",
        None,
    ),
    ("code-fence", "```xml\n<score>0.070</score>\n```", 0.07, "tag", None),
    ("markdown-bold-in-tag", "<score>**0.040**</score>", 0.04, "tag", None),
    ("extra-text-in-tag", "<score>approximately 0.05</score>", 0.05, "tag", "extra text in score tag"),
    ("chinese-prefix", "预测得分：<score>0.150</score>", 0.15, "tag", None),
    ("fullwidth-digits-in-tag", "<score>０.１２</score>", 0.12, "tag", None),
    ("fullwidth-everything", "＜score＞－０．０３＜／score＞", -0.03, "tag", None),
    ("unicode-minus", "<score>\u22120.030</score>", -0.03, "tag", None),
    ("en-dash-minus", "<score>\u20130.015</score>", -0.015, "tag", None),
    ("html-escaped", "&lt;score&gt;0.090&lt;/score&gt;", 0.09, "tag", None),
    ("zero-width-space", "<score>\u200b0.011</score>", 0.011, "tag", None),
    # --- tier 1: flagged tags ----------------------------------------------------------------
    ("truncated", "<score>0.1", 0.1, "tag", "unclosed score tag"),
    ("truncated-after-prose", "Analysis: bullish engulfing at support.\n<score>0.07", 0.07, "tag", "unclosed score tag"),
    ("opener-as-closer", "<score>0.1<score>", 0.1, "tag", "unclosed score tag"),
    (
        "repeated-tags",
        "<score>0.050</score>\nWait, reconsidering the volume spike.\n<score>0.080</score>",
        0.08,
        "tag",
        "multiple score tags",
    ),
    (
        "format-echo-then-answer",
        "I will answer in the format <score>numeric value</score>.\n<score>0.020</score>",
        0.02,
        "tag",
        None,
    ),
    ("percent-in-tag", "<score>12%</score>", 0.12, "tag", "percent converted"),
    ("negative-percent-in-tag", "<score>-3.5 %</score>", -0.035, "tag", "percent converted"),
    ("comma-decimal", "<score>0,125</score>", 0.125, "tag", "comma decimal separator"),
    ("out-of-range-high", "<score>1.5</score>", 1.5, "tag", "out of range [-0.5, 1.0]"),
    ("out-of-range-integer", "<score>12</score>", 12.0, "tag", "out of range [-0.5, 1.0]"),
    ("out-of-range-low", "<score>-0.750</score>", -0.75, "tag", "out of range"),
    ("thousands-separator", "<score>1,250.5</score>", 250.5, "tag", "out of range"),
    # --- tier 2: intervals ---------------------------------------------------------------------
    ("interval-in-tag", "<score>[0.05, 0.15]</score>", 0.05, "interval", None),
    ("interval-to-in-tag", "<score>0.05 to 0.15</score>", 0.05, "interval", None),
    ("negative-interval-in-tag", "<score>-0.05--0.02</score>", -0.05, "interval", None),
    ("plus-minus-in-tag", "<score>0.040 ± 0.020</score>", 0.04, "interval", None),
    ("percent-interval-in-tag", "<score>5%-10%</score>", 0.05, "interval", "percent converted"),
    ("interval-in-tag-out-of-range", "<score>[1.2, 1.5]</score>", 1.2, "interval", "out of range"),
    ("bracket-in-text", "The expected 30-day return lies in [0.05, 0.15].", 0.05, "interval", None),
    ("tilde-in-text", "Expected return: 0.05 ~ 0.15", 0.05, "interval", None),
    ("between-in-text", "I'd estimate the return to be between 0.02 and 0.06.", 0.02, "interval", None),
    ("hyphen-in-text", "Likely range 0.05-0.15 over the next month.", 0.05, "interval", None),
    ("negative-hyphen-in-text", "Likely range: -0.05--0.02 given the downtrend.", -0.05, "interval", None),
    ("point-estimate-with-ci", "Forecast 0.08 (95% CI: 0.02\u20130.12)", 0.08, "interval", None),
    ("point-estimate-bracket", "My estimate is 0.08 [0.02, 0.12].", 0.08, "interval", None),
    ("chinese-range", "预计收益在0.03至0.07之间", 0.03, "interval", None),
    ("labelled-point-then-interval", "Score: 0.42, confidence interval [0.30, 0.55]", 0.42, "scan",
     "labelled point estimate before an interval"),
    ("labelled-point-then-range", "prediction = 0.20; range 0.10-0.30", 0.2, "scan",
     "labelled point estimate before an interval"),
    ("unlabelled-number-then-interval", "Volume rose 0.35 times; the return lies in [0.05, 0.15].", 0.05,
     "interval", None),
    # --- tier 3: scan --------------------------------------------------------------------------
    ("prose-single", "I expect a modest gain of about 0.08 over the next 30 days.", 0.08, "scan", None),
    ("llava-short", "The answer is 0.1.", 0.1, "scan", None),
    (
        "prose-several",
        "MA5 is above MA20. Short-term momentum suggests 0.03, but resistance may cap it, "
        "so my final estimate is 0.05.",
        0.05,
        "scan",
        "several candidates; took the last",
    ),
    (
        "price-move-not-interval",
        "The price climbed from 12.50 to 13.20 last month; I expect about 0.040.",
        0.04,
        "scan",
        None,
    ),
    ("reversed-move-not-interval", "It fell from 0.48 to 0.42.", 0.42, "scan", "several candidates"),
    ("json", '{"score": 0.12}', 0.12, "scan", None),
    ("json-with-confidence", '{"score": 0.12, "confidence": 0.8}', 0.12, "scan", "took the last labelled"),
    ("score-colon", "Score: 0.045", 0.045, "scan", None),
    ("chinese-prose-labelled", "预测得分：0.150，置信度0.7", 0.15, "scan", "labelled"),
    ("fullwidth-prose", "预期收益约为０.１２", 0.12, "scan", None),
    ("percent-not-a-candidate", "Volume rose 0.5 % while I forecast 0.030", 0.03, "scan", None),
    ("currency-not-a-candidate", "Target $0.85, expected return 0.060", 0.06, "scan", None),
    # --- reasoning blocks ----------------------------------------------------------------------
    (
        "think-with-numbers",
        "<think>The close is 0.45 and MA20 is 0.52; a drop to 0.40 is possible.</think>\n<score>0.030</score>",
        0.03,
        "tag",
        None,
    ),
    ("think-then-prose", "<think>support at 0.62, resistance at 0.71</think>\nI estimate 0.045.", 0.045, "scan", None),
    (
        "deepseek-no-opener",
        "Okay, let me analyse. MA5 at 0.91 is above MA20.\n</think>\n\n<score>0.020</score>",
        0.02,
        "tag",
        None,
    ),
    (
        "think-unclosed",
        "<think>\nThe chart shows MA20 at 0.33 and a bearish engulfing",
        None,
        "none",
        "unclosed <think> block",
    ),
    (
        "tag-only-in-think",
        "<think>So my answer is <score>0.060</score></think>",
        0.06,
        "tag",
        "score tag found only inside reasoning block",
    ),
    ("think-only", "<think>hmm, 0.2 or 0.3</think>", None, "none", "empty answer after reasoning block"),
    # --- nothing to parse ----------------------------------------------------------------------
    ("dates-and-mas", "On 2024-03-15 the MA20 crossed above the MA50 and volume hit 1.2M.", None, "none", "no score found"),
    ("dotted-dates", "Chart from 15.01.2024 to 28.02.2024, MA5 and MA90 overlaid.", None, "none", "no score found"),
    ("percentages-only", "The stock could rise 5% to 8% over the next month.", None, "none", "no score found"),
    ("model-name", "Model: Qwen2.5-VL-7B-Instruct, 1.5x zoom", None, "none", "no score found"),
    ("prices-only", "The stock trades at 45.20 with RSI 67.5.", None, "none", "no score found"),
    ("refusal", "I cannot predict stock prices.", None, "none", "looks like a refusal"),
    ("refusal-chinese", "抱歉，我无法预测股票价格。", None, "none", "looks like a refusal"),
    ("tag-n/a", "<score>N/A</score>", None, "none", "score tag without a number"),
    ("empty-tag-no-fallthrough", "<score></score>\nThe trend is up by 0.05.", None, "none", "score tag without a number"),
    ("empty", "", None, "none", "empty response"),
    ("whitespace", " \n\t ", None, "none", "empty response"),
    ("none", None, None, "none", "empty response"),
    ("only-fences", "```\n\n```", None, "none", "empty response"),
]


@pytest.mark.parametrize(
    ("text", "value", "tier", "reason"),
    [pytest.param(*row[1:], id=row[0]) for row in CASES],
)
def test_parse_table(text: str | None, value: float | None, tier: str, reason: str | None) -> None:
    got = parse_score(text)
    assert got.tier == tier
    if value is None:
        assert got.value is None
    else:
        assert got.value == pytest.approx(value, abs=1e-12)
    if reason is None:
        assert got.reason is None
    else:
        assert got.reason is not None and reason in got.reason
    assert got.in_range == (value is not None and -0.5 <= value <= 1.0)


def test_table_is_large_and_covers_every_tier() -> None:
    assert len(CASES) >= 45
    assert len({row[0] for row in CASES}) == len(CASES)
    assert {row[3] for row in CASES} == set(TIERS)


def test_negative_zero_is_positive_zero() -> None:
    value = parse_score("<score>-0.000</score>").value
    assert value is not None and math.copysign(1.0, value) == 1.0


def test_custom_range_moves_in_range_and_the_reason() -> None:
    assert parse_score("<score>1.5</score>", lo=-1.0, hi=2.0) == ParsedScore(1.5, "tag", None, True)
    got = parse_score("<score>0.7</score>", lo=0.0, hi=0.5)
    assert got == ParsedScore(0.7, "tag", "out of range [0.0, 0.5]", False)
    # the scan only keeps candidates inside the given range
    assert parse_score("maybe 0.7, maybe 1.7", lo=0.0, hi=2.0).value == 1.7
    assert parse_score("maybe 0.7, maybe 1.7").value == 0.7


def test_flags_combine() -> None:
    got = parse_score("<score>0.1</score> <score>150%")
    assert got.value == pytest.approx(1.5)
    assert got.reason is not None
    for part in ("multiple score tags (2)", "unclosed score tag", "percent converted", "out of range"):
        assert part in got.reason


def test_non_text_input_does_not_raise() -> None:
    got = parse_score(float("nan"))  # type: ignore[arg-type]  # a missing cell read back from pandas
    assert got.value is None and got.tier == "none" and got.reason == "non-text response (float)"


def test_result_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        parse_score("<score>0.1</score>").value = 0.2  # type: ignore[misc]


@pytest.mark.parametrize(
    "text",
    ["0.1-" * 20_000, "<score>" * 20_000, "<think>" * 20_000 + "0.1", "[0.1, " * 20_000, "1" * 100_000],
)
def test_pathological_inputs_stay_fast(text: str) -> None:
    start = time.perf_counter()
    parse_score(text)
    assert time.perf_counter() - start < 5.0


# --- properties ------------------------------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [
        "<score>", "</score>", "< Score >", "<think>", "</think>", "```", "0.1", "-0.05", "1.5", ".5",
        "12", "%", "-", "--", "~", " to ", "between ", " and ", "[", "]", "(", ")", ",", "±", "\u2212",
        "０", "．", "score: ", '"score": ', "MA20", "2024-01-15", " ", "\n", "x", "得分：", "&lt;", "$",
    ]
)
FRAGMENT_TEXT = st.lists(FRAGMENTS, max_size=30).map("".join)


def _check_consistent(got: ParsedScore, lo: float = -0.5, hi: float = 1.0) -> None:
    assert isinstance(got, ParsedScore)
    assert got.tier in TIERS
    assert (got.value is None) == (got.tier == "none")
    assert got.in_range == (got.value is not None and lo <= got.value <= hi)
    assert got.reason is None or (isinstance(got.reason, str) and got.reason)
    if got.tier == "none":
        assert got.reason
    if got.tier == "scan":
        assert got.in_range
    if got.value is not None:
        assert not math.isnan(got.value)


ASCII_BLANKS = st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f", max_size=3)
DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=4)
# A sign, then 12.34, 12 or .34
PLAIN_NUMBER = st.builds(lambda sign, whole, frac, form: sign + (f"{whole}.{frac}", whole, f".{frac}")[form],
                         st.sampled_from(["", "+", "-"]), DIGITS, DIGITS, st.integers(0, 2))


@settings(max_examples=300, deadline=None)
@given(ASCII_BLANKS, ASCII_BLANKS, PLAIN_NUMBER, ASCII_BLANKS, ASCII_BLANKS,
       st.floats(min_value=-3.0, max_value=3.0, allow_nan=False), st.floats(min_value=0.0, max_value=3.0, allow_nan=False))
def test_the_answer_as_asked_reads_as_the_rules_read_it(before, inside, number, after_number, after, lo, width):
    """The fast path of the answer exactly as the prompt asks for it gives what rules 1-22 give."""
    text = f"{before}<score>{inside}{number}{after_number}</score>{after}"
    assert parse_score(text, lo, lo + width) == parse_by_rules(text, lo, lo + width)


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_any_text_gives_consistent_result(text: str) -> None:
    _check_consistent(parse_score(text))
    assert parse_score(text) == parse_by_rules(text)


@settings(max_examples=500, deadline=None)
@given(FRAGMENT_TEXT)
def test_adversarial_fragments_give_consistent_result(text: str) -> None:
    _check_consistent(parse_score(text))
    assert parse_score(text) == parse_by_rules(text)


@settings(max_examples=200, deadline=None)
@given(
    FRAGMENT_TEXT,
    st.floats(min_value=-3.0, max_value=3.0, allow_nan=False),
    st.floats(min_value=0.0, max_value=3.0, allow_nan=False),
)
def test_custom_range_consistent(text: str, lo: float, width: float) -> None:
    _check_consistent(parse_score(text, lo=lo, hi=lo + width), lo=lo, hi=lo + width)


def _tagless(s: str) -> bool:
    norm = unicodedata.normalize("NFKC", s)
    return "<" not in norm and "&" not in norm


@settings(max_examples=300, deadline=None)
@given(
    st.text().filter(_tagless),
    st.floats(min_value=-0.5, max_value=1.0, allow_nan=False),
    st.sampled_from(["<score>{}</score>", "<Score> {} </Score>", "<score>\n{}\n</score>"]),
)
def test_final_clean_tag_always_wins(prefix: str, x: float, template: str) -> None:
    formatted = f"{x:.3f}"
    got = parse_score(prefix + "\n" + template.format(formatted))
    assert got == ParsedScore(float(formatted) + 0.0, "tag", None, True)
