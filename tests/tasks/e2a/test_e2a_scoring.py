"""E2A-style scoring pieces: the answer parser on malformed outputs, the claim matcher on English
and Chinese sentences (supported, contradicted, negated, unverifiable), the metrics on hand-built
response sets, and the reference responders' known values on real windows."""

from __future__ import annotations

import time

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from candlebench.tasks.e2a.anchors import Anchors, compute_anchors
from candlebench.tasks.e2a.claims import extract_claims, judge, polarity
from candlebench.tasks.e2a.claims.scan import first_chars
from candlebench.tasks.e2a.metrics import e2a_metrics
from candlebench.tasks.e2a.parse import parse_response
from candlebench.tasks.e2a.responders import RESPONDERS

pytestmark = pytest.mark.unit

# --- parser ----------------------------------------------------------------------------------------

PARSES = [  # text, action, confidence, tier, reason part
    ('{"analysis": "a", "rationale": "r", "action": "BUY", "confidence": 0.8}', "BUY", 0.8, "json", None),
    ('```json\n{"analysis": "a", "rationale": "r", "action": "SELL", "confidence": 0.6}\n```', "SELL", 0.6, "json", None),
    ('Here is my answer:\n{"action": "hold", "rationale": "flat", "confidence": "70%"}\nHope it helps.', "HOLD", 0.7, "json", None),
    ('{"Action": "Buy", "Rationale": "up", "Confidence": 85}', "BUY", 0.85, "json", None),
    ('{"分析": "均线多头", "理由": "看涨", "操作": "买入", "置信度": 0.9}', "BUY", 0.9, "json", None),
    ('{"action": "卖出", "rationale": "看跌", "confidence": "high"}', "SELL", 0.8, "json", None),
    ('{"action": "观望", "rationale": "不明朗", "confidence": "低"}', "HOLD", 0.2, "json", None),
    ('{"action": "BUY", "rationale": "x"}', "BUY", None, "json", "no confidence"),
    ('{"action": "BUY", "rationale": "x", "confidence": 3.5e2}', "BUY", None, "json", "confidence out of range"),
    ('{"action": "STRONG BUY", "rationale": "x", "confidence": 0.9}', "BUY", 0.9, "json", None),
    ('{"action": "accumulate", "rationale": "x", "confidence": 0.9}', "BUY", 0.9, "json", None),
    ('{"action": "frobnicate", "rationale": "x", "confidence": 0.9}', None, None, "none", "unknown action"),
    ('{"analysis": "only analysis", "confidence": 0.5}', None, None, "none", "no action found"),
    ('{"action": "BUY", "rationale": "x", "confidence": 0.7', "BUY", 0.7, "fields", None),
    ("Analysis: golden cross.\nRationale: bullish.\nAction: BUY\nConfidence: 0.75", "BUY", 0.75, "fields", None),
    ("**Action**: Sell\n**Confidence**: 60%\n**Rationale**: breakdown", "SELL", 0.6, "fields", None),
    ("- action: hold\n- confidence - moderate", "HOLD", 0.5, "fields", None),
    ("操作：卖出\n置信度：80%\n理由：放量下跌", "SELL", 0.8, "fields", None),
    ("建议：持有\n信心：中", "HOLD", 0.5, "fields", None),
    ("I would BUY this stock given the uptrend.", "BUY", None, "free", "action from free text"),
    ("Hold for now; later maybe SELL.", "SELL", None, "free", "several actions"),
    ("建议买入，趋势向上。", "BUY", None, "free", "action from free text"),
    ("The chart is unclear, so UNCERTAIN.", "UNCERTAIN", None, "free", None),
    ("No recommendation possible.", None, None, "none", "no action found"),
    ("", None, None, "none", "empty response"),
    (None, None, None, "none", "empty response"),
    ("   \n ", None, None, "none", "empty response"),
    ("<think>golden cross, BUY?</think>{\"action\": \"SELL\", \"rationale\": \"r\", \"confidence\": 0.4}", "SELL", 0.4, "json", None),
    ("<think>the MA20 is rising and I would BUY", None, None, "none", "unclosed <think> block"),
    ("｛\"action\"： \"ＢＵＹ\"， \"rationale\"： \"r\"， \"confidence\"： ０.６｝", "BUY", 0.6, "json", None),
    ('{"action": "BUY", "rationale": {"points": ["up"]}, "confidence": 0.66}', "BUY", 0.66, "json", None),
    ("Confidence: very high. Action: BUY", "BUY", 0.9, "fields", None),
    ('{"action": true, "rationale": "r"}', None, None, "none", "unknown action"),
]


