"""The reading task's pieces on real samples of the slice and hand-made answers: samples on the
forecast grid that see nothing at or after the cutoff, the prompt of each modality and language,
the parser's invariants, the metrics, the paired comparison, the baselines, and reading next to
forecasting. The stages end to end: tests/test_run.py (the own-data run covers every task)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from candlebench.core.layout import TaskPaths
from candlebench.core.results import RunAnswers
from candlebench.market.market import load_market
from helpers import SLICE, setup_of
from candlebench.report.model import Dataset, scored_run
from candlebench.report.tables import with_answered
from candlebench.task_api.registry import get_task
from candlebench.task_api.base import ScoreSettings
from candlebench.tasks.forecast.samples import cutoff_dates
from candlebench.tasks.reading.baselines import BASELINES
from candlebench.tasks.reading.compare import compare_runs
from candlebench.tasks.reading.forecast_link import forecast_link
from candlebench.tasks.reading.metrics import reading_metrics, verdicts
from candlebench.tasks.reading.parse import parse_answer
from candlebench.tasks.reading.report import sections
from candlebench.tasks.reading.questions import TYPES
from candlebench.tasks.reading.samples import build_samples
from candlebench.tasks.reading.task import TASK, frame_block

pytestmark = pytest.mark.unit
SPEC = setup_of("task=reading", "task.samples.codes=[AC,SM]", "task.samples.interval=120").settings


@pytest.fixture(scope="module")
def samples(market, cfg):
    return build_samples(market, SPEC, cfg.context.render.spec)


def answered(samples: pd.DataFrame, texts: dict[str, str | None]) -> pd.DataFrame:
    """A run's parsed rows as the score stage makes them: the samples with the parser's answer."""
    parse = TASK.parser(None)
    found = [parse(texts.get(sid)) for sid in samples["sample_id"]]
    return samples.assign(answer=[None if p.answer is None else json.dumps(p.answer) for p in found],
                          text=[texts.get(sid) for sid in samples["sample_id"]])


def test_samples_are_the_forecast_grid_per_frame_and_modality(market, samples):
    frame, summary = samples
    grid = set(cutoff_dates(market.calendar, setup_of("task=forecast", "task.samples.interval=120").settings.samples))
    assert set(frame["cutoff"]) <= grid and frame["cutoff"].nunique() >= 5
    per_chart = frame.groupby(["code", "cutoff", "frame"])
    assert set(frame["modality"]) == {"chart", "text"} and (per_chart.size() == 2).all()
    assert set(frame["frame"]) == {"daily", "weekly", "both"}  # both: the two charts of a stock and cutoff together
    assert (per_chart["questions"].nunique() == 1).all()  # both modalities ask the same of one chart
    assert summary["charts"] == len(per_chart) and sum(summary["asked"].values()) == frame.drop_duplicates(
        ["code", "cutoff", "frame"])["n_questions"].sum()
    assert all(json.loads(q) for q in frame["questions"])


def test_no_bar_at_or_after_the_cutoff_reaches_an_answer(market, samples, cfg, tmp_path):
    frame, _ = samples
    cutoff = sorted(frame["cutoff"].unique())[2]
    bars = pd.read_csv(SLICE)
    later = pd.to_datetime(bars["date"]) >= cutoff
    bars.loc[later, ["open", "high", "low", "close"]] *= 3.0  # any answer reading these would change
    bars.loc[later, "volume"] *= 0.01
    bars.to_csv(tmp_path / "moved.csv", index=False)
    moved, _ = build_samples(load_market([tmp_path / "moved.csv"], name="PSE"), SPEC, cfg.context.render.spec)
    keep = ["sample_id", "questions", "left_out", "marked", "mark_color"]
    before = frame["cutoff"] <= cutoff
    pd.testing.assert_frame_equal(moved.loc[moved["cutoff"] <= cutoff, keep].reset_index(drop=True),
                                  frame.loc[before, keep].reset_index(drop=True))
    assert not moved.loc[moved["cutoff"] > cutoff, "questions"].equals(frame.loc[~before, "questions"])


def test_each_request_asks_its_chart_questions_in_its_language(cfg, samples):
    frame, _ = samples
    chart = frame[(frame["modality"] == "chart") & (frame["frame"] == "weekly")].iloc[0]
    text = frame[(frame["sample_id"] != chart["sample_id"]) & (frame["modality"] == "text")
                 & (frame["frame"] == "daily")].iloc[0]
    ohlcv = "AC daily bars before x\ndate,open\n1,2\n\nAC weekly bars before x\ndate,open\n3,4"
    asked = json.loads(chart["questions"])
    spec = TASK.request(cfg.settings, cfg.context, chart, {"text_ohlcv": ohlcv})
    assert spec.charts == ("weekly",) and spec.texts == () and "weekly candlestick chart" in spec.prompt
    assert all(f"{q}:" in spec.prompt for q in asked) and "MA5 black, MA20 blue, MA90 purple" in spec.prompt
    letter, back, date = json.loads(chart["marked"])[0]
    assert letter == "A" and f"A = bar {back} from the right ({date})" in spec.prompt
    assert spec.prompt.count("\n1. ") == 1 and f"{len(asked)}. " in spec.prompt
    on_text = TASK.request(cfg.settings, cfg.context, text, {"text_ohlcv": ohlcv})
    assert on_text.charts == () and on_text.texts == ("text_ohlcv",)
    assert "AC daily bars before x\ndate,open\n1,2" in on_text.prompt and "weekly bars" not in on_text.prompt
    outside = frame[(frame["mark_color"] == "E") & (frame["modality"] == "chart")].iloc[0]
    lines = TASK.request(cfg.settings, cfg.context, outside, {}).prompt.splitlines()
    letter, back, date = json.loads(outside["marked"])[-1]
    named = f"E = bar {back} from the right ({date})"
    assert letter == "E" and any(line.startswith(tuple("123456789")) and "mark_color: Did this bar close up or down: "
                                 + named in line for line in lines)
    assert not any(named in line for line in lines if "highest:" in line or "max_volume:" in line)
    both = frame[(frame["frame"] == "both") & (frame["modality"] == "chart")].iloc[0]
    assert set(json.loads(both["questions"])) <= {"frames_agree"} and json.loads(both["marked"]) == []
    on_both = TASK.request(cfg.settings, cfg.context, both, {"text_ohlcv": ohlcv})
    assert on_both.charts == ("daily", "weekly") and "daily and then the weekly candlestick chart" in on_both.prompt
    both_text = frame[(frame["sample_id"] != both["sample_id"]) & (frame["frame"] == "both")
                      & (frame["modality"] == "text")].iloc[0]
    assert ohlcv in TASK.request(cfg.settings, cfg.context, both_text, {"text_ohlcv": ohlcv}).prompt
    in_zh = setup_of("task=reading", "task.language=zh")
    zh = TASK.request(in_zh.settings, in_zh.context, chart, {"text_ohlcv": ohlcv})
    assert "周K线图" in zh.prompt and "从右数第" in zh.prompt
    assert TASK.prompt_identity(cfg.settings, cfg.context) != TASK.prompt_identity(in_zh.settings, in_zh.context)
    with pytest.raises(ValueError, match="no weekly block"):
        frame_block("AC daily bars before x\ndate", "weekly")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet='{}[]":,\'abcdeAB0123456789 .-\n'), st.none()))
def test_the_parser_never_raises_and_says_why_it_read_nothing(text):
    found = parse_answer(text)
    assert (found.answers is None) == (found.tier == "none")
    assert found.tier != "none" or found.reason


def test_metrics_count_unanswered_questions_wrong_per_cell(samples):
    frame, _ = samples
    truths = {sid: json.loads(q) for sid, q in zip(frame["sample_id"], frame["questions"])}
    # Charts answered all right, text with ma5 flipped and everything else left out: a known accuracy.
    flip = {"above": "below", "below": "above"}
    texts = {sid: json.dumps(t) if m == "chart" else json.dumps({"ma5": flip[t["ma5"]]}) if "ma5" in t else None
             for (sid, t), m in zip(truths.items(), frame["modality"])}
    failed = frame[(frame["modality"] == "text") & (frame["frame"] == "weekly")]["sample_id"].iloc[0]
    texts[failed] = None  # generation failed: its questions count wrong, as unanswered ones do
    parsed = answered(frame, texts)
    m = reading_metrics(parsed, n_boot=200)
    n_chart = sum(len(t) for (sid, t), mod in zip(truths.items(), frame["modality"]) if mod == "chart")
    assert m["chart"]["accuracy"] == 1.0 and m["chart"]["n"] == n_chart and m["text"]["accuracy"] == 0.0
    assert m["all"]["accuracy"] == pytest.approx(0.5) and m["cells"]["ma5"]["daily"]["text"]["answered"] == 1.0
    none = sum(t is None for t in texts.values())  # the failed one, and text samples not asked ma5
    assert m["questions"]["pattern"]["accuracy"] == 0.5 and m["parse_failure_rate"] == none / len(frame)
    lo, hi = m["all"]["ci"]["accuracy"]
    assert lo <= 0.5 <= hi
    m["n_missing_records"] = 0  # score adds it
    line = get_task("reading").summary_line(m)  # the console: meaningful precision, not 16 digits
    assert line.startswith("accuracy 0.500 (chart 1.000, text 0.000), chance-corrected chart 1.000, text -")
    assert "questions answered " in line and "no answer " in line


def test_baselines_chance_majority_and_the_oracle_ceiling(market, samples, cfg):
    frame, _ = samples
    scores = {}
    for name, baseline in BASELINES.items():
        texts = baseline(frame, market, cfg.settings)
        assert set(texts) == set(frame["sample_id"])
        scores[name] = reading_metrics(answered(frame, dict(texts)))
    assert scores["oracle"]["all"]["accuracy"] == 1.0
    assert scores["uniform_random"]["all"]["accuracy"] < scores["majority"]["all"]["accuracy"] < 1.0
    assert scores["majority"]["questions"]["highest_close"]["answered"] == 0.0
    assert BASELINES["uniform_random"](frame, market, cfg.settings) == BASELINES["uniform_random"](frame, market, cfg.settings)


def test_per_type_chance_levels_and_the_balanced_chance_corrected_headline(market, samples, cfg):
    frame, _ = samples
    runs = {name: reading_metrics(answered(frame, dict(baseline(frame, market, cfg.settings))), n_boot=200)
            for name, baseline in BASELINES.items()}
    charts = frame[frame["modality"] == "chart"][["code", "cutoff", "frame"]].drop_duplicates()
    oracle, majority, chance = runs["oracle"], runs["majority"], runs["uniform_random"]
    assert oracle["balanced_chart"]["score"] == 1.0 and oracle["balanced_chart"]["n"] == len(charts)
    # The in-sample most common answer scores its chance level exactly: 0 on every type and overall
    # (a price has no constant answer: unanswered, and its chance is 0).
    assert all(t["corrected_majority"] == pytest.approx(0, abs=1e-12) for t in majority["types"]["chart"].values())
    assert majority["types"]["chart"]["prices"]["accuracy"] == majority["types"]["chart"]["prices"]["chance_majority"] == 0
    assert majority["balanced_chart"]["score"] == pytest.approx(0, abs=1e-12)
    types = chance["types"]["chart"]
    assert {"position", "extremes", "prices", "trend", "moving averages", "counts", "colour"} <= set(types) <= set(
        TYPES.values())
    position = types["position"]
    assert position["chance_uniform"] == pytest.approx(1 / 3) and 0 < position["chance_majority"] < 1
    assert position["corrected_majority"] == pytest.approx((position["accuracy"] - position["chance_majority"])
                                                           / (1 - position["chance_majority"]))
    lo, hi = chance["balanced_chart"]["ci"]["score"]
    assert lo <= chance["balanced_chart"]["score"] <= hi < 0.5  # chance reads nothing
    # The headline corrects the balanced accuracy by the types' mean majority chance.
    accuracy, level = (np.mean([t[k] for t in types.values()]) for k in ("accuracy", "chance_majority"))
    assert chance["balanced_chart"]["accuracy"] == pytest.approx(accuracy)
    assert chance["balanced_chart"]["score"] == pytest.approx((accuracy - level) / (1 - level))
    unanswerable = oracle["unanswerable"]["chart"]
    assert unanswerable["n"] > 0 and unanswerable["said_cannot_tell"] == 1.0 and unanswerable["false_cannot_tell"] == 0.0


def test_the_blank_image_control_is_asked_as_the_chart_is(market, cfg):
    blank = setup_of("task=reading", "task.modalities=[chart,blank]", "task.samples.codes=[AC]", "task.samples.interval=240")
    frame, _ = build_samples(market, blank.settings, blank.context.render.spec)
    chart = frame[(frame["modality"] == "chart") & (frame["frame"] == "daily")].iloc[0]
    control = frame[(frame["modality"] == "blank") & (frame["cutoff"] == chart["cutoff"]) & (frame["frame"] == "daily")].iloc[0]
    on_chart = TASK.request(blank.settings, blank.context, chart, {})
    on_blank = TASK.request(blank.settings, blank.context, control, {})
    assert on_blank.charts == ("blank",) and on_chart.charts == ("daily",) and on_blank.prompt == on_chart.prompt
    assert TASK.inputs(blank.settings).charts == ("daily", "weekly", "blank")
    assert control["questions"] == chart["questions"] and control["sample_id"] != chart["sample_id"]
    pair = frame[(frame["modality"] == "blank") & (frame["frame"] == "both")].iloc[0]
    assert TASK.request(blank.settings, blank.context, pair, {}).charts == ("blank", "blank")


def test_paired_comparison_per_question_tested_over_samples(market, samples, cfg):
    frame, _ = samples
    oracle = answered(frame, dict(BASELINES["oracle"](frame, market, cfg.settings)))
    chance = answered(frame, dict(BASELINES["uniform_random"](frame, market, cfg.settings)))
    c = compare_runs(chance, oracle, n_boot=200)
    v = verdicts(chance)
    assert c["n"] == len(v) and c["accuracy_b"] == 1.0 and c["diff"] == pytest.approx(1 - v["right"].mean())
    assert (c["unit"], c["n_clusters"]) == ("sample", len(frame)) and c["ci"][0] > 0 and c["p"] < 0.001
    ma5 = v[v["question"] == "ma5"]
    assert c["questions"]["ma5"]["diff"] == pytest.approx(1 - ma5["right"].mean()) and "p_holm" in c["questions"]["ma5"]
    assert compare_runs(oracle, oracle, n_boot=0)["p"] == 1.0


def test_reading_next_to_forecasting_and_the_report_section(market, samples, cfg, tmp_path):
    frame, summary = samples
    oracle = answered(frame, dict(BASELINES["oracle"](frame, market, cfg.settings)))
    # A forecast run of the same name that says "up" everywhere, on the same stocks and cutoffs.
    windows = frame.drop_duplicates(["code", "cutoff"])[["code", "cutoff"]].reset_index(drop=True)
    r_30 = np.where(np.arange(len(windows)) % 3 == 0, -0.02, 0.03)
    run = TaskPaths(tmp_path / "forecast").run("m")
    run.root.mkdir(parents=True)
    windows.assign(pred=0.1, r_30=r_30).to_parquet(run.parsed)
    run.metrics.write_text(json.dumps({"horizon": 30, "ic_mean": 0.05, "accuracy": 0.6}))
    link = forecast_link(oracle, run)
    assert link["read_wrong"]["n"] == 0 and link["read_right"]["n"] == link["n"] == len(windows)
    assert link["read_right"]["direction_accuracy"] == pytest.approx((r_30 > 0).mean()) and link["ic_mean"] == 0.05
    wrong = answered(frame, {sid: json.dumps({"change": "A" if json.loads(q).get("change") != "A" else "B"})
                             for sid, q in zip(frame["sample_id"], frame["questions"])})
    assert forecast_link(wrong, run)["read_right"]["n"] == 0
    assert forecast_link(oracle, TaskPaths(tmp_path / "forecast").run("other")) is None

    metrics = {**TASK.score(RunAnswers("m", oracle, frame, {"kind": "baseline"}), cfg.settings, cfg.context, ScoreSettings(n_boot=50)),
               "forecast": link}
    metrics.pop("per_sample")
    chance = reading_metrics(answered(frame, dict(BASELINES["uniform_random"](frame, market, cfg.settings))))
    found = sections([scored_run("oracle", metrics, False, reference=TASK.references["oracle"]), scored_run("m", metrics, True),
                      scored_run("uniform_random", chance, False)],
                     {"uniform_random → oracle": compare_runs(oracle, oracle, n_boot=0)},
                     [Dataset("PSE", summary, {})])
    titles = [t.title for t in found[0].tables]
    assert titles == ["Chart reading: accuracy", "Chart reading: per question type, against chance",
                      "Chart reading: accuracy per question, time frame and modality",
                      "Chart reading: paired comparisons", "Chart reading: unanswerable items",
                      "Chart reading next to forecasting (models that ran both)", "Chart reading: questions left out"]
    # Each note names what its intervals resample: the metrics' charts, the comparison's samples, the link's dates.
    notes = dict(zip(titles, (t.note for t in found[0].tables)))
    assert [t for t in titles if "Intervals resample whole charts" in notes[t]] == [titles[i] for i in (0, 1, 2, 4)]
    assert "bootstrap of whole samples" in notes["Chart reading: paired comparisons"]
    assert "resample whole cutoff dates" in notes["Chart reading next to forecasting (models that ran both)"]
    labels = list(found[0].tables[0].frame["Model"])
    assert labels == ["m (random weights)", "uniform_random", "oracle (reference)"]  # the ceiling last
    assert "uniform_random: chance" in found[0].tables[0].note  # the baseline's role, said under the table
    # Rows keep their runs' labels, so the report's Answered cell reaches every row of every run table.
    counted = {"answered": 8, "n_samples": 8}  # what score adds to a task's metrics
    runs = [scored_run("oracle", {**metrics, **counted}, False, reference=TASK.references["oracle"]),
            scored_run("m", {**metrics, **counted}, True), scored_run("uniform_random", {**chance, **counted}, False)]
    for table in with_answered(found[0], runs).tables:
        if "Model" in table.frame:
            assert set(table.frame["Answered"]) == {"8/8"}, table.title
    assert "oracle: the true answers" in found[0].tables[0].note and "★" not in found[0].tables[0].frame.iloc[2, 2]


@pytest.mark.unit
def test_run_and_sweep_score_a_models_forecast_before_its_reading_whatever_the_tasks_order():
    """The reading run's metrics hold the same model's forecast run next to it (forecast_link): its
    score job waits for the forecast score job, in `run`'s order and as a SLURM dependency."""
    from candlebench.stages.graph import ModelVariant, plan

    models = [ModelVariant("tiny_qwen2_5_vl")]
    names = {(t, "tiny_qwen2_5_vl"): "tiny" for t in ("reading", "forecast", "e2a")}
    for tasks in (["reading", "forecast"], ["forecast", "e2a", "reading"]):
        jobs = plan([], tasks, models, names, baselines=False)
        keys = [j.key for j in jobs]
        reading = next(j for j in jobs if j.key == "score:reading:tiny_qwen2_5_vl")
        assert "score:forecast:tiny_qwen2_5_vl" in reading.after
        assert keys.index("score:forecast:tiny_qwen2_5_vl") < keys.index(reading.key)
        assert all(keys.index(dep) < keys.index(j.key) for j in jobs for dep in j.after), tasks  # dependency order
        assert jobs[-1].overrides[0][:1] == (f"task={tasks[0]}",)  # the report still leads with the command's first task
    alone = plan([], ["reading"], models, names, baselines=False)  # no forecast in the plan: nothing to wait for
    assert next(j for j in alone if j.key == "score:reading:tiny_qwen2_5_vl").after == ("infer:reading:tiny_qwen2_5_vl",)


