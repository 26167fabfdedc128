"""The E2A-style second pass, ``task.method=verify``: the seed paper's oracle-aided verification.

The seed paper names the intervention (the model sees verified evidence and revises its answer;
unsupported claims fall, coverage can collapse) but not its prompt, so this one is ours: the
direct pass's prompt and inputs unchanged, then the model's first-pass answer as it wrote it, each
claim :func:`candlebench.tasks.e2a.claims.extract_claims` found in its analysis and rationale with the
anchor fact it was checked against and the verdict, and all ten anchor facts. Showing every fact,
not only those behind its claims, is what makes the pass "oracle-aided": the model may also
ground a new claim. A first-pass answer that could not be parsed is shown as it was written (its
claims are then read from the raw text); one with no text says why.
"""

from __future__ import annotations

from typing import Mapping

from candlebench.task_api.base import FirstPassAnswer
from candlebench.tasks.e2a.anchors import Anchors
from candlebench.tasks.e2a.claims import extract_claims, fact_of


def _said(first_pass: FirstPassAnswer) -> str:
    """The first-pass answer's analysis and rationale (its raw text when it was not parsed): what
    the direct pass's claims were read from."""
    answer = first_pass.answer if isinstance(first_pass.answer, Mapping) else None
    if answer is not None:
        return f"{answer.get('analysis') or ''}\n{answer.get('rationale') or ''}"
    return first_pass.text or ""


def claim_lines(first_pass: FirstPassAnswer, anchors: Anchors, words: Mapping[str, str]) -> str:
    """Each claim once (claims are a set per answer), with the one verdict and the fact behind it."""
    lines = []
    for c in extract_claims(_said(first_pass), anchors):
        if c.anchor is None:
            lines.append(f'- "{c.sentence}" ({c.claim}): {words["unverifiable"]}')
        else:
            said = ("not " if c.negated else "") + c.claim.replace("_", " ")
            lines.append(f'- "{c.sentence}" ({said}): {words[c.verdict]} ({fact_of(c.claim, anchors)})')
    return "\n".join(lines) or words["no_claims"]


def fact_lines(anchors: Anchors) -> str:
    crosses = "; ".join(fact_of(c, anchors) for c in ("golden_cross", "death_cross"))
    return "\n".join([*(f"- {name}: {label}" for name, label in anchors.labels.items()),
                      f"- {fact_of('close_above_all_mas', anchors)}", f"- MA5/MA20 crossings: {crosses}"])


def verify_prompt(template: str, words: Mapping[str, str], request: str, first_pass: FirstPassAnswer,
                  anchors: Anchors) -> str:
    """``template`` has {request}, {earlier} (the first-pass answer), {claims} and {facts}; ``words``
    the verdict phrases and the placeholders for no claims / no readable answer
    (``task.verify.<language>``). The placeholder keeps its name: it is in users' configs, and the
    template is part of the run key."""
    shown = first_pass.text if first_pass.text else words["unreadable"].format(reason=first_pass.reason or "no text")
    return template.format(request=request, earlier=shown, claims=claim_lines(first_pass, anchors, words),
                           facts=fact_lines(anchors))