@pytest.mark.parametrize(("text", "action", "confidence", "tier", "reason"), PARSES, ids=[str(i) for i in range(len(PARSES))])
def test_parser_table(text, action, confidence, tier, reason):
    got = parse_response(text)
    assert (got.action, got.tier) == (action, tier)
    assert got.confidence == (pytest.approx(confidence) if confidence is not None else None)
    if reason is None:
        assert got.reason is None or "action from free text" in got.reason
    else:
        assert got.reason and reason in got.reason


@given(st.text(max_size=300))
def test_parser_invariants(text):
    got = parse_response(text)
    assert (got.action is None) == (got.tier == "none")
    assert got.tier != "none" or got.reason
    assert got.confidence is None or 0 <= got.confidence <= 1


# --- claims ----------------------------------------------------------------------------------------


def fake(labels: dict[str, str], **values: float) -> Anchors:
    base = {"ma_position": "mixed", "ma_cross": "none", "trend": "flat", "momentum_5d": "flat",
            "range_position": "middle", "breakout": "none", "volume_change": "normal", "price_volume": "neutral",
            "volatility": "normal", "last_candle": "ordinary"}
    numbers = {"ma_position": 0.01, "ma_position_mid": 0.0, "ma_position_short": -0.01, "ma_cross": 0.0,
               "golden_cross_bars": np.nan, "death_cross_bars": np.nan}
    return Anchors({**base, **labels}, {**numbers, **values}, ())


UP = fake({"ma_cross": "golden", "trend": "up", "momentum_5d": "up", "range_position": "top", "breakout": "up",
           "volume_change": "surge", "price_volume": "rise_on_volume", "volatility": "high",
           "last_candle": "long_bullish", "ma_position": "above_both"}, ma_position=0.05, ma_position_short=0.02,
          ma_position_mid=0.03, ma_cross=0.01, golden_cross_bars=2.0)
DOWN = fake({"ma_cross": "death", "trend": "down", "momentum_5d": "down", "range_position": "bottom",
             "breakout": "down", "volume_change": "shrink", "price_volume": "fall_on_low_volume", "volatility": "low",
             "last_candle": "doji", "ma_position": "below_both"}, ma_position=-0.05, ma_position_short=-0.02,
            ma_position_mid=-0.03, ma_cross=-0.01, death_cross_bars=2.0)

