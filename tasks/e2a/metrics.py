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

import numpy as np
import pandas as pd

from scoring.bootstrap import date_weights, percentile_ci, weighted_ratio

DIRECTIONAL = ("BUY", "SELL")
TAUS = (1, 2, 3)
MODALITIES = ("text", "chart", "both")


def _share(hits: float, total: float) -> float | None:
    return None if total == 0 else hits / total


def indicators(rows: pd.DataFrame, eci_confidence: float = 0.7, eci_signals: int = 1) -> pd.DataFrame:
    """Per response, the 0/1 (or count) terms every metric is a ratio of sums of: the point
    estimates and the bootstrap replicates add up the same columns."""
    directional = rows["action"].isin(DIRECTIONAL)
    verifiable = rows["supported"] + rows["contradicted"]
    inconsistent = directional & (((rows["action"] == "BUY") & (rows["polarity"] == "bearish"))
                                  | ((rows["action"] == "SELL") & (rows["polarity"] == "bullish")))
    overconfident = directional & (rows["confidence"].fillna(0.0) >= eci_confidence) & (rows["strong_signals"] <= eci_signals)
    grounded = (rows["supported"] > 0) & (rows["contradicted"] == 0)
    return pd.DataFrame({
        "n": 1,
        "directional": directional.astype(int),
        "buy": (rows["action"] == "BUY").astype(int),
        "sell": (rows["action"] == "SELL").astype(int),
        "contradicted": rows["contradicted"],
        "verifiable": verifiable,
        "contradicted_dir": rows["contradicted"].where(directional, 0),
        "verifiable_dir": verifiable.where(directional, 0),
        "inconsistent": inconsistent.astype(int),
        "overconfident": overconfident.astype(int),
        "joint": (directional & grounded & ~inconsistent & ~overconfident).astype(int),
        "no_claim": (directional & (verifiable == 0)).astype(int),
        "failed": rows["action"].isna().astype(int),
    }, index=rows.index)


# metric -> (numerator, denominator) column of indicators()
RATIOS = {
    "ucr_all": ("contradicted", "verifiable"), "ucr_dir": ("contradicted_dir", "verifiable_dir"),
    "rci": ("inconsistent", "directional"), "eci": ("overconfident", "directional"),
    "coverage": ("directional", "n"), "joint_pass_rate": ("joint", "directional"),
    "no_claim_share": ("no_claim", "directional"), "parse_failure_rate": ("failed", "n"),
}


def ndr(coverage, ucr_dir, rci, eci):
    """coverage x (1 - ucr_dir) x (1 - rci) x (1 - eci); arrays (bootstrap replicates) or numbers."""
    return coverage * (1 - ucr_dir) * (1 - rci) * (1 - eci)


def block(rows: pd.DataFrame, eci_confidence: float, eci_signals: int) -> dict[str, Any]:
    sums = indicators(rows, eci_confidence, eci_signals).sum()
    out: dict[str, Any] = {"n": int(sums["n"]), "n_directional": int(sums["directional"])}
    out.update({name: _share(float(sums[num]), float(sums[den])) for name, (num, den) in RATIOS.items()})
    out["ndr"] = 0.0 if not out["n_directional"] else ndr(out["coverage"], out["ucr_dir"] or 0.0, out["rci"], out["eci"])
    out["buy_sell_ratio"] = _share(float(sums["buy"]), float(sums["sell"]))
    out["n_unverifiable"] = int(rows["unverifiable"].sum()) if "unverifiable" in rows else 0
    return out


def stock_bootstrap(rows: pd.DataFrame, n_boot: int, seed: int = 0, eci_confidence: float = 0.7,
                    eci_signals: int = 1) -> dict[str, tuple[float, float] | None]:
    """95% percentile intervals of the main metrics, resampling stocks (``code``) with replacement:
    a stock's responses move together (one window per date), so stocks are the independent units."""
    terms = stock_terms(rows, eci_confidence, eci_signals)
    found = replicates(terms, date_weights(len(terms), n_boot, seed))
    return {name: percentile_ci(values) for name, values in found.items()}


def stock_terms(rows: pd.DataFrame, eci_confidence: float = 0.7, eci_signals: int = 1) -> pd.DataFrame:
    """The indicator sums of each stock (``code``), in code order."""
    return indicators(rows, eci_confidence, eci_signals).groupby(rows["code"].to_numpy()).sum()


def replicates(terms: pd.DataFrame, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric per bootstrap replicate; ``weights`` (n_boot, n_stocks) are the stocks' draw counts."""
    out = {name: weighted_ratio(weights, terms[num].to_numpy(float), terms[den].to_numpy(float))
           for name, (num, den) in RATIOS.items()}
    acted = (weights @ terms["directional"].to_numpy(float)) > 0
    out["ndr"] = np.where(acted, ndr(out["coverage"], np.nan_to_num(out["ucr_dir"]), out["rci"], out["eci"]), 0.0)
    return out


def e2a_metrics(rows: pd.DataFrame, eci_confidence: float = 0.7, eci_signals: int = 1,
                taus: tuple[int, ...] = TAUS, modalities: tuple[str, ...] = MODALITIES,
                n_boot: int = 0, seed: int = 0) -> dict[str, Any]:
    """``all`` and ``modalities.<name>`` blocks with the same keys (module docstring); a modality
    without responses gets its block too (n 0, ndr 0, the rest None). With ``n_boot`` and a
    ``code`` column, each block has ``ci``: 95% intervals over stocks (:func:`stock_bootstrap`)."""

    def full(part: pd.DataFrame) -> dict[str, Any]:
        out = block(part, eci_confidence, eci_signals)
        if n_boot > 0 and "code" in part:
            out["ci"] = stock_bootstrap(part, n_boot, seed, eci_confidence, eci_signals) if len(part) else None
        for tau in taus:
            strong = part[part["strong_signals"] >= tau]
            sub = block(strong, eci_confidence, eci_signals)
            out[f"coverage_tau{tau}"] = sub["coverage"]
            out[f"ndr_tau{tau}"] = sub["ndr"] if len(strong) else None
        return out

    names = list(dict.fromkeys([*modalities, *map(str, rows["modality"].unique())]))
    return {"all": full(rows), "modalities": {m: full(rows[rows["modality"] == m]) for m in names}}
