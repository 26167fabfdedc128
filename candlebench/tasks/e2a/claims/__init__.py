"""Claims of an E2A-style answer, verified against the window's anchors; and its rationale's polarity.

E2A-Bench never published its claim matcher; this one is ours, measured on the hand-labelled gold
set in ``tests/gold/e2a/`` (its README defines every claim; ``bench/e2a.py`` prints the accuracy).
A claim is one of :data:`CLAIMS` (e.g. ``close_above_ma20``), asserted or negated; its verdict is
``supported`` when what the answer asserts holds in the window, else ``contradicted``. Technical
statements no anchor checks (RSI, MACD, KDJ, MA60/120/250, chart patterns, ...) are
``unverifiable``: counted, never scored.

How a text is read, in order:

1. **Normalise**: NFKC, lower case, Chinese numerals before 日; every moving-average mention becomes
   a token: ``‹m5›`` (MA5, MA 5, MA(5), SMA5, 5-day EMA, 5-day line, 5日均线, 5日线, 五日线, ...),
   lists ``‹m5+10+20›`` ("5-, 10- and 20-day averages", "MA5、MA10和MA20", "5日和10日均线"), and
   ``‹mall›`` for the averages unnamed ("the moving averages", "均线").
2. **Clauses**: sentences split at . ! ? ; 。！？； and line breaks, clauses at commas, colons and
   but / while / whereas / although / 但 / 而 / 虽然 / 尽管. A question (ending in ?) holds no claim.
3. **Frames**, found as one alternation of them all finds them (leftmost first, no overlaps):
   close vs averages (relation before or after the token: "above ‹m20›", "站上‹m5+10›", "‹m20›之上"), average vs average
   ("‹m5› above ‹m20›" is ma5_above_ma20, "‹m5›上穿‹m20›" a golden cross), and the fixed phrases
   of the other anchors. A frame whose clause names MACD, KDJ, RSI, ... is about that indicator
   ("MACD golden cross"): unverifiable, not an anchor claim.
4. **Modality and negation**, both in the clause before the frame: a hedge or condition (could,
   might, would, if, likely to, 有望, 若, 一旦, 或将, 可能, ...) leaves no claim; a negation (not,
   no, no longer, never, has yet to, 未, 没有, 并未, 尚未, 不再, 未能) negates it, but "no doubt",
   "not only", "未来" (future), "无疑", "毫无" do not, and two negations cancel.
5. **A set**: each (claim, negated) counts once per answer, however often it is repeated (free text
   is both the analysis and the rationale).

Modules, one concern each: :mod:`.lexicon` (the claims and the words of frames, cues, hedges and
negations), :mod:`.normalise` (step 1), :mod:`.scan` (steps 2-4: sentences, the trie scan of trigger
words, frames, negation scope), :mod:`.judge` (claims and verdicts, step 5) and :mod:`.polarity`.
"""

from __future__ import annotations

from candlebench.tasks.e2a.claims.judge import Claim, Verdict, extract_claims, fact_of, judge
from candlebench.tasks.e2a.claims.lexicon import CLAIMS, UNVERIFIABLE
from candlebench.tasks.e2a.claims.normalise import normalise
from candlebench.tasks.e2a.claims.polarity import polarity

__all__ = ["CLAIMS", "UNVERIFIABLE", "Claim", "Verdict", "extract_claims", "fact_of", "judge", "normalise", "polarity"]