SENTENCES = [  # sentence, anchors, expected (anchor, verdict) claims
    ("A golden cross just formed.", UP, [("ma_cross", "supported")]),
    ("A golden cross just formed.", DOWN, [("ma_cross", "contradicted")]),
    ("There is no golden cross.", DOWN, [("ma_cross", "supported")]),
    ("There is no golden cross.", UP, [("ma_cross", "contradicted")]),
    ("MA5 crossed under MA20 in a death cross.", DOWN, [("ma_cross", "supported")]),
    ("出现金叉。", UP, [("ma_cross", "supported")]),
    ("未出现金叉。", UP, [("ma_cross", "contradicted")]),
    ("短期均线形成死叉。", DOWN, [("ma_cross", "supported")]),
    ("短期均线在长期均线上方。", UP, [("ma_cross", "supported")]),  # the short average is MA5, the long MA20
    ("The price is above the 20-day moving average.", UP, [("ma_position", "supported")]),
    ("The price is above the 20-day moving average.", DOWN, [("ma_position", "contradicted")]),
    ("It trades below its 20-day MA.", DOWN, [("ma_position", "supported")]),
    ("The close has not fallen below MA20.", UP, [("ma_position", "supported")]),
    ("跌破20日均线。", DOWN, [("ma_position", "supported")]),
    ("站上20日均线。", DOWN, [("ma_position", "contradicted")]),
    ("股价位于5日均线之上。", UP, [("ma_position", "supported")]),
    ("The close is above both moving averages.", UP, [("ma_position", "supported")]),
    ("The close is below both moving averages.", UP, [("ma_position", "contradicted")]),
    ("The stock is in a clear uptrend.", UP, [("trend", "supported")]),
    ("The stock is in a clear uptrend.", DOWN, [("trend", "contradicted")]),
    ("A downtrend dominates the window.", DOWN, [("trend", "supported")]),
    ("呈现下降趋势。", DOWN, [("trend", "supported")]),
    ("Prices have been trading sideways.", UP, [("trend", "contradicted")]),
    ("It shows strong momentum.", UP, [("momentum_5d", "supported")]),
    ("Momentum is weak, with negative momentum in the last days.", UP, [("momentum_5d", "contradicted")]),
    ("The close is near the top of its range.", UP, [("range_position", "supported")]),
    ("The stock trades near its recent lows.", UP, [("range_position", "contradicted")]),
    ("接近区间下沿。", DOWN, [("range_position", "supported")]),
    ("A breakout above resistance is under way.", UP, [("breakout", "supported")]),
    ("The stock has not broken out; no breakout yet.", UP, [("breakout", "contradicted")]),
    ("A breakdown below support happened.", DOWN, [("breakout", "supported")]),
    ("向上突破前高。", DOWN, [("breakout", "contradicted")]),
    ("There is a volume surge.", UP, [("volume_change", "supported")]),
    ("Volume is shrinking: light volume all week.", DOWN, [("volume_change", "supported")]),
    ("成交量萎缩。", UP, [("volume_change", "contradicted")]),
    # A price-volume phrase is that one claim (tests/gold/e2a/README.md); "volume breakout" is volume.
    ("放量上涨。", UP, [("price_volume", "supported")]),
    ("缩量下跌。", DOWN, [("price_volume", "supported")]),
    ("The stock rallied on heavy volume.", DOWN, [("price_volume", "contradicted")]),
    ("A volume breakout confirms it.", UP, [("volume_change", "supported")]),
    ("High volatility makes it risky.", UP, [("volatility", "supported")]),
    ("波动较小。", DOWN, [("volatility", "supported")]),
    ("The last bar is a long bullish candle.", UP, [("last_candle", "supported")]),
    ("收出一根大阴线。", UP, [("last_candle", "contradicted")]),
    ("A doji signals indecision.", DOWN, [("last_candle", "supported")]),
    ("RSI is overbought and MACD turned up.", UP, [(None, "unverifiable"), (None, "unverifiable")]),
    ("A head and shoulders pattern is forming.", DOWN, [(None, "unverifiable")]),
    ("形成头肩顶形态。", DOWN, [(None, "unverifiable")]),
    ("The company has strong fundamentals.", UP, []),
    ("公司基本面良好。", UP, []),
]


@pytest.mark.parametrize(("sentence", "anchors", "expected"), SENTENCES, ids=[str(i) for i in range(len(SENTENCES))])
def test_claim_matcher(sentence, anchors, expected):
    got = [(c.anchor, c.verdict) for c in extract_claims(sentence, anchors)]
    assert sorted(got, key=str) == sorted(expected, key=str)


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"\bup-?trend|(?:ris(?:e|es)|rose) on|放量", {"u", "r", "放"}), ("(?:a|)b", {"a", "b"}), ("[x-z]?c", {"x", "y", "z", "c"}),
    (r"\w+x", None), ("a?", None), ("[^a]b", None), ("(?i:a)b", None), (".b", None),
])
def test_first_characters_of_a_frame(pattern, expected):
    # A frame scan's look-ahead admits these characters only: a set too small would lose matches.
    assert first_chars(pattern) == (None if expected is None else frozenset(expected))


