"""The reading judge's value rules (tasks/reading/parse.py's tables), each on the words the issue found
credited wrongly, and its genericity: a question is read by its kind (its choices, or numeric
price / count), so a new question parses with no new code. The gold set (test_gold.py)
measures the same rules on whole realistic answers."""

from __future__ import annotations

import pytest

from candlebench.tasks.reading.parse import CANNOT_TELL, Unreadable, parse_answer, read_choice, read_number, read_value

pytestmark = pytest.mark.unit

POSITION, CROSS = ("above", "below"), ("golden", "death", "none")
PATTERN = ("doji", "hammer", "bullish_engulfing", "bearish_engulfing", "none")
YES_NO, LETTERS = ("yes", "no"), ("A", "B", "C", "D")


def unread(read, value, *args) -> str:
    with pytest.raises(Unreadable) as why:
        read(value, *args)
    return str(why.value)


def reads_as(answer, read, *args) -> None:
    """``read(*args)`` gives ``answer``; None: it reads no answer."""
    if answer is None:
        unread(read, *args)
    else:
        assert read(*args) == answer


@pytest.mark.parametrize("value, choices, answer", [
    ("not above", POSITION, "below"), ("不高于", POSITION, "below"), ("未站上", POSITION, "below"),
    ("不在上方", POSITION, "below"), ("not below the mean", YES_NO, "yes"), ("不是", YES_NO, "no"),
    ("No golden or death cross", CROSS, "none"), ("没有金叉或死叉", CROSS, "none"), ("not golden: a death cross", CROSS, "death"),
    ("not A, it is C", LETTERS, "C"),
])
def test_a_negated_answer_word_is_the_other_answer_only_where_one_is_left(value, choices, answer):
    assert read_choice(value, choices) == answer


@pytest.mark.parametrize("value, choices", [
    ("not a golden cross", CROSS), ("未出现金叉", CROSS), ("no hammer", PATTERN), ("not a doji", PATTERN),
    ("neither above nor below", POSITION), ("not B", LETTERS),
])
def test_a_negation_that_leaves_several_answers_names_none(value, choices):
    assert unread(read_choice, value, choices) == "negated"


@pytest.mark.parametrize("value, choices", [
    ("above or below", POSITION), ("above|below", POSITION), ("B or C", LETTERS), ("B/C", LETTERS), ("none or death", CROSS),
    ("hammer (or an inverted hammer)", PATTERN),
])
def test_two_answers_are_a_hedge(value, choices):
    assert unread(read_choice, value, choices) in {"hedged", "not a choice"}


@pytest.mark.parametrize("value, choices, why", [
    ("a golden cross has not formed yet", CROSS, "negated"), ("a death cross was avoided", CROSS, "negated"),
    ("金叉尚未出现", CROSS, "negated"), ("above MA5? not really", POSITION, "negated"),
    ("bullish engulfing pattern does not hold", PATTERN, "negated"), ("看涨吞没形态不成立", PATTERN, "negated"),
    ("nearly a golden cross", CROSS, "hedged"), ("doji-like", PATTERN, "hedged"), ("resembles a hammer", PATTERN, "hedged"),
    ("像锤子线", PATTERN, "hedged"), ("not significantly above", YES_NO, "hedged"),
])
def test_a_denied_or_tentative_answer_is_no_answer(value, choices, why):
    assert unread(read_choice, value, choices) == why


@pytest.mark.parametrize("value, kind", [("6 or 7", "count"), ("5-7", "count"), ("six or seven", "count"), ("6或7根", "count"),
                                         ("104 to 106", "price"), ("between 390 and 400", "price"), ("1200至1210", "price"),
                                         ("at least 5", "count"), ("more than six", "count"), ("至少4根", "count"),
                                         ("4根以上", "count")])
def test_two_numbers_are_a_hedge(value, kind):
    assert unread(read_number, value, kind) == "hedged"


@pytest.mark.parametrize("value, count", [
    ("of the last 10 bars, 6 closed up", 6), ("4 of 10", 4), ("6 out of the last ten", 6), ("6/10", 6),
    ("十根中有六根", 6), ("最近10根K线中有2根阳线", 2), ("10 of 10", 10), ("seven", 7), ("七根", 7),
])
def test_a_count_is_the_number_counted_never_the_window(value, count):
    assert read_number(value, "count") == count


@pytest.mark.parametrize("value, price", [("2.0127e+12", 2.0127e12), ("1.2346e+05", 123460.0), ("约1204元", 1204.0),
                                          ("1,091.00", 1091.0), ("931 (bar A, 2019-04-11)", 931.0), (1e3, 1000.0),
                                          ("1.2k", 1200.0), ("12.3万", 123000.0)])
def test_a_price_is_its_value_scientific_notation_and_scale_included(value, price):
    assert read_number(value, "price") == price


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "1e999", 10 ** 400, "9" * 320])
def test_a_non_finite_number_is_no_answer(value):
    assert unread(read_number, value, "price") == "not a finite number"


@pytest.mark.parametrize("value, answer", [
    ("hammer", "hammer"), ("锤子线", "hammer"), ("Dragonfly Doji", "doji"), ("十字星", "doji"),
    ("Engulfing (bearish)", "bearish_engulfing"), ("阳包阴", "bullish_engulfing"), ("No clear pattern", "none"),
])
def test_pattern_names_and_their_synonyms(value, answer):
    assert read_choice(value, PATTERN) == answer


@pytest.mark.parametrize("value", ["inverted hammer", "倒锤头", "hanging man", "shooting star", "engulfing", "morning doji star"])
def test_a_near_name_is_another_pattern_never_the_choice_it_contains(value):
    assert unread(read_choice, value, PATTERN) == "not a choice"


