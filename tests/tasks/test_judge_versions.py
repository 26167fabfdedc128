"""Each task's judge version is raised whenever its verdicts change (#39): the verdicts of every
task's parser on a fixed corpus — every text of the committed study of main (forecast tags, prose,
refusals, a cut reasoning block; E2A-style JSON answers) and the E2A gold set's answers — are pinned
per judge version. A parser change that alters one fails here until its task's ``judge_version`` is
raised and the new digest recorded: `score` then re-judges the runs scored under the old one."""

from __future__ import annotations

import pytest

from candlebench.core.io import fingerprint
from candlebench.core.jsonl import read_jsonl
from candlebench.stages.graph import compose_config
from candlebench.task_api.registry import get_task
from helpers import TESTS

pytestmark = pytest.mark.unit

# (task, judge version) -> fingerprint of its parser's verdicts on the corpus.
PINNED = {
    ("forecast", 1): "eec99cf314e06da7",
    ("forecast", 2): "eec99cf314e06da7",  # only "<score>" + 309 digits changed: the corpus has none
    ("e2a", 1): "ecc3ae44bc6124d2",
    ("e2a", 2): "ecc3ae44bc6124d2",  # its per-sample scores kept for the default compare, not its parser
    ("caption", 1): "45666f1e0914dccf",
    ("caption", 2): "45666f1e0914dccf",  # its metrics' embeddings changed, not its parser
}


def corpus() -> list[str | None]:
    texts: list[str | None] = [None, ""]
    for part in sorted((TESTS / "data" / "study_main_8cea46e").rglob("parts/*.jsonl")):
        texts += [row["text"] for row in read_jsonl(part)]
    for gold in sorted((TESTS / "gold" / "e2a").glob("answers_*.jsonl")):
        texts += [row["response"] for row in read_jsonl(gold)]
    return texts


@pytest.mark.parametrize("name", ["forecast", "e2a", "caption"])
def test_a_judge_whose_verdicts_change_has_a_new_version(name):
    task = get_task(name)
    parse = task.parser(task.settings(compose_config([f"task={name}"]).task))
    verdicts = [(p.answer, p.tier, p.reason, dict(sorted(p.columns.items()))) for p in map(parse, corpus())]
    assert fingerprint(verdicts) == PINNED.get((name, task.judge_version)), (
        f"the {name} judge's verdicts changed: raise {type(task).__name__}.judge_version and pin the new digest")