@pytest.mark.parametrize(("text", "expected"), [
    ("The setup is bullish with upside.", "bullish"), ("Bearish: a sell-off looms.", "bearish"),
    ("Not bullish at all.", "bearish"), ("看涨，利好。", "bullish"), ("看跌。", "bearish"),
    ("Bullish and bearish signals balance.", "neutral"), ("", "neutral"),
])
def test_rationale_polarity(text, expected):
    assert polarity(text) == expected


# --- metrics ---------------------------------------------------------------------------------------


def rows(*items) -> pd.DataFrame:
    keys = ("modality", "action", "confidence", "polarity", "strong_signals", "supported", "contradicted")
    return pd.DataFrame([dict(zip(keys, item)) for item in items], columns=keys)


def test_metrics_on_a_hand_built_set():
    frame = rows(
        ("text", "BUY", 0.9, "bullish", 1, 2, 1),    # overconfident (0.9, 1 strong signal)
        ("text", "SELL", 0.5, "bullish", 3, 1, 0),   # inconsistent
        ("chart", "HOLD", 0.5, "neutral", 0, 0, 2),
        ("chart", "BUY", 0.6, "bullish", 2, 0, 0),   # directional without a claim
        ("both", None, None, "neutral", 2, 0, 0),    # unparseable
    )
    m = e2a_metrics(frame)["all"]
    assert m["n"] == 5 and m["n_directional"] == 3
    # Response-level UCR (1/3, 0, 1, 0, 0), averaged over all and over the three directional (§3.3).
    assert m["ucr_all"] == pytest.approx((1 / 3 + 1) / 5) and m["ucr_dir"] == pytest.approx(1 / 9)
    assert m["rci"] == pytest.approx(1 / 3) and m["eci"] == pytest.approx(1 / 3)
    assert m["coverage"] == pytest.approx(3 / 5)
    assert m["ndr"] == pytest.approx(3 / 5 * 8 / 9 * 2 / 3 * 2 / 3)
    assert m["buy_sell_ratio"] == 2 and m["no_claim_share"] == pytest.approx(1 / 3)
    assert m["joint_pass_rate"] == 0  # the grounded BUY is overconfident, the SELL inconsistent
    assert m["parse_failure_rate"] == pytest.approx(1 / 5)
    # Cov_tau: directional with S >= tau over all responses, so it only falls as tau rises; NDR_tau's
    # diagnostics come from D_tau (tau 2: the SELL, inconsistent, and the chart BUY).
    assert m["coverage_tau1"] == pytest.approx(3 / 5)
    assert m["coverage_tau2"] == pytest.approx(2 / 5) and m["coverage_tau3"] == pytest.approx(1 / 5)
    assert m["ndr_tau2"] == pytest.approx(2 / 5 * 1 * 1 / 2 * 1) and m["ndr_tau3"] == 0.0
    blocks = e2a_metrics(frame)["modalities"]
    assert set(blocks) == {"text", "chart", "both"} and blocks["text"]["n"] == 2
    assert blocks["both"]["ndr"] == 0 and blocks["both"]["rci"] is None  # nothing directional there
    assert set(blocks["text"]) == set(m)


def test_a_missing_confidence_is_missing_not_zero():
    frame = rows(("text", "BUY", None, "bullish", 0, 1, 0), ("text", "SELL", 0.9, "bearish", 0, 1, 0),
                 ("text", "BUY", 0.5, "bullish", 0, 1, 0))
    m = e2a_metrics(frame)["all"]
    assert m["eci"] == pytest.approx(1 / 2)  # of the two that state one, the 0.9 on a weak window
    assert m["no_confidence_share"] == pytest.approx(1 / 3)
    assert m["ndr"] == pytest.approx(1 * 1 * 1 * 1 / 2)


