"""The caption judges on hand-written text, English and Chinese: which numbers are price mentions
(Eq. 1's Price category), dates and degrees in either language, the text length of Eq. 1, a
sample without metadata left out of IoU, and where the SA sentences end."""

from __future__ import annotations

import math

import pytest

from candlebench.tasks.caption import iou as judge
from candlebench.tasks.caption.iou import iou, mentions

pytestmark = pytest.mark.unit

REF = ("The stock rallied from 52.50 to 60.00 between 2019-03-01 and 2019-04-15 on the daily chart. "
       "Volume expanded as buyers returned. We remain constructive on the uptrend.")
META = {"degree": ["daily"], "time": ["2019-03-01", "2019-04-15", "2019-05-30"], "price": ["52.50", "60.00", "65.00"]}


@pytest.mark.parametrize("text, label", [
    # Inside a date, in every form the time category reads, and without its year.
    ("On 2019-03-15 volume rose.", "15"),
    ("On 15/03/2019 volume rose.", "15"),
    ("On 03/15/2019 volume rose.", "3"),
    ("On March 15, 2019 volume rose.", "15"),
    ("On 15 March 2019 volume rose.", "15"),
    ("By March 15 volume rose.", "15"),
    ("2019年3月15日成交量放大。", "15"),
    ("3月15日成交量放大。", "3"),
    # A percentage.
    ("The stock gained 4.2% in the week.", "4.2"),
    ("The stock gained 4.2 percent in the week.", "4.2"),
    ("股价上涨4.2％。", "4.2"),
    ("股价上涨百分之4.2。", "4.2"),
    ("A retracement of 3-5% is normal.", "3"),
    # A count of days, weeks, sessions, bars.
    ("Over the last 20 sessions it drifted.", "20"),
    ("The 52-week high still caps it.", "52"),
    ("The chart holds 60 bars.", "60"),
    ("近60个交易日震荡。", "60"),
    ("近20日走强。", "20"),
    # A moving average's name.
    ("It trades above the MA20.", "20"),
    ("It trades above the MA 20.", "20"),
    ("It trades above its EMA(20).", "20"),
    ("It trades above the 20-day moving average.", "20"),
    ("The 5, 10 and 20-day averages fan out.", "10"),
    ("It holds the 50DMA.", "50"),
    ("股价站上20日均线。", "20"),
    ("股价站上MA20。", "20"),
    # A multiple, a wave label, a clock time, a year.
    ("Volume ran at 1.42 times its average.", "1.42"),
    ("成交量放大2倍。", "2"),
    ("Wave 3 is under way.", "3"),
    ("The gap opened at 10:30 sharp.", "10"),
    ("In 2019 the stock doubled.", "2019"),
    ("The 2019年 rally faded.", "2019"),
    ("The 2018-2019 range held.", "2019"),
])
def test_a_number_that_is_no_price_names_no_price_label(text, label):
    assert mentions(text, [label], "price") == set()


@pytest.mark.parametrize("text, label", [
    ("It closed at 4.20 on the day.", "4.2"),
    ("It closed at $4.20.", "4.20"),
    ("Support near 15 held.", "15"),
    ("Resistance sits near 2000.", "2000"),  # a stock near 2,000: a bare 2000 is a price
    ("The 1950-2000 band held.", "1950"),  # fifty "years" apart: prices, not a range of years
    ("股价收于12.5元。", "12.50"),
    ("收于12.5元，20日均线为12.3元。", "12.3"),
    ("阻力位在RMB12.5附近。", "12.5"),
    ("Turnover reached 1,204,567 shares.", "1.2M"),  # equal at the label's precision (0.1M)
])
def test_a_standalone_number_names_the_price_label_it_equals(text, label):
    assert mentions(text, [label], "price") == {label}


def test_a_label_is_named_only_at_its_precision():
    assert mentions("It closed at 52.49.", ["52.50"], "price") == set()
    assert mentions("Turnover reached 1,260,000 shares.", ["1.2M"], "price") == set()


@pytest.mark.parametrize("text", [
    "2019年3月15日收于12.5元。", "On 15/03/2019 it rose.", "On 03/15/2019 it rose.", "On Mar. 15th, 2019 it rose.",
    "On 2019/03/15 it rose.", "On 15th of March, 2019 it rose.",
])
def test_dates_in_each_written_form_name_the_date_label(text):
    assert mentions(text, ["2019-03-15", "2019-03-16"], "time") == {"2019-03-15"}


