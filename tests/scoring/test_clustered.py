"""candlebench.scoring.clustered against hand computations: Holm's adjustment, the exact sign-flip
test by enumeration, its normal approximation as Durkalski's clustered McNemar, no p-value below ten
clusters, the cluster bootstrap's draws, clusters of a two-column key."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import candlebench.scoring.bootstrap as bootstrap
import candlebench.scoring.clustered as clustered
from candlebench.scoring.bootstrap import date_weights, resampled_sums
from candlebench.scoring.clustered import adjust, clusters, holm, paired_ratio, sign_flip_p

pytestmark = pytest.mark.unit


def test_holm_matches_hand_computed_values():
    # Sorted 0.005, 0.01, 0.03, 0.04 of four tests: x4, x3, x2, x1, each at least the one before.
    assert holm([0.01, 0.04, 0.03, None, 0.005]) == pytest.approx([0.03, 0.06, 0.06, None, 0.02])
    assert holm([0.5, 0.2]) == pytest.approx([0.5, 0.4])  # 0.2 x 2 = 0.4; then max(0.4, 0.5)
    assert holm([0.9, 0.8, 0.7]) == pytest.approx([1.0, 1.0, 1.0])  # capped at 1
    blocks = [{"p": 0.01}, None, {"p": None}, {"p": 0.02}]
    adjust(blocks)
    assert (blocks[0]["p_holm"], blocks[2]["p_holm"], blocks[3]["p_holm"]) == (pytest.approx(0.02), None, pytest.approx(0.02))


def hand_exact_p(a: np.ndarray, b: np.ndarray) -> float:
    def diff(x, y):
        return y[:, 0].sum() / y[:, 1].sum() - x[:, 0].sum() / x[:, 1].sum()

    observed = abs(diff(a, b))
    hits = 0
    for flips in itertools.product([False, True], repeat=len(a)):
        swap = np.array(flips)[:, None]
        hits += abs(diff(np.where(swap, b, a), np.where(swap, a, b))) >= observed - 1e-12
    return hits / 2 ** len(a)


def test_the_exact_test_enumerates_every_swap_of_ratio_sums():
    rng = np.random.default_rng(0)
    # Unequal denominators (as E2A's UCR_dir over each run's own directional answers).
    a = np.column_stack([rng.integers(0, 5, 11), rng.integers(5, 9, 11)]).astype(float)
    b = np.column_stack([rng.integers(1, 7, 11), rng.integers(5, 9, 11)]).astype(float)
    p, method = sign_flip_p(a, b)
    assert p == pytest.approx(hand_exact_p(a, b)) and method == clustered.METHOD_EXACT
    batched, _ = sign_flip_p(np.stack([a, b]), np.stack([b, a]))  # leading axes: several comparisons at once
    assert batched == pytest.approx([float(p), float(p)])


def test_the_normal_approximation_is_durkalskis_clustered_mcnemar():
    rng = np.random.default_rng(1)
    size = rng.integers(3, 9, 40)
    right_a, right_b = rng.binomial(size, 0.5), rng.binomial(size, 0.6)
    p, method = sign_flip_p(np.column_stack([right_a, size]), np.column_stack([right_b, size]))
    d = right_b - right_a  # a cluster's discordant counts b_k - c_k
    assert method == clustered.METHOD_NORMAL
    assert p == pytest.approx(math.erfc(math.sqrt(d.sum() ** 2 / (d**2).sum() / 2)))


def test_fewer_than_ten_clusters_give_no_p_and_say_why():
    a, b = np.ones((9, 2)), np.column_stack([np.zeros(9), np.ones(9)])
    p, method = sign_flip_p(a, b)
    assert np.isnan(p) and method is None
    out = paired_ratio(a, b, "cutoff date", 50, 0)
    assert out["p"] is None and out["method"] == clustered.TOO_FEW and out["diff"] == -1.0 and out["ci"] == [-1.0, -1.0]


def test_identical_runs_give_p_one_and_an_undefined_ratio_none():
    a = np.column_stack([np.arange(20.0), np.full(20, 30.0)])
    assert paired_ratio(a, a.copy(), "chart", 0, 0)["p"] == 1.0
    empty = np.column_stack([np.zeros(20), np.zeros(20)])
    out = paired_ratio(empty, a, "chart", 10, 0)
    assert out["a"] is None and out["diff"] is None and out["p"] is None and out["ci"] is None


def test_resampled_sums_are_the_date_weights_draws_in_blocks(monkeypatch):
    terms = np.random.default_rng(2).normal(size=(37, 3))
    whole = date_weights(37, 500, 5) @ terms
    assert resampled_sums(terms, 500, 5) == pytest.approx(whole)
    monkeypatch.setattr(bootstrap, "_BLOCK", 100)  # two replicates a block
    assert resampled_sums(terms, 500, 5) == pytest.approx(whole)


def test_clusters_of_a_two_column_key_and_their_subsets():
    frame = pd.DataFrame({"code": ["B", "A", "B", "A", "B"], "cutoff": [2, 1, 2, 2, 1]})
    found = clusters(frame, ["code", "cutoff"], "stock-window")
    assert list(found.codes) == [3, 0, 3, 1, 2] and found.k == 4  # (A,1) (A,2) (B,1) (B,2)
    assert list(found.subset(np.array([True, False, True, True, False])).codes) == [1, 1, 0]
    assert found.sums(np.arange(5.0)).ravel().tolist() == [1.0, 3.0, 4.0, 2.0]
    alone = clusters(frame, [], "sample")
    assert alone.unit == "sample" and list(alone.codes) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match=r"cannot cluster by \['sample_id'\] \(chart\): no column \['sample_id'\]"):
        clusters(frame, ["sample_id"], "chart")