def test_no_directional_response_and_an_empty_modality():
    hold = rows(("text", "HOLD", 0.5, "neutral", 2, 1, 0), ("chart", "UNCERTAIN", 0.3, "neutral", 0, 0, 0))
    m = e2a_metrics(hold)
    assert m["all"]["ndr"] == 0 and m["all"]["coverage"] == 0
    assert m["all"]["rci"] is None and m["all"]["eci"] is None and m["all"]["ucr_dir"] is None
    assert m["modalities"]["both"]["n"] == 0 and m["modalities"]["both"]["ndr"] == 0


# --- reference responders on real windows ---------------------------------------------------------


@pytest.fixture(scope="module")
def windows(slice_market) -> list[tuple[str, Anchors]]:
    out = []
    for code in ("AC", "SM", "TEL", "JFC"):
        bars = slice_market.stock(code)
        for end in range(60, len(bars), 25):
            history = {k: bars[k].to_numpy()[:end] for k in ("open", "high", "low", "close", "volume")}
            out.append((code, compute_anchors(history)))
    return out


def score(responder: str, windows) -> dict:
    records = []
    for i, (_, anchors) in enumerate(windows):
        answer = parse_response(RESPONDERS[responder](anchors))
        records.append({"modality": ("text", "chart", "both")[i % 3], "action": answer.action,
                        "confidence": answer.confidence, "strong_signals": anchors.strong_signals,
                        **judge(answer.analysis, answer.rationale, anchors)})
    return e2a_metrics(pd.DataFrame(records))["all"]


def test_reference_responders_give_their_known_values(windows):
    oracle = score("anchor_oracle", windows)
    assert oracle["ucr_all"] == 0 and oracle["ucr_dir"] == 0 and oracle["rci"] == 0 and oracle["eci"] == 0
    assert 0 < oracle["coverage"] < 1 and oracle["ndr"] == pytest.approx(oracle["coverage"])
    assert oracle["joint_pass_rate"] == 1 and oracle["parse_failure_rate"] == 0
    hold = score("always_hold", windows)
    assert hold["coverage"] == 0 and hold["ndr"] == 0 and hold["ucr_all"] == 0
    contrarian = score("contrarian", windows)
    assert contrarian["rci"] == 1 and contrarian["ndr"] == 0 and contrarian["coverage"] == oracle["coverage"]
    assert np.isclose(contrarian["buy_sell_ratio"], 1 / oracle["buy_sell_ratio"])
    # Stating the opposite of every fact and acting on it is not rewarded (it once scored a perfect NDR).
    liar = score("liar", windows)
    assert liar["coverage"] == 1 and liar["ucr_dir"] == 1 and liar["ucr_all"] == 1 and liar["ndr"] == 0
    assert liar["no_claim_share"] == 0


