"""E2A-style metrics over scored responses, per modality and overall.

One row per response: ``modality``, ``action`` (None = unparseable), ``confidence`` (None =
not stated), ``polarity`` of its rationale, ``strong_signals`` S of its window, and the counts of
its ``supported`` and ``contradicted`` claims (unverifiable ones are counted apart, never scored).
Directional = BUY or SELL. The definitions are the seed paper's (§3.3), every threshold a parameter::

    ucr (per response)  contradicted / verifiable claims of the response; 0 when it has none (the
                        paper's convention: such answers are handled by coverage, not rewarded)
    ucr_all / ucr_dir   the mean response-level UCR over all / over directional responses (the paper:
                        "averaging response-level UCR over directional responses"), so a long
                        answer weighs as much as a short one
    rci                 directional responses whose action goes against the rationale's polarity
                        (BUY with a bearish rationale, SELL with a bullish one), over directional
    eci                 directional with confidence >= eci_confidence and S <= eci_signals, over the
                        directional responses that state a confidence: a missing confidence is
                        missing, not 0 (no_confidence_share counts them; the report says so)
    coverage            directional share of all responses (unparseable ones count as not acting)
    coverage_tau        responses that are directional *and* have S >= tau, over all responses: it
                        only restricts coverage as tau rises (the paper's Cov_tau)
    ndr / ndr_tau       coverage_tau x (1 - ucr_dir) x (1 - rci) x (1 - eci), the three diagnostics
                        over the directional responses with S >= tau (D_tau); tau = 0 is ndr
    buy_sell_ratio      BUY / SELL counts (None without a SELL)
    joint_pass_rate     directional, grounded (>= 1 supported and no contradicted claim), consistent
                        and not overconfident at once, over directional
    no_claim_share      directional responses without any verifiable claim: their UCR is 0 by
                        convention, so a high share means ndr rests on answers the judge could not check
    judge audit         claims_per_answer (verifiable), answers_without_claim (all responses),
                        unverifiable_share (of all claims stated); point estimates only

With no directional response at all (in D_tau), ndr (ndr_tau) is 0 and the diagnostics are None
("not applicable").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from candlebench.scoring.bootstrap import date_weights, percentile_ci, weighted_ratio
from candlebench.scoring.per_sample import Derived, Grouping, Measure, PerSample
from candlebench.tasks.e2a.settings import MODALITIES

DIRECTIONAL = ("BUY", "SELL")
TAUS = (1, 2, 3)


def _share(hits: float, total: float) -> float | None:
    return None if total == 0 else hits / total


def indicators(rows: pd.DataFrame, eci_confidence: float = 0.7, eci_signals: int = 1) -> pd.DataFrame:
    """Per response, the 0/1 (or count) terms every metric is a ratio of sums of: the point
    estimates and the bootstrap replicates add up the same columns."""
    directional = rows["action"].isin(DIRECTIONAL)
    verifiable = rows["supported"] + rows["contradicted"]
    ucr = (rows["contradicted"] / verifiable.where(verifiable > 0)).fillna(0.0)
    inconsistent = directional & (((rows["action"] == "BUY") & (rows["polarity"] == "bearish"))
                                  | ((rows["action"] == "SELL") & (rows["polarity"] == "bullish")))
    confidence = pd.to_numeric(rows["confidence"], errors="coerce")
    stated = directional & confidence.notna()
    overconfident = stated & (confidence >= eci_confidence) & (rows["strong_signals"] <= eci_signals)
    grounded = (rows["supported"] > 0) & (rows["contradicted"] == 0)
    return pd.DataFrame({
        "n": 1,
        "directional": directional.astype(int),
        "buy": (rows["action"] == "BUY").astype(int),
        "sell": (rows["action"] == "SELL").astype(int),
        "ucr": ucr,
        "ucr_dir": ucr.where(directional, 0.0),
        "inconsistent": inconsistent.astype(int),
        "stated": stated.astype(int),
        "overconfident": overconfident.astype(int),
        "no_confidence": (directional & ~stated).astype(int),
        "joint": (directional & grounded & ~inconsistent & ~overconfident).astype(int),
        "no_claim": (directional & (verifiable == 0)).astype(int),
        "verifiable": verifiable,
        "failed": rows["action"].isna().astype(int),
    }, index=rows.index)


# metric -> (numerator, denominator) column of indicators()
RATIOS = {
    "ucr_all": ("ucr", "n"), "ucr_dir": ("ucr_dir", "directional"),
    "rci": ("inconsistent", "directional"), "eci": ("overconfident", "stated"),
    "coverage": ("directional", "n"), "joint_pass_rate": ("joint", "directional"),
    "no_claim_share": ("no_claim", "directional"), "no_confidence_share": ("no_confidence", "directional"),
    "parse_failure_rate": ("failed", "n"),
}


def ndr(coverage, ucr_dir, rci, eci):
    """coverage x (1 - ucr_dir) x (1 - rci) x (1 - eci); arrays (bootstrap replicates) or numbers."""
    return coverage * (1 - ucr_dir) * (1 - rci) * (1 - eci)


def _of(totals, name: str) -> np.ndarray:
    num, den = (np.asarray(totals[c], float) for c in RATIOS[name])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def ndr_of(totals) -> np.ndarray:
    """NDR from the indicator totals (a run's, or a bootstrap replicate's each): 0 without a
    directional answer, an ECI without a stated confidence counted as 0."""
    value = ndr(*(_of(totals, name) for name in ("coverage", "ucr_dir", "rci")), np.nan_to_num(_of(totals, "eci")))
    return np.where(np.asarray(totals["directional"]) > 0, value, 0.0)


def buy_sell_of(totals) -> np.ndarray:
    buy, sell = (np.asarray(totals[c], float) for c in ("buy", "sell"))
    return np.where(sell > 0, buy / np.where(sell > 0, sell, 1.0), np.nan)


NO_DIRECTIONAL = "no directional (BUY or SELL) answer to judge"
# (metric, title, lower is better, in the results table, why a run can lack it)
_SHOWN = (("ucr_dir", "UCR_dir", True, True, NO_DIRECTIONAL), ("rci", "RCI", True, True, NO_DIRECTIONAL),
          ("eci", "ECI", True, True, "no directional answer that states a confidence"),
          ("coverage", "Coverage", False, True, ""), ("parse_failure_rate", "Parse fail", True, True, ""),
          ("ucr_all", "UCR_all", True, False, ""), ("joint_pass_rate", "Joint pass", False, False, NO_DIRECTIONAL),
          ("no_claim_share", "No claim", True, False, NO_DIRECTIONAL),
          ("no_confidence_share", "No confidence", True, False, NO_DIRECTIONAL))

# The per-sample default's view of E2A (scoring/per_sample.py): each ratio of RATIOS over a run's own
# denominator, compared over stock-windows (a stock at one cutoff: its three modalities share the
# window's evidence), per modality a Holm family, the overall tests each the pair's headline; NDR and
# BUY:SELL derived from the same totals. Run intervals are the score's own (over stocks, under "all").
PER_SAMPLE = PerSample(
    measures=tuple(Measure(key, title, not lower, headline=shown, ratio=RATIOS[key], missing=missing)
                   for key, title, lower, shown, missing in _SHOWN),
    derived=(Derived("ndr", "NDR", tuple(dict.fromkeys(c for k in ("coverage", "ucr_dir", "rci", "eci") for c in RATIOS[k])),
                     ndr_of, headline=True),
             Derived("buy_sell_ratio", "BUY:SELL", ("buy", "sell"), buy_sell_of, digits=2, interval=False,
                     relative=True)),
    cluster=("code", "cutoff"), cluster_unit="stock-window", groups=(Grouping("modality", "Modality"),),
    holm_measures=False, block="all", parse_failures=False, title="E2A-style evidence to action",
    unit="the stock-window (its three modalities share the window's evidence)", group="modality", outcome="claims",
    note="Intervals over stocks. NDR = coverage x (1-UCR_dir) x (1-RCI) x (1-ECI); the leaderboard below has each "
         "modality and the judge audit how much of each run the judge could check.",
    second_pass_heading="oracle-aided verification (direct → verify, same samples)",
    second_pass_note="The verify pass saw its direct answer's claims with their verdicts and every anchor fact. A fall "
                     "in UCR with a fall in coverage is the seed paper's verification-induced coverage collapse.")


def per_sample(rows: pd.DataFrame, eci_confidence: float, eci_signals: int) -> pd.DataFrame:
    """The per-sample table the score stage keeps: each response's indicators and ``claims``, the
    browser's verdict (1: some claim supported and none contradicted, 0: one contradicted, NaN: no
    verifiable claim)."""
    terms = indicators(rows, eci_confidence, eci_signals)
    claims = (rows["contradicted"] == 0).astype(float).where(terms["verifiable"] > 0)
    return terms.assign(claims=claims).assign(sample_id=rows["sample_id"].to_numpy())


def block(rows: pd.DataFrame, eci_confidence: float, eci_signals: int) -> dict[str, Any]:
    return _block(indicators(rows, eci_confidence, eci_signals), rows.get("unverifiable"))


def _block(terms: pd.DataFrame, unverifiable: pd.Series | None) -> dict[str, Any]:
    """The metrics of the responses whose :func:`indicators` are ``terms``."""
    sums = terms.sum()
    out: dict[str, Any] = {"n": int(sums["n"]), "n_directional": int(sums["directional"])}
    out.update({name: _share(float(sums[num]), float(sums[den])) for name, (num, den) in RATIOS.items()})
    out["ndr"] = 0.0 if not out["n_directional"] else ndr(out["coverage"], out["ucr_dir"], out["rci"], out["eci"] or 0.0)
    out["buy_sell_ratio"] = _share(float(sums["buy"]), float(sums["sell"]))
    # The judge audit (the report shows it next to NDR): how much of each answer the judge could check.
    out["n_unverifiable"] = int(unverifiable.sum()) if unverifiable is not None else 0
    stated = float(sums["verifiable"]) + out["n_unverifiable"]
    out["claims_per_answer"] = _share(float(sums["verifiable"]), float(sums["n"]))
    out["answers_without_claim"] = _share(float((terms["verifiable"] == 0).sum()), float(sums["n"]))
    out["unverifiable_share"] = _share(out["n_unverifiable"], stated)
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
    out["ndr"] = np.where(acted, ndr(out["coverage"], out["ucr_dir"], out["rci"], np.nan_to_num(out["eci"])), 0.0)
    return out


def e2a_metrics(rows: pd.DataFrame, eci_confidence: float = 0.7, eci_signals: int = 1,
                taus: tuple[int, ...] = TAUS, modalities: tuple[str, ...] = MODALITIES,
                n_boot: int = 0, seed: int = 0) -> dict[str, Any]:
    """``all`` and ``modalities.<name>`` blocks with the same keys (module docstring); a modality
    without responses gets its block too (n 0, ndr 0, the rest None). With ``n_boot`` and a
    ``code`` column, each block has ``ci``: 95% intervals over stocks (:func:`stock_bootstrap`)."""

    # The indicators once: each block sums those of its rows (16 blocks by default).
    terms = indicators(rows, eci_confidence, eci_signals)
    unverifiable = rows.get("unverifiable")

    def part_block(mask: pd.Series) -> dict[str, Any]:
        picked = mask.to_numpy()
        return _block(terms[picked], None if unverifiable is None else unverifiable[picked])

    def full(mask: pd.Series) -> dict[str, Any]:
        out = part_block(mask)
        if n_boot > 0 and "code" in rows:
            out["ci"] = stock_bootstrap(rows[mask], n_boot, seed, eci_confidence, eci_signals) if mask.any() else None
        for tau in taus:
            d_tau = part_block(mask & (rows["strong_signals"] >= tau))
            out[f"coverage_tau{tau}"] = _share(d_tau["n_directional"], out["n"])
            out[f"ndr_tau{tau}"] = 0.0 if not d_tau["n_directional"] else ndr(
                out[f"coverage_tau{tau}"], d_tau["ucr_dir"], d_tau["rci"], d_tau["eci"] or 0.0)
        return out

    names = list(dict.fromkeys([*modalities, *map(str, rows["modality"].unique())]))
    return {"all": full(pd.Series(True, index=rows.index)), "modalities": {m: full(rows["modality"] == m) for m in names}}
