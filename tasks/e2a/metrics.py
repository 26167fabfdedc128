"""E2A-style metrics over scored responses, per modality and overall.

One row per response: ``modality``, ``action`` (None = unparseable), ``confidence``, ``polarity``
of its rationale, ``strong_signals`` of its window, and the counts of its ``supported`` and
``contradicted`` claims (unverifiable ones are counted apart, never scored). Directional = BUY or
SELL. Definitions (every threshold a parameter)::

    ucr_all / ucr_dir   contradicted / verifiable claims, over all / directional responses
    rci                 directional responses whose action goes against the rationale's polarity
                        (BUY with a bearish rationale, SELL with a bullish one), over directional
    eci                 directional with confidence >= eci_confidence and strong_signals <= eci_signals
    coverage            directional share of all responses (unparseable ones count as not acting)
    coverage_tau        the same among responses whose window has strong_signals >= tau
    ndr                 coverage x (1 - ucr_dir) x (1 - rci) x (1 - eci); ndr_tau on the tau subset
    buy_sell_ratio      BUY / SELL counts (None without a SELL)
    joint_pass_rate     directional, grounded (>= 1 supported and no contradicted claim), consistent
                        and calibrated at once, over directional
    no_claim_share      directional responses without any verifiable claim: reported, never clean

With no directional response at all, ndr is 0 and the diagnostics are None ("not applicable");
a directional set without verifiable claims has ucr_dir None and enters ndr as 1 - 0 (its
no_claim_share says so).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

DIRECTIONAL = ("BUY", "SELL")
TAUS = (1, 2, 3)
MODALITIES = ("text", "chart", "both")


def _share(hits: int, total: int) -> float | None:
    return None if total == 0 else hits / total


def _block(rows: pd.DataFrame, eci_confidence: float, eci_signals: int) -> dict[str, Any]:
    n = len(rows)
    directional = rows["action"].isin(DIRECTIONAL)
    d = rows[directional]
    verifiable = rows["supported"] + rows["contradicted"]
    inconsistent = ((d["action"] == "BUY") & (d["polarity"] == "bearish")) | ((d["action"] == "SELL") & (d["polarity"] == "bullish"))
    overconfident = (d["confidence"].fillna(0.0) >= eci_confidence) & (d["strong_signals"] <= eci_signals)
    grounded = (d["supported"] > 0) & (d["contradicted"] == 0)
    ucr_dir = _share(int(d["contradicted"].sum()), int(verifiable[directional].sum()))
    rci = _share(int(inconsistent.sum()), len(d))
    eci = _share(int(overconfident.sum()), len(d))
    coverage = _share(len(d), n)
    ndr = 0.0 if not len(d) else coverage * (1 - (ucr_dir or 0.0)) * (1 - rci) * (1 - eci)
    n_buy, n_sell = int((d["action"] == "BUY").sum()), int((d["action"] == "SELL").sum())
    return {
        "n": n,
        "n_directional": len(d),
        "ucr_all": _share(int(rows["contradicted"].sum()), int(verifiable.sum())),
        "ucr_dir": ucr_dir,
        "rci": rci,
        "eci": eci,
        "coverage": coverage,
        "ndr": ndr,
        "buy_sell_ratio": None if n_sell == 0 else n_buy / n_sell,
        "joint_pass_rate": _share(int((grounded & ~inconsistent & ~overconfident).sum()), len(d)),
        "no_claim_share": _share(int((verifiable[directional] == 0).sum()), len(d)),
        "parse_failure_rate": _share(int(rows["action"].isna().sum()), n),
        "n_unverifiable": int(rows["unverifiable"].sum()) if "unverifiable" in rows else 0,
    }


def e2a_metrics(rows: pd.DataFrame, eci_confidence: float = 0.7, eci_signals: int = 1,
                taus: tuple[int, ...] = TAUS, modalities: tuple[str, ...] = MODALITIES) -> dict[str, Any]:
    """``all`` and ``modalities.<name>`` blocks with the same keys (module docstring); a modality
    without responses gets its block too (n 0, ndr 0, the rest None)."""

    def full(part: pd.DataFrame) -> dict[str, Any]:
        out = _block(part, eci_confidence, eci_signals)
        for tau in taus:
            strong = part[part["strong_signals"] >= tau]
            sub = _block(strong, eci_confidence, eci_signals)
            out[f"coverage_tau{tau}"] = sub["coverage"]
            out[f"ndr_tau{tau}"] = sub["ndr"] if len(strong) else None
        return out

    names = list(dict.fromkeys([*modalities, *map(str, rows["modality"].unique())]))
    return {"all": full(rows), "modalities": {m: full(rows[rows["modality"] == m]) for m in names}}