@pytest.mark.parametrize("value, answer", [("a bar near the middle", None), ("A strong bar near the top", None),
                                           ("N/A", None), ("A is the highest", "A"), ("D, a long red candle", "D"),
                                           ("a", "A"), ("bar c", "C"), ("选B", "B")])
def test_the_article_a_is_no_letter(value, answer):
    reads_as(answer, read_choice, value, LETTERS)


@pytest.mark.parametrize("value", ["cannot tell", "can't tell", "无法判断", "看不出"])
def test_cannot_tell_is_an_answer_only_where_the_question_offers_it(value):
    assert read_choice(value, (*POSITION, CANNOT_TELL)) == CANNOT_TELL
    assert unread(read_choice, value, POSITION) == "cannot tell"


@pytest.mark.parametrize("value, choices, answer", [
    ("Is the last close above or below MA5? Below.", POSITION, "below"), ("在MA5之上还是之下？之下", POSITION, "below"),
    ("Is the last bar's volume above the mean volume? No.", YES_NO, "no"), ("成交量是否高于均量？否", YES_NO, "no"),
    ("A? or B?", LETTERS, None), ("above or below?", POSITION, None),
])
def test_the_question_asked_back_is_not_its_answer(value, choices, answer):
    reads_as(answer, read_choice, value, choices)


def test_a_new_question_parses_by_its_choices_with_no_new_code():
    """Choices the judge has words for, in any new combination, and letters beyond D."""
    assert read_choice("clearly higher", ("above", "below", CANNOT_TELL)) == "above"
    assert read_choice("Option E", ("A", "B", "C", "D", "E")) == "E"
    assert read_choice("false", ("yes", "no")) == "no"
    with pytest.raises(Unreadable, match="no known kind"):  # a key with no choices and no numeric kind: said, no KeyError
        read_value("a_question_of_tomorrow", "above")


def test_every_question_asked_reads_each_of_its_answers_as_the_prompt_writes_it():
    """questions.QUESTIONS, each by its kind: every canonical choice, upper-case or with spaces for
    ``_``, and a number for a numeric question; a key the parser would refuse fails here."""
    from candlebench.tasks.reading.questions import CHOICES, NUMERIC, QUESTIONS

    assert set(QUESTIONS) == set(CHOICES) | set(NUMERIC)
    for question in QUESTIONS:
        for choice in CHOICES.get(question, ()):
            for written in {choice, choice.upper(), choice.replace("_", " ")}:
                assert read_value(question, written) == choice, (question, written)
        if question in NUMERIC:
            assert read_value(question, "7") == 7


@pytest.mark.parametrize("question, value, answer", [
    ("direction", "Higher", "up"), ("direction", "上涨", "up"), ("direction", "lower", "down"), ("direction", "not up", "down"),
    ("direction", "flat", None), ("direction", "down or flat", None),
    ("mark_color", "阳线", "up"), ("mark_color", "收跌", "down"), ("mark_color", "up, with a long lower shadow", "up"),
    ("mark_color", "bar E is not shown", CANNOT_TELL), ("mark_color", "green", None),
    ("ma_slope", "上升", "rising"), ("ma_slope", "turning down", "falling"), ("ma_slope", "sideways", None),
    ("range_position", "upper third", "top"), ("range_position", "中间", "middle"), ("range_position", "底部", "bottom"),
    ("range_position", "not in the top third", None), ("range_position", "upper half", None),
    ("ma_order", "MA20 > MA5 > MA90", "ma20>ma5>ma90"), ("ma_order", "MA90 < MA20 < MA5", "ma5>ma20>ma90"),
    ("ma_order", "ma5, ma20, ma90", "ma5>ma20>ma90"), ("ma_order", "MA5 > MA20", None), ("ma_order", "MA90 > MA20 ≈ MA5", None),
    ("frames_agree", "the same way", "yes"), ("frames_agree", "一致", "yes"), ("frames_agree", "不一致", "no"),
    ("frames_agree", "not the same direction", "no"), ("volume_above_mean", "about the same as the mean", None),
    ("ma90", "not drawn", CANNOT_TELL), ("ma90", "未画出", CANNOT_TELL), ("ma90", "N/A", CANNOT_TELL),
    ("ma5", "not at all above", "below"),
])
def test_the_new_questions_answer_words_in_english_and_chinese(question, value, answer):
    reads_as(answer, read_value, question, value)


def test_an_ma_order_in_lines_is_a_value_not_a_key():
    assert parse_answer("ma_order: ma5-ma20-ma90\nma5: above").answers == {"ma_order": "ma5>ma20>ma90", "ma5": "above"}
    assert parse_answer("ma_order: MA5 -> MA20 -> MA90").answers == {"ma_order": "ma5>ma20>ma90"}


@pytest.mark.parametrize("text, answers", [
    ("ma20: above\nchecking again...\nFinal answers:\nma20: below", {"ma20": "below"}),
    ("ma5: above at first glance, but actually below", {"ma5": "below"}),
    ('{"ma5": "above", "ma20": "above", "up_candles": 6} Correction: {"ma20": "below"}',
     {"ma5": "above", "ma20": "below", "up_candles": 6}),
    ('The format is {"ma5": "above|below"}. {"ma5": "below"}', {"ma5": "below"}),
])
def test_the_final_statement_wins_in_every_tier(text, answers):
    assert parse_answer(text).answers == answers


def test_what_cannot_be_read_is_named_with_why():
    found = parse_answer('{"ma5": "not above", "up_candles": "6 or 7", "highest_close": Infinity, "pattern": "倒锤头"}')
    assert found.answers == {"ma5": "below"}
    assert found.reason == ("unreadable: highest_close (not a finite number), up_candles (hedged), "
                            "pattern (not a choice)")