def test_stock_bootstrap_and_paired_comparison():
    from helpers import e2a_compare

    rng = np.random.default_rng(3)
    base, tuned = [], []
    for i in range(120):
        code, strong = f"S{i % 12}", int(rng.integers(0, 4))
        common = {"sample_id": f"s{i}", "code": code, "cutoff": "2024-01-05", "modality": ("text", "chart", "both")[i % 3],
                  "strong_signals": strong, "supported": int(rng.integers(0, 3)), "contradicted": int(rng.integers(0, 2))}
        base.append({**common, "action": ("BUY", "SELL", "HOLD")[i % 3], "confidence": 0.5, "polarity": "neutral"})
        tuned.append({**common, "action": "BUY" if i % 6 else "SELL", "confidence": 0.9, "polarity": "bullish"})
    a, b = pd.DataFrame(base), pd.DataFrame(tuned)
    m = e2a_metrics(a, n_boot=300, seed=1)
    for block in (m["all"], *m["modalities"].values()):
        for name in ("coverage", "ucr_all", "ndr"):
            low, high = block["ci"][name]
            assert low <= block[name] <= high
    again = e2a_metrics(a, n_boot=300, seed=1)
    assert again["all"]["ci"] == m["all"]["ci"]  # seeded
    c = e2a_compare(a, b, n_boot=300, seed=1)
    assert c["n"] == 120
    assert c["coverage"]["diff"] == pytest.approx(1 - 80 / 120)
    low, high = c["coverage"]["ci"]
    assert low <= c["coverage"]["diff"] <= high and low > 0
    # 12 stock-windows (one cutoff: a stock is a window). b acts where a held on 40 answers, all of four
    # stocks (S2, S5, S8, S11), the same way: of the 2^4 swaps of those, 2 are as extreme; the other 8 add nothing.
    assert (c["unit"], c["n_clusters"]) == ("stock-window", 12) and c["coverage"]["p"] == pytest.approx(2 / 16)
    # BUY:SELL goes from 40:40 to 100:20 -> 5x
    assert c["buy_sell_ratio"]["times"] == pytest.approx(5.0)
    # Per modality: "both" goes from HOLD everywhere to acting everywhere; "text" acts in both runs.
    both, text = c["groups"]["modality"]["both"], c["groups"]["modality"]["text"]
    assert both["n"] == 40 and both["coverage"]["diff"] == 1 and text["coverage"]["diff"] == 0
    # Each modality's answers come from 4 of the stocks: too few clusters for a test.
    assert both["n_clusters"] == 4 and both["coverage"]["p"] is None and both["coverage"]["p_holm"] is None
    assert both["coverage"]["method"].startswith("fewer than 10 clusters")
    assert e2a_compare(a, a, n_boot=0)["ndr"]["diff"] == 0


def test_verify_prompt_lists_each_claim_with_its_fact_and_verdict():
    from candlebench.stages.graph import compose_config
    from candlebench.task_api.base import FirstPassAnswer
    from candlebench.tasks.e2a.verify import verify_prompt

    words = compose_config(["task=e2a"]).task.verify.en
    labels = {"ma_position": "above_both", "ma_cross": "none", "trend": "up", "momentum_5d": "flat",
              "range_position": "middle", "breakout": "none", "volume_change": "normal", "price_volume": "neutral",
              "volatility": "normal", "last_candle": "ordinary"}
    anchors = Anchors(labels, {"ma_position": 0.02, "ma_position_mid": 0.015, "ma_position_short": 0.01, "ma_cross": 0.01,
                               "golden_cross_bars": np.nan, "death_cross_bars": np.nan}, ("ma_position",))
    said = {"analysis": "A golden cross formed. RSI is overbought. The close is above both moving averages.",
            "rationale": "The uptrend holds.", "action": "BUY", "confidence": 0.8}
    prompt = verify_prompt(words.prompt, words, "PROMPT", FirstPassAnswer("first", json.dumps(said), said, None), anchors)
    assert prompt.startswith("PROMPT\n\nYour earlier answer was:\n" + json.dumps(said))
    assert '- "A golden cross formed" (golden cross): contradicted by the data (golden cross: none in the window)' in prompt
    assert '- "RSI is overbought" (rsi): not checkable against these facts' in prompt
    assert ('- "The close is above both moving averages" (close above all mas): supported by the data '
            '(close vs MA5 +1.00%, close vs MA10 +1.50%, close vs MA20 +2.00%)') in prompt
    assert '- "The uptrend holds" (uptrend): supported by the data (trend: up)' in prompt
    assert all(f"- {a}: {label}" in prompt for a, label in labels.items())
    assert "- MA5/MA20 crossings: golden cross: none in the window; death cross: none in the window" in prompt
    # Each claim once, with one verdict, however often the answer repeats it.
    twice = {**said, "rationale": "A golden cross formed. The uptrend holds."}
    again = verify_prompt(words.prompt, words, "P", FirstPassAnswer("first", json.dumps(twice), twice, None), anchors)
    assert again.count("(golden cross)") == 1 and again.count("(uptrend)") == 1
    # An answer that was not parsed: its claims are read from what it wrote.
    raw = verify_prompt(words.prompt, words, "P", FirstPassAnswer("first", "Death cross!! sell", None, "no JSON object"), anchors)
    assert "Death cross!! sell" in raw
    assert '- "Death cross" (death cross): contradicted by the data (death cross: none in the window)' in raw
    # No text at all (generation failed): says so, with no claim to check.
    none = verify_prompt(words.prompt, words, "P", FirstPassAnswer("first", None, None, "CUDA out of memory"), anchors)
    assert "(no readable answer: CUDA out of memory)" in none and "(no claim that these facts can check)" in none


