"""Steps 2 to 4 of reading an answer, fast: the sentences, which frame families and cues each holds
(one trie scan of the trigger words), the frames of a sentence's families in leftmost-first order, and
where a negation's scope starts and how many negations it holds."""

from __future__ import annotations

import bisect
import re
from typing import Final

from candlebench.tasks.e2a.claims.lexicon import COORDINATION, CUES, FRAMES, NEGATION, NOT_NEGATION, SENTENCE_END, TRIGGERS

# Each family of TRIGGERS and each kind of CUES is one bit; a sentence's bits say which it holds.
_HOLDERS: Final = {**TRIGGERS, **CUES}
_BIT: Final = {key: 1 << i for i, key in enumerate(_HOLDERS)}
_WORD_BITS: Final = {w: sum(_BIT[key] for key, words in _HOLDERS.items() if w in words)
                     for words in _HOLDERS.values() for w in words}
FRAME_BITS: Final = sum(_BIT[names] for names in TRIGGERS)
UNVERIFIABLE_BIT, HEDGE_BIT = _BIT["unverifiable"], _BIT["hedge"]


def _trie(words: list[str]) -> str:
    """The alternation of ``words``, longest match first, as a trie ("c(?:ould|ross|andle)|..."): the
    engine tests each next character once, not once per word."""
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    branches = []
    for c, tails in heads.items():
        longer = [t for t in tails if t]
        rest = _trie(longer) if longer else ""
        branches.append(re.escape(c) + (f"(?:{rest})?" if longer and "" in tails else rest))
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


# Two scans, words starting with an ASCII character and the others: in each the engine skips the
# characters no word starts with (most of a Chinese text, or of an English one, in the other scan).
_TRIGGER_SCANS: Final = tuple(re.compile(_trie(sorted(w for w in _WORD_BITS if w[0].isascii() == ascii_)))
                              for ascii_ in (True, False))


def first_chars(pattern: str) -> frozenset[str] | None:
    """The characters a match of ``pattern`` can start with, or None where that is not known (a class
    such as \\w, an empty match, a flag, ...). Read from the parsed pattern, an internal of the ``re``
    module: where it is missing or has changed, None, which costs speed only."""
    try:
        from re import _constants as c, _parser
        parsed = _parser.parse(pattern)
    except (ImportError, AttributeError):
        return None

    def starts(items) -> tuple[set[str], bool]:  # (first characters, can match empty)
        found: set[str] = set()
        for op, av in items:
            if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
                continue  # zero-width: the next item starts the match
            if op is c.LITERAL:
                return found | {chr(av)}, False
            if op is c.IN and all(o in (c.LITERAL, c.RANGE) for o, _ in av):
                return found | {chr(x) for o, a in av for x in ((a,) if o is c.LITERAL else range(a[0], a[1] + 1))}, False
            if op is c.BRANCH:
                alternatives = [starts(alt) for alt in av[1]]
                first, empty = set().union(*(f for f, _ in alternatives)), any(e for _, e in alternatives)
            elif op is c.SUBPATTERN and not av[1] and not av[2]:
                first, empty = starts(av[3])
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
                first, empty = starts(av[2])
                empty = empty or av[0] == 0
            else:
                raise LookupError(op)
            found |= first
            if not empty:
                return found, False
        return found, True

    try:
        first, empty = starts(parsed)
    except (LookupError, AttributeError):
        return None
    return None if empty or parsed.state.flags & re.IGNORECASE else frozenset(first)


_FIRST_CHARS: Final = {name: first_chars(frame) for name, frame in FRAMES.items()}


def _family_scan(names: tuple[str, ...]) -> re.Pattern[str]:
    """The frames of one family as one alternation, in :data:`FRAMES` order, behind a look-ahead for
    the characters they can start with (:func:`first_chars`): it turns most positions away at once,
    where the engine would enter every frame's alternatives (~30% faster); none where one is unknown."""
    alternation = "|".join(f"(?P<{n}>{FRAMES[n]})" for n in names)
    if any(_FIRST_CHARS[n] is None for n in names):
        return re.compile(alternation)
    return re.compile(f"(?=[{re.escape(''.join(sorted(set().union(*(_FIRST_CHARS[n] for n in names)))))}])(?:{alternation})")


_FAMILY_SCANS: Final = tuple((_BIT[names], _family_scan(names)) for names in TRIGGERS)
# The families follow each other in FRAMES order, so the first family wins a tie as the first frame would.
assert [n for names in TRIGGERS for n in names] == list(FRAMES)


def frames_in(norm: str, start: int, end: int, bits: int) -> list[re.Match[str]]:
    """The frames of one sentence as one alternation of the frames of the families in ``bits`` finds
    them (leftmost first, the earlier frame on a tie, no overlaps), while trying only the frames its
    trigger words call for: the next frame is the earliest of each family's next match, and a family
    whose match it overlaps searches again after it; once one family is left, its matches follow.
    (One alternation of every frame tried them all at every character, ~0.5 ms an answer; one
    compiled per set of families cost more to compile than it saved: the gold set's sentences hold
    227 different sets.)"""
    pending = [(m, scan) for bit, scan in _FAMILY_SCANS if bits & bit for m in [scan.search(norm, start, end)] if m]
    found = []
    while len(pending) > 1:
        m = min(pending, key=lambda p: p[0].start())[0]  # the first of equals: the earlier family
        found.append(m)
        after = m.end()
        pending = [(p, scan) if p.start() >= after else (scan.search(norm, after, end), scan) for p, scan in pending]
        pending = [(p, scan) for p, scan in pending if p]
    if pending:
        m, scan = pending[0]
        found += [m, *scan.finditer(norm, m.end(), end)]
    return found


def sentences(norm: str) -> tuple[list[int], list[int], list[str]]:
    """Where each sentence starts and ends (no frame spans two), as ``SENTENCE_END.split`` cuts them,
    and the punctuation that ends each ("" for the last)."""
    starts, stops, marks = [0], [], []
    for m in SENTENCE_END.finditer(norm):
        stops.append(m.start())
        marks.append(m.group())
        starts.append(m.end())
    stops.append(len(norm))
    marks.append("")
    return starts, stops, marks


def holds(norm: str, starts: list[int]) -> dict[int, int]:
    """The bits of the frame families and :data:`CUES` kinds each sentence holds a word of (sentences
    holding none left out), so the rest runs only where it can apply."""
    held: dict[int, int] = {}
    for scan in _TRIGGER_SCANS:
        for m in scan.finditer(norm):
            i = bisect.bisect_right(starts, m.start()) - 1
            held[i] = held.get(i, 0) | _WORD_BITS[m.group()]
    return held



def scope(norm: str, start: int, at: int) -> int:
    """Where a negation of the frame at ``at`` can start: after the last "and" / "or" of its clause
    ("no breakout and no breakdown" negates each once), and the frame's own words count too
    ("volume is not heavy", "MA5 is not yet above MA20")."""
    for m in COORDINATION.finditer(norm, start, at):  # the last one decides: matches do not overlap
        start = m.start() if m.group() == "nor" else m.end()  # "nor" itself negates
    return start


def negations(before: str) -> int:
    if not NEGATION.search(before):
        return 0
    return len(NEGATION.findall(NOT_NEGATION.sub(" ", before)))