def test_day_and_month_both_twelve_or_under_read_both_ways():
    assert mentions("On 03/04/2019 it rose.", ["2019-03-04", "2019-04-03", "2019-04-04"], "time") == {"2019-03-04", "2019-04-03"}


@pytest.mark.parametrize("text, items, named", [
    ("On the daily chart.", ["daily"], {"daily"}),
    ("日线图上，短期趋势向上。", ["daily", "short-term"], {"daily", "short-term"}),
    ("A near-term dip within the intermediate trend.", ["short-term", "intermediate-term"], {"short-term", "intermediate-term"}),
    ("The 20-day average turned up.", ["daily"], set()),  # an N-day count is no time frame
    ("Minute wave (iii) ended at 34.55; ((iv)) followed.", ["(iii)", "(iv)", "Minute"], {"(iii)", "Minute"}),
    ("wave i ended.", ["I"], set()),  # wave labels are cased
])
def test_degree_items_by_synonym_or_as_written(text, items, named):
    assert mentions(text, items, "degree") == named


def test_a_chinese_caption_is_measured_in_characters_and_its_mentions_count():
    zh = "日线图上，股价从52.50元涨至60.00元，时间为2019年3月1日至2019年4月15日。"
    # 21 Han characters (日线图上 股价从 元涨至 元 时间为 年月日至 年月日) and 8 numbers.
    assert judge.length(zh) == 21 + 8
    assert mentions(zh, META["time"], "time") == {"2019-03-01", "2019-04-15"}
    assert mentions(zh, META["price"], "price") == {"52.50", "60.00"}
    assert mentions(zh, META["degree"], "degree") == {"daily"}
    lr = len(REF.split())
    assert iou(zh, REF, META) == pytest.approx(math.log(1 + (5 / 29) / (5 / lr + 0.01)))
    assert judge.length("The stock rose - sharply.") == 4  # a lone dash is no word


def test_a_sample_without_metadata_has_no_iou():
    empty = {"degree": [], "time": [], "price": []}
    assert iou(REF, REF, empty) is None and iou(REF, REF, {}) is None
    assert iou(REF, REF, {"price": ["52.50"]}, ("time",)) is None  # none of the categories asked for
    # A chart with items and a caption naming none of them scores 0: only the absence of items is None.
    assert iou("Nothing to see.", REF, META) == 0.0


@pytest.mark.parametrize("text, expected", [
    ("The close was 1288.00 on Friday. Support held.", ["The close was 1288.00 on Friday.", "Support held."]),
    ("Support, e.g. the 52.10 area, held vs. sellers, i.e. approx. twice. U.S. stocks rose! Why? Yes.",
     ["Support, e.g. the 52.10 area, held vs. sellers, i.e. approx. twice.", "U.S. stocks rose!", "Why?", "Yes."]),
    ("股价收于12.5元。短期看涨！会突破吗？也许", ["股价收于12.5元。", "短期看涨！", "会突破吗？", "也许"]),
    ("1. The stock rose.\n2. It fell...\n\"We like it.\" End", ["The stock rose.", "It fell...", "\"We like it.\"", "End"]),
    ("Minor wave C. We expect more. Jan. 15 was key.", ["Minor wave C.", "We expect more.", "Jan. 15 was key."]),
])
def test_sentences_end_at_real_sentence_ends(text, expected):
    from candlebench.tasks.caption.sentiment import sentences

    assert sentences(text) == expected


@pytest.mark.parametrize("text", [
    # Negative, positive, neutral: 1 x -1 + 2 x +1 = positive. Split at every period, the last three
    # pieces were "approx", "1.2M shares vs" and "1.1M a week ago": neutral.
    "We expect further downside. The bias stays bullish while support near 1288.00 holds. "
    "Volume was average, i.e. approx. 1.2M shares vs. 1.1M a week ago.",
    "The stock sold off. We remain constructive on the U.S. listing, e.g. above 52.10. The close was 52.50.",
])
def test_the_closing_vote_is_over_the_last_three_real_sentences(text):
    from candlebench.tasks.caption.sentiment import closing_sentiment, sentence_class, sentences

    last = sentences(text)[-3:]
    assert len(sentences(text)) == 3 and [sentence_class(x) for x in last][1] == "positive"
    assert closing_sentiment(text) == "positive"
