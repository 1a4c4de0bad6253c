"""diagnose reads "above chance" as it reads "below chance": at the family's level over the scores read
against chance, and over several heads beside each head's own interval over the shared rows. A null
audit (other images of the same classes, true shift AUROC ½) printed msp 0.552 [0.527, 0.577] over 3
heads with no line saying it is not shown above chance, while each head's own interval over its rows
held ½; with one head, 0.593 [0.531, 0.649] passed at 95% where the family's level holds ½."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import fit_quickly, write_cache

from laya_inspect.beyond.diagnose import DiagnoseConfig, diagnose_heads
from laya_inspect.beyond.scoring import versus_chance, versus_msp
from laya_inspect.cache.store import FeatureStore
from laya_inspect.head_dir import cache_identity, save_head

SCORES = ("msp", "alpha_entropy", "alpha_divergence")


def _not_shown(text: str, score: str) -> bool:
    """``score`` is said not to be shown to tell the caches apart (alone, or in a "neither … nor" list)."""
    alone = f"{score} is not shown to tell the caches apart better than chance" in text
    listed = re.search(rf"neither [^;]*\b{score}\b[^;]* is shown to tell the caches apart", text)
    return alone or bool(listed)


def _halves(digits_cache: Path, folder: Path, seed: int, swap: bool) -> tuple[Path, Path]:
    """The digits cache's test rows split in two at random: this.h5 (the train split and one half) and
    other.h5 (the other half; ``swap``: the halves the other way round): the same source, disjoint rows,
    so no score tells them apart in truth."""
    with FeatureStore(digits_cache) as store:
        train = (store.layers("train"), store.labels("train"))
        feats, labels = store.layers("test"), store.labels("test")
    order = np.random.default_rng(seed).permutation(len(labels))
    one, two = np.sort(order[: len(order) // 2]), np.sort(order[len(order) // 2 :])
    one, two = (two, one) if swap else (one, two)
    this = write_cache(folder / "this.h5", {"train": train, "test": ([f[one] for f in feats], labels[one])})
    other = write_cache(folder / "other.h5", {"test": ([f[two] for f in feats], labels[two])}, data_spec="other")
    return this, other


# (seed, swap): over the 3 heads, alpha_entropy 0.516 [0.506, 0.525] lies above ½ at 95% (each head's rows
# ±0.05 hold it), and msp 0.473 [0.454, 0.491] under it, neither at the family's level: both were said nothing
@pytest.mark.parametrize(("split", "swap"), [(2, True), (7, False)])
def test_other_rows_of_the_same_source_are_not_read_as_a_shift_over_three_heads(digits_cache, tmp_path, split, swap):
    this, other = _halves(digits_cache, tmp_path, split, swap)
    with FeatureStore(this) as store:
        dirs = [
            save_head(tmp_path / f"seed_{s}", fit_quickly("laya", store, seed=s), meta=cache_identity(store))
            for s in range(3)
        ]
    config = DiagnoseConfig(permutations=200, n_boot=1000, plots=False)
    with FeatureStore(this) as store, FeatureStore(other) as against:
        s = diagnose_heads(dirs, store, config, out_dir=tmp_path / "out", against=against).summary
    said = " ".join(line for line in s["verdict"] if "shift detection by" in line)
    assert said, s["verdict"]
    for score in SCORES:  # no score is read as telling the two halves apart
        assert _not_shown(said, score), (score, s["shift"]["pooled"]["detect_auroc"][score], said)
    pooled = s["shift"]["pooled"]["detect_auroc"]
    assert not any(pooled[k]["above_chance"] for k in SCORES)
    # the rule still reads a real signal: each head tells errors from correct rows above chance by msp
    assert all(h["auroc"]["msp"]["above_chance"] for h in s["heads"])
    assert "msp is not shown to tell errors" not in " ".join(s["verdict"])


def test_one_heads_auroc_is_read_above_chance_at_the_familys_level():
    """With one head the interval runs over its rows: msp's 95% interval lies above ½ here, its interval
    at 98.3% (3 scores read against chance) holds ½, and the line says it is not shown above chance."""
    rng = np.random.default_rng(3)
    y = np.r_[np.zeros(200, bool), np.ones(200, bool)]
    scores = {"msp": rng.normal(size=400) + 0.25 * y, "alpha_entropy": rng.normal(size=400)}
    scores["alpha_divergence"] = rng.normal(size=400)
    auroc = versus_msp(y, scores, n_boot=1000, seed=0, settle=True, of="scores compared with msp")["auroc"]
    msp = auroc["msp"]
    assert msp["ci_low"] > 0.5  # the 95% interval shown lies above ½ …
    said = versus_chance(auroc, ["alpha_entropy", "msp"], "the caches", [auroc])
    assert (
        "; msp is not shown to tell the caches apart better than chance on this fitted head's rows (its interval "
        "at 98.3%, Bonferroni over the scores read against chance, ["
    ) in said
    assert msp["chance_confidence"] == pytest.approx(1 - 0.05 / 3)
    assert msp["chance_ci_low"] < 0.5 < msp["chance_ci_high"] and msp["above_chance"] is False  # … not at 98.3%
    assert f"[{msp['chance_ci_low']:.4f}, {msp['chance_ci_high']:.4f}], holds 0.5)" in said
    clear = versus_msp(y, {**scores, "msp": scores["msp"] + 2.0 * y}, n_boot=1000, seed=0, settle=True, of="x")
    assert clear["auroc"]["msp"]["above_chance"] is True
    assert "msp" not in versus_chance(clear["auroc"], ["msp"], "the caches", [clear["auroc"]])