def test_the_weekly_volume_question_is_no_longer_nearly_constant(market, cfg):
    """Asked of partial weeks it was "no" 93% of the time; asked of complete weeks only, both answers occur."""
    settings = setup_of("task=reading", "task.samples.codes=[AC,SM,ALI,TEL]", "task.samples.interval=30",
                        "task.modalities=[chart]").settings
    frame, _ = build_samples(market, settings, cfg.context.render.spec)
    weekly = [json.loads(q).get("volume_above_mean") for q in frame.loc[frame["frame"] == "weekly", "questions"]]
    asked = [a for a in weekly if a is not None]
    assert len(asked) >= 10 and 0.25 <= asked.count("yes") / len(asked) <= 0.75


def test_every_sample_asks_a_question_and_a_chart_left_without_one_is_counted(market, cfg, monkeypatch):
    """A pair of charts (frame both) whose every question was left out was a sample asking nothing:
    even the oracle 'failed to answer' it (the demo's parse-failure column read 0.017)."""
    import candlebench.tasks.reading.samples as reading_samples
    from candlebench.tasks.reading.questions import QuestionSet

    monkeypatch.setattr(reading_samples, "pair_set", lambda daily, weekly: QuestionSet(answers={}, left_out={"frames_agree": "x"}))
    frame, summary = build_samples(market, SPEC, cfg.context.render.spec)
    assert (frame["n_questions"] > 0).all() and "both" not in set(frame["frame"])
    assert summary["dropped_windows"]["both: no question survives"] == frame[["code", "cutoff"]].drop_duplicates().shape[0]