def test_frontier_points_share_labels_and_arrows_follow_each_pair_by_modality():
    from candlebench.report.model import RunMetrics
    from candlebench.tasks.e2a.report import frontier

    def run(name, blocks):
        return RunMetrics(name, name, {"modalities": blocks, "all": {}}, "PSE")

    base = run("base", {"text": {"coverage": 0.5, "ucr_dir": 0.4}, "chart": {"coverage": 0.2, "ucr_dir": 0.1}})
    tuned = run("tuned", {"text": {"coverage": 0.9, "ucr_dir": 0.4}, "chart": {"coverage": 0.2, "ucr_dir": 0.1}})
    silent = run("silent", {"text": {"coverage": 0.0, "ucr_dir": None}})  # nothing directional: no point
    points, arrows = frontier([base, tuned, silent], {"PSE: base → tuned": {}, "base → silent": {}})
    assert points == {(0.5, 0.6): ["base · text"], (0.2, 0.9): ["base · chart", "tuned · chart"], (0.9, 0.6): ["tuned · text"]}
    assert arrows == [((0.5, 0.6), (0.9, 0.6))]  # chart did not move; silent has no point


def test_every_judge_reads_a_bounded_answer():
    """An answer over MAX_TEXT_CHARS is not parsed, a parsed answer over MAX_ANSWER_CHARS is not
    judged (both: no answer, with a reason giving the length), and the claim matcher reads an
    unparsed text's first MAX_ANSWER_CHARS characters: a 10 MB answer costs milliseconds."""
    from candlebench.core.results import MAX_ANSWER_CHARS, MAX_TEXT_CHARS
    from candlebench.tasks.caption.task import TASK as CAPTION
    from candlebench.tasks.e2a.task import _said
    from candlebench.tasks.forecast.task import TASK as FORECAST
    from helpers import setup_of

    caption = CAPTION.judge(setup_of("task=caption", "task.words=[1,400]").settings)
    assert caption("The stock rose 5%.").answer == "The stock rose 5%." and caption(None).reason == "no text (generation failed)"
    started = time.perf_counter()
    giant = caption("up " * 3_500_000)  # 10.5 MB
    long = caption("The stock rose. " * 1_000)  # 16,000 characters: parsed, too long to judge
    assert time.perf_counter() - started < 1
    assert (giant.answer, giant.tier, giant.columns) == (None, "none", {"words": None})
    assert giant.reason == f"answer of 10,500,000 characters, over the {MAX_TEXT_CHARS:,} a parser reads: scored as no answer"
    assert long.answer is None and long.reason.startswith("parsed answer of 16,001 characters") and f"over the {MAX_ANSWER_CHARS:,}" in long.reason
    forecast = FORECAST.judge(setup_of("task=forecast", "task.horizon=5", "task.answer_format=null").settings)
    assert forecast("<score>0.5</score>" + " " * MAX_TEXT_CHARS).answer is None
    answer, analysis, rationale = _said({"answer": None, "text": "Volume rose. " * 800_000})
    assert answer == {} and len(analysis) == len(rationale) == MAX_ANSWER_CHARS
