"""diagnose: α scores by hand, AUROC against scikit-learn, a corrupted copy that changes only one
layer moves α on that layer (and one that changes a layer the scorer ignores moves nothing), the
command end to end on the digits cache, and one failing invocation per error class."""

from __future__ import annotations

import csv
import html
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import fit_quickly, other_rows_caches, page_said, settings_said, write_cache
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from laya_inspect.beyond.diagnose import (
    DiagnoseConfig,
    alpha_divergence,
    alpha_entropy,
    class_reference,
    diagnose_heads,
)
from laya_inspect.beyond.scoring import auroc, detection, permutation_test, versus_msp
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head
from laya_inspect.heads import LayaHead, build_head

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}


def test_alpha_scores_by_hand():
    w = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    assert alpha_entropy(w) == pytest.approx([math.log(2), 0.0])
    ref = np.array([[0.25, 0.25, 0.5], [1.0, 0.0, 0.0]])
    d = alpha_divergence(w, np.array([0, 1]), ref)
    assert d == pytest.approx([0.5 * math.log(2) * 2, 0.0])
    preds, labels = np.array([0, 0, 1, 1]), np.array([0, 0, 1, 0])
    rows = np.array([[0.2, 0.8], [0.4, 0.6], [0.9, 0.1], [0.0, 1.0]])
    means, missing = class_reference(rows, preds, labels, 3)
    assert means[0] == pytest.approx([0.3, 0.7]) and means[1] == pytest.approx([0.9, 0.1])
    assert missing == [2] and means[2] == pytest.approx(rows[:3].mean(0))


def test_auroc_agrees_with_sklearn():
    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.3
    s = np.round(rng.normal(size=300) + y, 1)  # rounded: ties
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_detection_orients_alpha_scores_on_held_out_rows_and_says_what_helps():
    rng = np.random.default_rng(1)
    n = 400
    held_y, test_y = rng.random(n) < 0.3, rng.random(n) < 0.3

    def scores(y):  # msp uninformative; α entropy *lower* on errors, perfectly
        return {"msp": rng.random(n), "alpha_entropy": np.where(y, 0.1, 0.9), "alpha_divergence": rng.random(n)}

    d = detection(scores(held_y), held_y, scores(test_y), test_y, n_boot=200, seed=0)
    assert d["directions"]["alpha_entropy"].startswith("negated")
    assert d["auroc"]["alpha_entropy"]["mean"] == 1.0
    assert 0.4 < d["auroc"]["msp"]["mean"] < 0.6
    diff = d["diff_vs_msp"]["alpha_entropy − msp"]
    assert diff["ci_low"] > 0
    assert d["auroc"]["alpha"]["mean"] == 1.0  # the logistic combination finds it too
    assert d["aupr_baseline"] == pytest.approx(test_y.mean())


def test_msp_reversed_on_the_held_out_rows_is_negated_as_an_alpha_score_would_be():
    """A head more confident on its errors (at chance: msp's AUROC 0.41) lost to α entropy only because
    α's direction was learnt and msp's assumed: "alpha_entropy beats msp +0.147". msp is oriented on
    the held-out rows too, so both sides of the difference had the same freedom."""
    rng = np.random.default_rng(2)
    n = 400
    held_y, test_y = rng.random(n) < 0.3, rng.random(n) < 0.3

    def scores(y):  # msp *lower* on errors (reversed), α entropy uninformative
        return {"msp": np.where(y, 0.2, 0.6) + 0.3 * rng.random(n), "alpha_entropy": rng.random(n),
                "alpha_divergence": rng.random(n)}  # fmt: skip

    d = detection(scores(held_y), held_y, scores(test_y), test_y, n_boot=200, seed=0)
    assert d["directions"]["msp"].startswith("negated")
    assert d["auroc"]["msp"]["mean"] > 0.9
    assert d["diff_vs_msp"]["alpha_entropy − msp"]["ci_high"] < 0  # α entropy is the weaker score, not the better


def test_permutation_test_finds_the_moved_layer_and_only_it():
    rng = np.random.default_rng(0)
    a = rng.dirichlet([2, 2, 2], size=300)
    b = rng.dirichlet([2, 2, 2], size=300)
    b[:, 1] += 0.2
    b /= b.sum(1, keepdims=True)
    r = permutation_test(a, b, np.zeros(300, int), np.zeros(300, int), 2, 200, 0)
    assert r["p_value"] == pytest.approx(1 / 201)
    assert int(np.argmax(np.abs(r["diff"]))) == 1 and r["p_fwer"][1] == pytest.approx(1 / 201)
    assert r["per_class"][1]["n_this"] == 0 and "p_value" not in r["per_class"][1]
    same = permutation_test(a, a.copy(), np.zeros(300, int), np.zeros(300, int), 1, 50, 0)
    assert same["p_value"] == 1.0 and same["observed_l1"] == 0.0


def test_per_class_shift_p_values_are_holm_adjusted_over_the_classes():
    """A reader scans shift_by_class.csv's classes for one that shifted: with 10 unshifted classes a
    raw p below 0.05 comes in ~40% of runs; the Holm-adjusted p (family: the classes tested for one
    head and one pair of caches) holds any false one to 5%."""
    from laya_inspect.training.stats import holm

    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []
    rng = np.random.default_rng(1)
    draws = rng.random((5000, 10))  # a permutation p of unshifted rows is about uniform (test above)
    assert float((draws < 0.05).any(axis=1).mean()) > 0.35
    assert float(np.mean([min(holm(list(d))) < 0.05 for d in draws])) <= 0.055
    a = rng.dirichlet([2, 2, 2], size=600)
    b = rng.dirichlet([2, 2, 2], size=600)
    pa, pb = np.repeat(np.arange(6), 100), np.repeat(np.arange(6), 100)
    b[pb == 2, 1] += 0.3  # only class 2 shifts
    b /= b.sum(1, keepdims=True)
    pb[pb == 5] = 4  # class 5: no rows in the other cache, not tested, not in the family
    r = permutation_test(a, b, pa, pb, 6, 200, 0)
    tested = [c for c in r["per_class"] if "p_value" in c]
    assert len(tested) == 5 and "p_holm" not in r["per_class"][5]
    assert [c["p_holm"] for c in tested] == pytest.approx(holm([c["p_value"] for c in tested]))
    assert r["per_class"][2]["p_holm"] < 0.05 and "the 5 predicted classes" in r["class_family"]


def planted() -> LayaHead:
    """Identity adapters; the score of layer 2 is GELU(h₂[0]), layers 1 and 3 score 0: α moves only
    with layer 2's first feature."""
    head = LayaHead([2, 2, 2], 2, d_star=2, tau=1.0, score_width=2)
    with torch.no_grad():
        for p in head.parameters():
            p.zero_()
        for g in head.adapters:
            g.weight.copy_(torch.eye(2))
        head.scorer[0].weight[0, 2] = 1.0  # [z₁; z₂; z₃] → z₂[0]
        head.scorer[2].weight[1, 0] = 1.0
        head.classifier.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
    return head.eval()


@pytest.fixture(scope="module")
def shift_caches(tmp_path_factory) -> tuple[Path, Path, Path, Path]:
    """The cache, a copy whose layer 2 is shifted, and a copy whose layer 3 is shifted; the head."""
    root = tmp_path_factory.mktemp("shift")
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 300), ("test", 300)):
        feats = [rng.normal(size=(n, 2)).astype(np.float32) for _ in range(3)]
        splits[name] = (feats, (feats[0][:, 0] + feats[1][:, 0] < 0).astype(np.int64))
    names = ["l1", "l2", "l3"]
    base = write_cache(root / "base.h5", splits, layer_names=names)
    copies = []
    for layer in (1, 2):
        moved = {s: ([f + (1.5 if i == layer else 0.0) for i, f in enumerate(fs)], y) for s, (fs, y) in splits.items()}
        copies.append(write_cache(root / f"moved{layer + 1}.h5", moved, layer_names=names, data_spec=f"moved{layer}"))
    with FeatureStore(base) as store:
        head_dir = save_head(root / "head", planted(), meta=cache_identity(store))
    return base, copies[0], copies[1], head_dir


def test_a_copy_that_changes_one_layer_moves_alpha_on_that_layer(shift_caches, tmp_path):
    base, moved2, moved3, head_dir = shift_caches
    config = DiagnoseConfig(permutations=200, n_boot=100, device="cpu", plots=False)
    with FeatureStore(base) as store, FeatureStore(moved2) as other:  # the heads as an iterator: read once
        s = diagnose_heads(iter([head_dir]), store, config, out_dir=tmp_path / "a", against=other).summary
    assert len(s["heads"]) == 1
    perm = s["shift"]["heads"][0]["permutation"]
    assert int(np.argmax(np.abs(perm["diff"]))) == 1 and perm["diff"][1] < 0  # α₂ rises on the copy
    assert perm["p_value"] == pytest.approx(1 / 201) and perm["p_fwer"][1] == pytest.approx(1 / 201)
    assert s["shift"]["pooled"]["detect_auroc"]["alpha_divergence"]["mean"] > 0.7
    with open(tmp_path / "a" / "shift_by_class.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(float(r["class_p_holm"]) >= float(r["class_p_value"]) for r in rows)

    with FeatureStore(base) as store, FeatureStore(moved3) as other:
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "b", against=other).summary
    perm = s["shift"]["heads"][0]["permutation"]
    assert perm["diff"] == [0.0, 0.0, 0.0] and perm["p_value"] == 1.0  # the scorer never reads layer 3
    assert s["shift"]["pooled"]["detect_auroc"]["alpha_entropy"]["mean"] == 0.5  # the same α row for row
    # p = 1 once read "α profiles of the two caches differ: permutation p = 1"
    assert s["shift"]["profiles"].startswith("no detectable difference")
    assert not any("profiles of the two caches: differ" in line for line in s["verdict"])


def test_shift_detection_is_not_read_on_a_handful_of_rows(shift_caches, tmp_path):
    """QA: --against a cache of 2 test rows of the same data said "shift detection by alpha_entropy
    beats msp: +0.5150, 95% CI [+0.3762, +0.6508]"; below 20 rows nothing is read from the AUROCs."""
    base, moved2, _, head_dir = shift_caches
    with FeatureStore(moved2) as store:
        two = {s: ([h[:2] for h in store.layers(s)], store.labels(s)[:2]) for s in ("train", "test")}
    tiny = write_cache(tmp_path / "tiny.h5", two, layer_names=["l1", "l2", "l3"], data_spec="moved1")
    config = DiagnoseConfig(permutations=50, n_boot=100, device="cpu", plots=False)
    with FeatureStore(base) as store, FeatureStore(tiny) as other:
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "a", against=other).summary
    assert s["shift"]["heads"][0]["n_other"] == 2 and s["shift"]["pooled"]["detect_diff"]  # kept in the summary
    said = [line for line in s["verdict"] if "shift detection" in line]
    assert said == [
        "shift detection not read: a cache gives 2 test rows (fewer than 20), and AUROCs and their bootstrap "
        "intervals over so few rows say nothing; the numbers are kept in summary.json"
    ]
    from laya_inspect.report.reading import diagnose_reading  # report.html reads the same

    (page,) = [line for line in diagnose_reading(s).lead if line.startswith("Telling")]
    assert "shift detection not read: a cache gives 2 test rows" in page and "beats" not in page
    from laya_inspect.report.beyond import diagnose_sections  # and its shift table draws no verdict either

    (table,) = [t for sec in diagnose_sections(s) for t in sec.tables if t.id == "diagnose-shift"]
    cells = [str(row[3]) for row in table.rows if row[0] != "msp"]
    assert cells and all("too few rows" in c and "better" not in c and "worse" not in c for c in cells), cells
    assert "shift detection not read: a cache gives 2 test rows" in table.caption


def test_the_accuracy_on_a_cache_of_other_classes_is_not_computed(shift_caches, tmp_path):
    """QA: --against a digits cache with a Fashion-MNIST head said "accuracy 0.8233 here, 0.0417 on the
    other cache": the head's class indices read against another dataset's labels."""
    base, moved2, _, head_dir = shift_caches
    with FeatureStore(moved2) as store:
        splits = {s: (store.layers(s), store.labels(s)) for s in ("train", "test")}
    other = write_cache(tmp_path / "o.h5", splits, layer_names=["l1", "l2", "l3"], class_names=["cat", "dog"])
    config = DiagnoseConfig(permutations=50, n_boot=50, device="cpu", plots=False)
    with FeatureStore(base) as store, FeatureStore(other) as against:
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "a", against=against).summary
    first = s["shift"]["heads"][0]
    assert first["accuracy_other"] is None and 0 <= first["accuracy_this"] <= 1
    from laya_inspect.report.beyond import diagnose_sections

    (caption,) = [t.caption for sec in diagnose_sections(s) for t in sec.tables if t.id == "diagnose-shift-layers"]
    assert "not computed (other classes) on the other cache" in caption
    (said,) = [w for w in s["warnings"] if "other classes" in w]
    assert "cat, dog against 0, 1" in said and "accuracy on its rows is not computed" in said
    with FeatureStore(base) as store, FeatureStore(moved2) as against:  # the same classes: computed
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "b", against=against).summary
    assert isinstance(s["shift"]["heads"][0]["accuracy_other"], float)
    assert not any("other classes" in w for w in s["warnings"])


def test_heads_that_tell_the_caches_apart_in_opposite_directions_are_not_read_as_chance():
    """QA: α-entropy's shift AUROC was 0.386, 0.780 and 0.454 over three seeds, every interval off 0.5;
    pooled over heads it held 0.5 and was read "not shown to tell the caches apart better than chance"."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict

    def auroc(mean, lo, hi):
        return {"mean": mean, "ci_low": lo, "ci_high": hi}

    per_head = [(0.386, 0.359, 0.409), (0.780, 0.757, 0.800), (0.454, 0.429, 0.479)]
    rows = {"n_this": 1000, "n_other": 500, "permutation": {"p_value": 0.01}}
    heads = [{"detect_auroc": {"msp": auroc(0.6, 0.58, 0.62), "alpha_entropy": auroc(*a)}, **rows} for a in per_head]
    pooled = {
        "detect_auroc": {"msp": auroc(0.6, 0.58, 0.62), "alpha_entropy": auroc(0.54, 0.0, 1.0)},
        "detect_diff": {"alpha_entropy − msp": auroc(-0.06, -0.6, 0.5)},
    }
    s = {
        "errors": {"auroc": {}, "diff_vs_msp": {}},
        "heads": [{"auroc": {}}] * 3,
        "shift": {"heads": heads, "pooled": pooled, "profiles": "differ"},
    }
    (line,) = [v for v in _verdict(s) if v.startswith("no detectable") or "shift detection by" in v]
    assert "not shown to tell the caches apart" not in line
    assert line.endswith(
        "; alpha_entropy: each of the 3 heads tells the caches apart on its own rows, but in opposite directions "
        "(AUROC above 0.5 for 1, below for 2): which rows it scores higher changes from seed to seed"
    )
    heads[1]["detect_auroc"]["alpha_entropy"] = auroc(0.52, 0.48, 0.56)  # one head's own interval holds 0.5
    (line,) = [v for v in _verdict(s) if "shift detection by" in v]
    assert line.endswith(
        "; alpha_entropy is not shown to tell the caches apart better than chance (its interval holds 0.5)"
    )


def test_the_verdict_says_how_many_classes_shift_after_holm():
    """shift_by_class.csv held Holm-adjusted per-class p-values, but no printed sentence read them: a
    reader scanned the raw p of 10 unshifted classes and met one below 0.05 in about 40% of runs. The
    verdict now counts the classes whose adjusted p is below 0.05 (0.05/m over m heads, as "differ for
    some heads" counts heads)."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict

    def perm(p_holm):
        return {"p_value": 0.01, "per_class": [{"class": 0, "n_this": 1}, *({"p_holm": p} for p in p_holm)]}

    def read(*perms):
        heads = [{"permutation": p, "n_this": 300, "n_other": 300, "detect_auroc": {}} for p in perms]
        s = {
            "errors": {"auroc": {}, "diff_vs_msp": {}},
            "heads": [{"auroc": {}, "head_dir": f"/runs/fit/laya/seed_{i}"} for i in range(len(perms))],
            "shift": {"heads": heads, "pooled": {"detect_auroc": {}, "detect_diff": {}}, "profiles": "differ"},
        }
        (line,) = [v for v in _verdict(s) if v.startswith("predicted classes")]
        return line

    assert read(perm([0.001, 0.04, 0.2])) == (
        "predicted classes whose α profile shifted: 2 of the 3 tested (Holm-adjusted p < 0.05, "
        "Holm over the classes; shift_by_class.csv)"
    )
    assert read(perm([0.001, 0.04, 0.2]), perm([0.3, 0.5, 0.9])) == (
        "predicted classes whose α profile shifted: 1 of the 3 tested for laya/seed_0, 0 of the 3 tested for "
        "laya/seed_1 (Holm-adjusted p < 0.025, Holm over each head's classes, 0.05 over the 2 heads, Bonferroni; "
        "shift_by_class.csv)"
    )
    # a head whose classes were all too few to test says so, not "0 of the 0 tested"
    assert read(perm([0.001, 0.04, 0.2]), {"p_value": 0.5, "per_class": [{"class": 0}]}).startswith(
        "predicted classes whose α profile shifted: 1 of the 3 tested for laya/seed_0, no class tested for "
        "laya/seed_1 ("
    )
    heads = [{"permutation": {"p_value": 0.5, "per_class": [{"class": 0}]}, "n_this": 300, "n_other": 300}]
    s = {
        "errors": {"auroc": {}, "diff_vs_msp": {}},
        "heads": [{"auroc": {}}],
        "shift": {
            "heads": heads,
            "pooled": {"detect_auroc": {}, "detect_diff": {}},
            "profiles": "no detectable difference",
        },
    }
    assert not [v for v in _verdict(s) if v.startswith("predicted classes")]  # no class tested: nothing said


def test_profiles_of_unshifted_caches_rarely_read_as_differing_for_some_heads():
    """QA: "α profiles of the two caches: differ for some heads only (p < 0.05 for 1 of 3)" was read
    at 0.05 per head: with nothing shifted, 3 independent heads gave it in 14% of runs. "Some heads"
    is a claim about any one of the m heads, so a head counts only below 0.05/m; "differ" for every
    head still needs each p below 0.05. Under the null a permutation p is uniform: the simulation
    draws it so, and checks that through the command's own permutation test once."""
    from laya_inspect.beyond.diagnose import profiles_verdict
    from laya_inspect.beyond.scoring import permutation_test

    rng = np.random.default_rng(0)
    runs = 20_000
    said = [profiles_verdict(list(rng.random(3))) for _ in range(runs)]
    wrong = sum(not s.startswith("no detectable difference") for s in said) / runs
    assert wrong <= 0.055, wrong
    at_05 = sum(any(v < 0.05 for v in rng.random(3)) for _ in range(runs)) / runs
    assert at_05 >= 0.13  # the rule before, on the same kind of draws
    p = [
        permutation_test(
            rng.dirichlet(np.ones(4), 150), rng.dirichlet(np.ones(4), 150), *[np.zeros(150, int)] * 2, 1, 200, t
        )["p_value"]
        for t in range(40)
    ]
    assert 0.2 < float(np.mean(p)) < 0.8  # the permutation p of unshifted rows is about uniform
    said = profiles_verdict([0.02, 0.5, 0.5])
    assert said.startswith("no detectable difference (p ≥ 0.0167 for every head, 0.05 over")
    assert profiles_verdict([0.01, 0.5, 0.5]).startswith("differ for some heads only (p < 0.0167 for 1 of 3")
    assert profiles_verdict([0.04, 0.03, 0.02]).startswith("differ (p < 0.05 for every head)")
    assert profiles_verdict([0.3]) == (
        "no detectable difference (p ≥ 0.05 for this fitted head: one seed, a verdict on this head, not on the method)"
    )


def test_the_verdicts_follow_the_evidence():
    """A difference of 1e-16 (identical scores up to rounding) was "beats"; an undefined AUROC (no
    errors in the test rows) gave four "undefined" lines and no reason; a p-value says "differ" only
    below 0.05 for every head."""
    from laya_inspect.beyond.common import verdict
    from laya_inspect.beyond.diagnose import profiles_verdict

    rounding = {"mean": 1.1e-16, "ci_low": 1.1e-16, "ci_high": 1.1e-16}
    assert verdict(rounding, what="a", baseline="b").startswith("no detectable difference")
    assert verdict({"mean": 0.01, "ci_low": 0.002, "ci_high": 0.02}, what="a", baseline="b").startswith("a beats b")
    rng = np.random.default_rng(0)
    held_y = rng.random(200) < 0.3
    scores = {k: rng.random(200) for k in ("msp", "alpha_entropy", "alpha_divergence")}
    d = detection(scores, held_y, scores, np.zeros(200, bool), n_boot=50, seed=0)
    assert d["undefined"] and all(a == {"mean": None, "ci_low": None, "ci_high": None} for a in d["auroc"].values())
    assert profiles_verdict([0.001, 0.01]).startswith("differ (")
    assert profiles_verdict([0.001, 0.4]).startswith("differ for some heads only")
    assert profiles_verdict([1.0]).startswith("no detectable difference")


def test_error_detection_is_read_against_chance_too():
    """QA: α-entropy's AUROC 0.554 [0.432, 0.677] (and 0.396 on a convnet) was only said to be worse
    than msp; nothing said it is not shown to tell errors from correct predictions better than chance."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict

    def auroc(mean, lo, hi):
        return {"mean": mean, "ci_low": lo, "ci_high": hi}

    errors = {
        "auroc": {"msp": auroc(0.90, 0.88, 0.92), "alpha_entropy": auroc(0.554, 0.432, 0.677)},
        "diff_vs_msp": {"alpha_entropy − msp": auroc(-0.35, -0.47, -0.22)},
    }
    one = [{"auroc": {}}]
    _, line = _verdict({"errors": errors, "heads": one})  # under "no verdict: one seed"
    assert "0.5 is chance" in line
    # one head's interval runs over its test rows: a reading of that fitted head, and the line says so
    assert line.endswith(
        "; alpha_entropy is not shown to tell errors and correct predictions apart better than chance"
        " on this fitted head's rows (its interval holds 0.5)"
    )
    errors["auroc"]["alpha_entropy"] = auroc(0.396, 0.30, 0.48)
    _, below = _verdict({"errors": errors, "heads": one})
    assert below.endswith(
        "; alpha_entropy below chance on this fitted head's rows (the whole AUROC interval under 0.5)"
    )
    errors["auroc"]["alpha_entropy"] = auroc(0.80, 0.70, 0.90)
    _, fine = _verdict({"errors": errors, "heads": one})
    assert "chance)" in fine and "better than chance" not in fine and "below chance" not in fine


def test_an_interval_over_few_heads_that_holds_chance_is_not_read_as_chance():
    """QA (MobileNetV2, 3 seeds): α's AUROC 0.614 [0.493, 0.735] over heads (t, 2 degrees of freedom)
    was said to tell errors apart "no better than chance", though each head's own interval over its
    test rows lay above 0.5 (seed 0: [0.580, 0.638])."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict

    def auroc(mean, lo, hi):
        return {"mean": mean, "ci_low": lo, "ci_high": hi}

    errors = {
        "auroc": {"msp": auroc(0.79, 0.78, 0.80), "alpha": auroc(0.614, 0.493, 0.735)},
        "diff_vs_msp": {"alpha − msp": auroc(-0.18, -0.30, -0.06)},
    }
    heads = [{"auroc": {"alpha": auroc(m, m - 0.03, m + 0.03)}} for m in (0.609, 0.56, 0.67)]
    (line,) = _verdict({"errors": errors, "heads": heads})
    assert "not shown" not in line and "no better than chance" not in line
    assert line.endswith(
        "; alpha: above chance on each of the 3 heads' own rows, but the interval over heads holds 0.5"
        " (the heads differ too much to pin it down)"
    )
    heads[1]["auroc"]["alpha"] = auroc(0.52, 0.46, 0.58)  # one head's own interval holds 0.5
    (line,) = _verdict({"errors": errors, "heads": heads})
    assert line.endswith(
        "; alpha is not shown to tell errors and correct predictions apart better than chance (its interval holds 0.5)"
    )


def test_a_bound_within_resampling_error_of_chance_is_drawn_again():
    """The single-head AUROC interval's side of ½ followed the Monte-Carlo draw: on these rows its lower
    bound was 0.504 with 1,000 resamples (above chance) and 0.499 with 2,000 (not shown above)."""
    from laya_inspect.beyond.scoring import bootstrap_auc, settled_aucs

    rng = np.random.default_rng(64)
    y = rng.random(120) < 0.3
    s = rng.normal(size=120) + 0.35 * y
    old = [bootstrap_auc(y, s, n_boot=b, seed=0)["ci_low"] > 0.5 for b in (1000, 2000)]
    assert old == [True, False]  # the draw decided the verdict
    (a, drawn_a), (b, drawn_b) = (settled_aucs(y, {"msp": s}, n_boot=n, seed=0) for n in (1000, 2000))
    assert drawn_a > 1000 and drawn_b > 2000
    assert (a["msp"]["ci_low"] > 0.5) == (b["msp"]["ci_low"] > 0.5)
    assert len(a["msp"]["values"]) == drawn_a
    clear = rng.normal(size=120) + 3.0 * y  # far from chance: as many resamples as asked
    assert settled_aucs(y, {"msp": clear}, n_boot=1000, seed=0)[1] == 1000
    assert settled_aucs(y, {"msp": s}, n_boot=0, seed=0)[1] == 0
    near = clear + 0.3 * np.random.default_rng(0).normal(size=120)  # AUROC 0.011 under msp's: near 0
    paired = settled_aucs(y, {"msp": clear, "alpha": near}, n_boot=200, seed=0)
    assert paired[1] > 200  # α − msp's interval about 0: drawn again, on the same rows for both
    assert len(paired[0]["msp"]["values"]) == len(paired[0]["alpha"]["values"]) == paired[1]
    # several heads: their verdict is a t-interval over heads, so no head's rows are drawn again (review)
    assert settled_aucs(y, {"msp": s}, n_boot=1000, seed=0, settle=False)[1] == 1000


def test_report_html_reads_diagnose_against_chance_as_the_terminal_does():
    """report.html's diagnose page said α is worse than msp, never that α is not shown above chance."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict
    from laya_inspect.report.reading import diagnose_reading

    def auroc(mean, lo, hi):
        return {"mean": mean, "ci_low": lo, "ci_high": hi}

    errors = {
        "interval": "bootstrap over test rows",
        "auroc": {"msp": auroc(0.90, 0.88, 0.92), "alpha_entropy": auroc(0.554, 0.432, 0.677)},
        "diff_vs_msp": {"alpha_entropy − msp": auroc(-0.35, -0.47, -0.22)},
    }
    head = {"auroc": {}, "head_dir": "h", "test_accuracy": 0.9, "n_errors": 100, "n_test": 1000}
    s = {"errors": errors, "heads": [head]}
    terminal = " ".join(_verdict(s))
    text = " ".join(diagnose_reading(s).lead)
    said = "alpha_entropy is not shown to tell errors and correct predictions apart better than chance"
    assert said in terminal and said in text
    errors["auroc"]["alpha_entropy"] = auroc(0.80, 0.70, 0.90)
    assert "chance" not in " ".join(diagnose_reading(s).lead)


def test_a_difference_from_msp_that_is_undefined_is_not_counted_in_the_family():
    """docs/METHOD.md, "Families of comparisons": a comparison that draws no verdict is not counted.
    With one head a score whose AUROC is undefined (a NaN value) still made the family 2 of the 2
    scores, drawing the defined one at 97.5% instead of 95%; over several heads it was left out."""
    rng = np.random.default_rng(0)
    y = rng.random(200) < 0.3
    msp, entropy, divergence = (rng.normal(size=200) + y for _ in range(3))
    broken = divergence.copy()
    broken[0] = np.nan
    scores = {"msp": msp, "alpha_entropy": entropy, "alpha_divergence": broken}
    read = versus_msp(y, scores, n_boot=200, seed=0, settle=False, of="scores compared with msp")
    diffs = read["diff_vs_msp"]
    assert diffs["alpha_divergence − msp"]["mean"] is None and diffs["alpha_entropy − msp"]["mean"] is not None
    assert read["family"]["size"] == 1
    assert diffs["alpha_entropy − msp"]["confidence"] == pytest.approx(0.95)
    both = versus_msp(y, {**scores, "alpha_divergence": divergence}, n_boot=200, seed=0, settle=False, of="x")
    assert both["family"]["size"] == 2  # both defined: both counted, as before
    assert both["diff_vs_msp"]["alpha_entropy − msp"]["confidence"] == pytest.approx(0.975)


def test_no_verdict_against_msp_is_read_over_a_handful_of_errors():
    """QA: 95/5 data whose test rows held 1 error printed "alpha_entropy is worse than msp: −0.378, 95% CI
    [−0.674, −0.101]": a bootstrap over rows with one error says nothing (every resample holds it 0, 1,
    2… times). The terminal, the reading and report.html say why no verdict is drawn; the numbers stay."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict
    from laya_inspect.report.beyond import diagnose_sections
    from laya_inspect.report.reading import diagnose_reading

    def est(mean, lo, hi):
        return {"mean": mean, "ci_low": lo, "ci_high": hi}

    errors = {
        "interval": "bootstrap over test rows",
        "auroc": {"msp": est(0.95, 0.90, 0.99), "alpha_entropy": est(0.57, 0.30, 0.85)},
        "aupr": {"msp": est(0.3, None, None), "alpha_entropy": est(0.01, None, None)},
        "diff_vs_msp": {"alpha_entropy − msp": est(-0.378, -0.674, -0.101)},
    }
    for n_errors, n_test in ((1, 300), (299, 300)):  # one error, or one correct row
        head = {"auroc": {}, "head_dir": "h", "test_accuracy": 1 - n_errors / n_test, "n_errors": n_errors}
        s = {"errors": errors, "heads": [{**head, "n_test": n_test, "aupr_baseline": 0.0}], "scores": {}}
        (line,) = _verdict(s)
        assert "not read against msp: too few rows" in line and "worse" not in line, line
        lead = " ".join(diagnose_reading(s).lead)
        assert "too few rows" in lead and "worse" not in lead, lead
        table = diagnose_sections(s)[0].tables[0]
        assert "too few rows" in str(table.rows[1]) and "worse" not in str(table.rows[1])
        assert "too few rows" in table.caption
    many = {"auroc": {}, "head_dir": "h", "test_accuracy": 0.9, "n_errors": 100, "n_test": 1000}
    _, line = _verdict({"errors": errors, "heads": [many]})  # enough errors: read as before, one head's numbers
    assert line.startswith("no verdict: one seed: error detection by alpha_entropy − msp = -0.3780")
    (line,) = _verdict({"errors": errors, "heads": [many, many]})  # over seeds: a verdict
    assert "worse than msp" in line


def _two_heads() -> list[dict[str, Any]]:
    """Two heads' records as diagnose_sections reads them, for a pooled summary built by hand."""
    keys = {"n_errors": 50, "n_test": 360, "test_accuracy": 0.86, "auroc": {}, "aupr_baseline": 0.14}
    return [{"head_dir": f"h/seed_{i}", **keys} for i in range(2)]


def test_an_auroc_difference_over_two_heads_is_shown_inside_minus_one_to_one():
    """The seeds of the digits demo: error detection's alpha_entropy − msp −0.225 over 2 heads at 97.5% was
    printed "[−1.1901, +0.7405]" (t(0.9875, 1) ≈ 25 times the spread), past what a difference of two AUROCs
    can be. Its interval is now cut to [−1, 1] in summary.json, the terminal's line and report.html say so
    with the t bounds, and the verdict reads the same side of 0."""
    from laya_inspect.beyond import diagnose
    from laya_inspect.report.beyond import diagnose_sections

    aucs = [
        {"msp": 0.98429, "alpha_entropy": 0.79743, "alpha_divergence": 0.79429},
        {"msp": 0.94492, "alpha_entropy": 0.68220, "alpha_divergence": 0.80744},
    ]
    per = [
        {
            "auroc": {k: {"mean": v} for k, v in a.items()},
            "aupr": {k: {"mean": 0.5} for k in a},
            "diff_vs_msp": {f"{k} − msp": {"mean": a[k] - a["msp"]} for k in ("alpha_entropy", "alpha_divergence")},
        }
        for a in aucs
    ]
    pooled = diagnose._pool_errors(per, 1000)
    d = pooled["diff_vs_msp"]["alpha_entropy − msp"]
    assert d["confidence"] == pytest.approx(0.975) and d["mean"] == pytest.approx(-0.2248, abs=1e-4)
    assert (d["ci_low"], d["ci_high"]) == (-1.0, pytest.approx(0.7405, abs=1e-4))
    assert d["t_low"] == pytest.approx(-1.190, abs=1e-3) and d["clipped"] is True
    from laya_inspect.beyond.scoring import clipped_note

    note = clipped_note(pooled["diff_vs_msp"])
    assert note is not None and "cut to [−1, 1]" in note and "alpha_entropy − msp [-1.19, +0.74]" in note
    assert "over 2 heads" in note and "alpha_divergence" not in note  # [−0.83, +0.50]: inside, kept as it is
    assert "clipped" not in pooled["diff_vs_msp"]["alpha_divergence − msp"]
    s = {
        "errors": pooled,
        "heads": _two_heads(),
        "scores": {},
    }
    (table,) = [t for sec in diagnose_sections(s) for t in sec.tables if t.id == "diagnose-errors"]
    assert note in table.caption
    assert "[-1.000, +0.741]" in str(table.rows[1]) and "1.190" not in str(table.rows[1])
    line = diagnose.verdict_lines(s)[0]
    assert "no detectable difference" in line and "CI [-1.0000, +0.74" in line, line
    shifts = [
        {"detect_auroc": {"msp": {"mean": m}, "alpha_divergence": {"mean": a}, "alpha_entropy": {"mean": a}}}
        for m, a in ((0.55, 0.95), (0.60, 0.70))
    ]
    shift = diagnose._pool_shift(shifts, 1000)
    assert all(-1.0 <= d[k] <= 1.0 for d in shift["detect_diff"].values() for k in ("ci_low", "ci_high"))
    assert all(d.get("clipped") for d in shift["detect_diff"].values())
    narrow = diagnose._pool_errors([per[0], per[0], per[1], per[1], per[0]], 1000)["diff_vs_msp"]
    assert "clipped" not in narrow["alpha_entropy − msp"] and clipped_note(narrow) is None  # 5 heads: inside


def test_an_auroc_over_two_heads_is_kept_inside_0_1_in_summary_json_and_said_once():
    """summary.json held an AUROC's raw t bounds over 2 heads (msp 0.865 [−0.596, 2.326]) while the terminal
    and report.html showed them cut to [0, 1] without a word. The record now holds the cut interval with
    ``clipped`` and the t bounds, and one note says so with them: AUPR too, and shift detection's AUROC."""
    from laya_inspect.beyond import diagnose
    from laya_inspect.report.beyond import diagnose_sections

    aucs = [{"msp": 0.98, "alpha_entropy": 0.70}, {"msp": 0.75, "alpha_entropy": 0.72}]
    per = [
        {
            "auroc": {k: {"mean": v} for k, v in a.items()},
            "aupr": {"msp": {"mean": a["msp"] - 0.5}, "alpha_entropy": {"mean": 0.2}},
            "diff_vs_msp": {"alpha_entropy − msp": {"mean": a["alpha_entropy"] - a["msp"]}},
        }
        for a in aucs
    ]
    pooled = diagnose._pool_errors(per, 1000)
    msp = pooled["auroc"]["msp"]
    assert msp["mean"] == pytest.approx(0.865) and msp["clipped"] is True
    assert (msp["ci_low"], msp["ci_high"]) == (0.0, 1.0) and not msp["below_chance"]
    assert (msp["t_low"], msp["t_high"]) == (pytest.approx(-0.596, abs=1e-3), pytest.approx(2.326, abs=1e-3))
    assert pooled["aupr"]["msp"]["clipped"] and "clipped" not in pooled["auroc"]["alpha_entropy"]
    from laya_inspect.beyond.scoring import auroc_note

    note = auroc_note({"AUROC": pooled["auroc"], "AUPR": pooled["aupr"]})
    assert note is not None and "cut to [0, 1]" in note and "over 2 heads" in note
    assert f"msp AUROC [{msp['t_low']:+.2f}, {msp['t_high']:+.2f}]" in note and "msp AUPR [" in note
    assert "alpha_entropy AUROC" not in note
    s = {"errors": pooled, "heads": _two_heads(), "scores": {}}
    (table,) = [t for sec in diagnose_sections(s) for t in sec.tables if t.id == "diagnose-errors"]
    assert table.caption.count(note) == 1
    shift = diagnose._pool_shift(
        [
            {"detect_auroc": {"msp": {"mean": m}, "alpha_divergence": {"mean": a}, "alpha_entropy": {"mean": 0.5}}}
            for m, a in ((0.55, 0.99), (0.60, 0.60))
        ],
        1000,
    )
    assert shift["detect_auroc"]["alpha_divergence"]["ci_high"] == 1.0
    assert shift["detect_auroc"]["alpha_divergence"]["clipped"]
    narrow = diagnose._pool_errors([per[0], per[0], per[1], per[1], per[0]] * 4, 1000)
    assert auroc_note({"AUROC": narrow["auroc"], "AUPR": narrow["aupr"]}) is None  # 20 heads: inside


# -- the command ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits_heads(digits_cache, tmp_path_factory) -> tuple[Path, list[Path], Path]:
    """Two LAYA seeds on digits, and a noisy copy of the test rows' first layer."""
    root = tmp_path_factory.mktemp("diag")
    with FeatureStore(digits_cache) as store:
        dirs = [
            save_head(root / f"seed_{s}", fit_quickly("laya", store, seed=s), meta=cache_identity(store))
            for s in (0, 1)
        ]
        rng = np.random.default_rng(0)
        test = store.layers("test")
        test[0] = test[0] + rng.normal(0, 0.5, test[0].shape).astype(np.float32)
        noisy = write_cache(root / "noisy.h5", {"test": (test, store.labels("test"))}, data_spec="noisy")
    return digits_cache, dirs, noisy


def test_diagnose_command_on_digits(digits_heads, tmp_path):
    cache, dirs, noisy = digits_heads
    out = tmp_path / "dg"
    args = ["diagnose", *map(str, dirs), "--cache", str(cache), "--against", str(noisy), "--bootstrap", "50"]
    result = runner.invoke(app, [*args, "--permutations", "50", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    assert "misclassification detection" in result.output and "AUROC − msp" in result.output
    said = " ".join(result.output.split())  # the seed of the draws behind the intervals, read before them
    given = "settings given: bootstrap 50 (each head's own intervals, errors.csv) · 50 permutations · device cpu; "
    assert said.index(given + "left at their defaults: seed 0") < said.index("AUROC − msp")
    s = json.loads((out / "summary.json").read_text())
    # the AUPR column beside its reference, a random score's AUPR (the error rate), as report.html has it
    base = ", ".join(f"{h['aupr_baseline']:.3f}" for h in s["heads"])
    assert f"AUPR of a random score (the error rate): {base}" in " ".join(result.output.split())
    assert len(s["heads"]) == 2 and s["errors"]["interval"] == "t over heads"
    from laya_inspect.beyond.scoring import auroc_note

    for e in (*s["errors"]["auroc"].values(), *s["errors"]["aupr"].values()):  # inside [0, 1] in the file too
        assert 0.0 <= e["ci_low"] <= e["ci_high"] <= 1.0
    said = auroc_note({"AUROC": s["errors"]["auroc"], "AUPR": s["errors"]["aupr"]})
    assert said is None or said in " ".join(result.output.split())
    assert set(s["errors"]["auroc"]) == {"msp", "alpha_entropy", "alpha_divergence", "alpha", "msp+alpha"}
    for h in s["heads"]:
        assert 0.5 < h["auroc"]["msp"]["mean"] <= 1.0  # a trained head's confidence says something
    few = [h["held_out_errors"] for h in s["heads"] if h["held_out_errors"] < 10]
    assert any("held-out rows hold" in w for w in s["warnings"]) == bool(few)
    assert s["shift"]["pooled"]["interval"] == "t over heads" and len(s["shift"]["heads"]) == 2
    (classes,) = [v for v in s["verdict"] if v.startswith("predicted classes")]  # each head named, as report does
    assert all(f" for {d.parent.name}/{d.name}" in classes for d in dirs), classes
    for name in ("errors.csv", "shift_layers.csv", "shift_by_class.csv"):
        assert (out / name).is_file()
    for name in ("error_auroc", "shift_profiles", "shift_by_class"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 1000


def test_the_settings_line_of_one_head_states_a_given_bootstrap(digits_heads, tmp_path):
    """One head's AUROC intervals are bootstrapped: a given --bootstrap decides them, so the line does not
    say every setting was left at its default."""
    cache, dirs, _ = digits_heads
    args = ["diagnose", str(dirs[0]), "--cache", str(cache), "--bootstrap", "50", "--device", "cpu", "--no-plots"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "dg")], env=ENV)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    given = "settings given: bootstrap 50 · device cpu · --no-plots (no effect on the numbers); left at their "
    assert said.index(given + "defaults: seed 0") < said.index("AUROC − msp")


def test_the_settings_line_names_a_given_threads_and_no_plots_as_changing_no_number(digits_heads, tmp_path):
    """diagnose's line left out --threads and --no-plots when given, and read "all left at their
    defaults" over them; prune and early-exit name them, marked: diagnose does too, and `report DIR`
    restates the line."""
    cache, dirs, _ = digits_heads
    args = ["diagnose", str(dirs[0]), "--cache", str(cache), "--threads", "1", "--no-plots"]
    out = tmp_path / "dg"
    result = runner.invoke(app, [*args, "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    line = settings_said(result.output)
    assert line == (
        "settings given: --threads 1 (no effect on the numbers) · --no-plots (no effect on the numbers); left "
        "at their defaults: seed 0 · bootstrap 1,000 · train split train · test split test · device cpu (auto)"
    )
    report = runner.invoke(app, ["report", str(out)], env=ENV)
    assert report.exit_code == 0, report.output
    assert settings_said(report.output) == line


def test_the_terminal_of_one_head_says_it_reads_one_fitted_seed(digits_heads, tmp_path):
    """QA: report.html said that one head's scores read one fitted seed (intervals over test rows leave
    the seed out), the terminal did not: it says so, before the numbers, and not over several heads."""
    from laya_inspect.beyond.scoring import one_seed_said

    cache, dirs, _ = digits_heads
    args = ["diagnose", "--cache", str(cache), "--bootstrap", "50", "--device", "cpu", "--no-plots"]
    one = runner.invoke(app, [*args, str(dirs[0]), "--out", str(tmp_path / "one")], env=ENV)
    assert one.exit_code == 0, one.output
    said = " ".join(one.output.split())
    first = one_seed_said(json.loads((tmp_path / "one" / "summary.json").read_text()))
    assert first and str(dirs[0]) in first
    assert said.index(first) < said.index("error detection by")  # before the numbers it reads, not under them
    both = runner.invoke(app, [*args, *map(str, dirs), "--out", str(tmp_path / "both")], env=ENV)
    assert both.exit_code == 0, both.output
    assert "one seed" not in " ".join(both.output.split())
    # `report DIR` restates the verdict lines the command printed, that one first among them
    again = runner.invoke(app, ["report", str(tmp_path / "one")], env=ENV)
    assert again.exit_code == 0, again.output
    assert first in " ".join(again.output.split())
    again = runner.invoke(app, ["report", str(tmp_path / "both")], env=ENV)
    assert again.exit_code == 0 and "one seed" not in " ".join(again.output.split()), again.output


def test_one_head_gives_no_verdict_against_msp_up_front_and_keeps_the_numbers(digits_heads, tmp_path):
    """One head's diagnose printed "error detection by alpha beats msp …" from a bootstrap over its test
    rows, then a note that such a verdict "is not a verdict". It says "no verdict: one seed" first, in the
    terminal, summary.json, the reading and the table, and keeps every difference in summary.json."""
    cache, dirs, _ = digits_heads
    out = tmp_path / "one"
    args = ["diagnose", str(dirs[0]), "--cache", str(cache), "--bootstrap", "50", "--device", "cpu", "--no-plots"]
    result = runner.invoke(app, [*args, "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    assert s["heads"][0]["n_errors"] >= 20  # enough errors that the differences are read at all
    assert s["verdict"][0].startswith("no verdict: one seed: "), s["verdict"]
    diffs = [line for line in s["verdict"] if line.startswith("no verdict: one seed: error detection by ")]
    assert len(diffs) == len(s["errors"]["diff_vs_msp"]) == 4
    for key, d in s["errors"]["diff_vs_msp"].items():  # the numbers are kept, said without a verdict
        assert d["ci_low"] is not None and any(key in line and f"{d['mean']:+.4f}" in line for line in diffs)
    said = " ".join(result.output.split())
    assert not any(w in said for w in (" beats msp", "worse than msp", "no detectable difference between"))
    assert said.index("no verdict: one seed") < said.index("error detection by")
    page = page_said(out / "report.html")
    assert "No verdict: one seed" in page and "no verdict: one seed" in page  # the reading and the table
    assert not any(w in page for w in ("α better", "α worse", "not distinguishable", "beats msp"))


def test_one_head_reads_its_alpha_profiles_as_a_verdict_on_that_head(digits_heads, tmp_path):
    """One head's diagnose opens "no verdict: one seed", yet its --against line read "α profiles of the
    two caches: differ (…)" as a verdict on the method. The permutation runs over that head's rows: the
    line and report.html's reading say it reads this fitted head; over two heads they do not."""
    cache, dirs, noisy = digits_heads
    args = ["diagnose", "--cache", str(cache), "--against", str(noisy), "--bootstrap", "50", "--permutations", "50"]
    for heads, name in (([dirs[0]], "one"), (dirs, "both")):
        out = tmp_path / name
        result = runner.invoke(app, [*args, *map(str, heads), "--device", "cpu", "--no-plots", "--out", str(out)])
        assert result.exit_code == 0, result.output
        (line,) = [v for v in json.loads((out / "summary.json").read_text())["verdict"] if v.startswith("α profiles")]
        assert ("for this fitted head: one seed, a verdict on this head" in line) == (name == "one"), line
        assert line in " ".join(result.output.split())
        assert ("for this fitted head" in page_said(out / "report.html")) == (name == "one")  # the reading too


def test_one_head_says_it_reads_one_fitted_seed_only_where_a_verdict_was_drawn(digits_heads, tmp_path):
    """QA: one head's diagnose said "the verdicts above read one fitted seed" under "too few rows" and
    under "no interval, so no verdict" (--bootstrap 0), where no verdict was drawn; the terminal,
    `report DIR` and report.html's reading say it only beside a verdict."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict
    from laya_inspect.cli.beyond import verdict_lines
    from laya_inspect.report.reading import diagnose_reading

    cache, dirs, _ = digits_heads
    args = ["diagnose", str(dirs[0]), "--cache", str(cache), "--device", "cpu", "--no-plots"]
    out = tmp_path / "b0"
    result = runner.invoke(app, [*args, "--bootstrap", "0", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "no interval, so no verdict" in said and "one seed" not in said
    assert "bootstrap 0 (no intervals drawn: AUROCs as points only)" in settings_said(result.output)
    again = runner.invoke(app, ["report", str(out)], env=ENV)
    assert again.exit_code == 0 and "one seed" not in " ".join(again.output.split()), again.output
    drawn = json.loads((out.parent / "b0" / "summary.json").read_text())
    assert not any("one seed" in line for line in diagnose_reading(drawn).lead)
    # the same run with one error among 300 test rows: "too few rows", no verdict and no note
    few = {**drawn, "heads": [{**drawn["heads"][0], "n_errors": 1, "n_test": 300}]}
    few["verdict"] = _verdict(few)
    for d in drawn["errors"]["diff_vs_msp"].values():
        d.update(ci_low=d["mean"] - 0.1, ci_high=d["mean"] + 0.1)  # an interval: the note is said
    drawn["verdict"] = _verdict(drawn)
    assert verdict_lines(drawn)[0].startswith("no verdict: one seed: ")
    assert diagnose_reading(drawn).lead[0].startswith("No verdict: one seed: ")
    assert any("too few rows" in line for line in verdict_lines(few))
    assert not any("one seed" in line for line in verdict_lines(few) + diagnose_reading(few).lead)


def test_the_settings_line_of_several_heads_says_where_the_seed_draws_and_report_restates_it(digits_heads, tmp_path):
    """Over several heads the intervals shown are t over the heads: the seed and --bootstrap draw only
    each head's own intervals (errors.csv), the line says so, and with --bootstrap 0 and no --against
    the seed draws nothing and is not stated. `report DIR` and report.html restate the line."""
    cache, dirs, _ = digits_heads
    args = ["diagnose", *map(str, dirs), "--cache", str(cache), "--device", "cpu", "--no-plots"]
    out = tmp_path / "dg"
    result = runner.invoke(app, [*args, "--bootstrap", "50", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    line = settings_said(result.output)
    assert line == (
        "settings given: bootstrap 50 (each head's own intervals, errors.csv) · device cpu · --no-plots (no "
        "effect on the numbers); left at their defaults: seed 0 · train split train · test split test"
    )
    with open(out / "errors.csv") as f:  # the bootstrap's intervals, per head
        assert all(row["auroc_ci_low"] for row in csv.DictReader(f))
    report = runner.invoke(app, ["report", str(out), "--html"], env=ENV)
    assert report.exit_code == 0, report.output
    assert settings_said(report.output) == line
    assert line in page_said(out / "report.html")
    result = runner.invoke(app, [*args, "--bootstrap", "0", "--out", str(tmp_path / "none")], env=ENV)
    assert result.exit_code == 0, result.output
    assert "seed" not in settings_said(result.output)
    # --bootstrap 0 draws no head's own interval: the line says what it does, as errors.csv shows
    assert "bootstrap 0 (no head's own intervals: errors.csv holds points only" in settings_said(result.output)
    with open(tmp_path / "none" / "errors.csv") as f:
        assert not any(row["auroc_ci_low"] for row in csv.DictReader(f))


def test_diagnose_refuses_heads_it_would_pool_or_score_wrongly(digits_heads, tmp_path):
    """The same head twice pooled as two seeds that agree exactly (a zero-width interval); a laya and
    a scalarmix head pooled as seeds; the test split the heads were trained on scored as held out."""
    import shutil

    cache, dirs, _ = digits_heads
    head = str(dirs[0])

    def run(*args: str):
        return runner.invoke(app, ["diagnose", *args, "--cache", str(cache), "--out", str(tmp_path / "o")], env=ENV)

    twice = run(head, head)
    assert twice.exit_code == 1 and "is given twice; diagnose pools its heads as seeds" in twice.output
    shutil.copytree(head, tmp_path / "copy")
    assert "are the same head" in run(head, str(tmp_path / "copy")).output
    with FeatureStore(cache) as store:
        mix = save_head(
            tmp_path / "mix", build_head("scalarmix", store.widths, store.num_classes), meta=cache_identity(store)
        )
        split = {"train_split": "train", "test_split": "test"}
        trained = save_head(tmp_path / "tr", fit_quickly("laya", store), meta={**cache_identity(store), "split": split})
    kinds = run(head, str(mix))
    assert kinds.exit_code == 1 and "2 kinds (laya, scalarmix)" in kinds.output
    same = run(head, "--test-split", "train")
    assert same.exit_code == 1 and "--test-split must be another split than --train-split" in same.output
    own = run(str(trained), "--train-split", "test", "--test-split", "train")
    assert own.exit_code == 1 and "is the split" in own.output and "was trained on" in own.output
    assert not (tmp_path / "o").exists()


def test_heads_of_other_rows_of_the_same_features_are_refused_or_said(digits_cache, tmp_path):
    """A cache extracted again with another split --seed has the same features (fingerprint), and its
    test rows were training rows of the head: diagnose, prune and compare ran on it without a word."""
    first, other, reordered = other_rows_caches(digits_cache, tmp_path)
    with FeatureStore(first) as store:
        head = save_head(tmp_path / "h", fit_quickly("laya", store), meta=cache_identity(store))
        assert FeatureStore(other).fingerprint == store.fingerprint
    for command in (["diagnose"], ["prune", "--seeds", "1"]):
        r = runner.invoke(app, [*command, str(head), "--cache", str(other), "--out", str(tmp_path / "x")], env=ENV)
        assert r.exit_code == 1 and "the same features of other rows" in r.output and "--allow-other-cache" in r.output
    out = tmp_path / "ok"
    args = ["diagnose", str(head), "--cache", str(other), "--allow-other-cache", "--bootstrap", "20", "--no-plots"]
    r = runner.invoke(app, [*args, "--out", str(out)], env=ENV)
    assert r.exit_code == 0, r.output
    said = json.loads((out / "summary.json").read_text())["warnings"]
    assert any("the same features of other rows" in w and "--allow-other-cache" in w for w in said)
    for same in (first, reordered):  # its own cache, and the same rows with the splits in another order
        r = runner.invoke(
            app, ["diagnose", str(head), "--cache", str(same), "--out", str(tmp_path / same.stem)], env=ENV
        )
        assert r.exit_code == 0, r.output


def test_a_test_split_of_a_handful_of_rows_is_said(digits_cache, tmp_path):
    """A 15-row test split gave "0.9333 [0.9333, 0.9333]" in prune and early-exit with no word."""
    with FeatureStore(digits_cache) as store:
        few = {
            "train": (store.layers("train"), store.labels("train")),
            "test": (store.layers("test"), store.labels("test")),
        }
        few["test"] = ([h[:15] for h in few["test"][0]], few["test"][1][:15])
        head = fit_quickly("laya", store)
    cache = write_cache(tmp_path / "few.h5", few)
    with FeatureStore(cache) as store:
        head_dir = save_head(tmp_path / "h", head, meta=cache_identity(store))
    r = runner.invoke(app, ["diagnose", str(head_dir), "--cache", str(cache), "--out", str(tmp_path / "d")], env=ENV)
    assert r.exit_code == 0, r.output
    said = json.loads((tmp_path / "d" / "summary.json").read_text())["warnings"]
    assert any("the test split has 15 rows (fewer than 20)" in w for w in said), said


def test_diagnose_errors(digits_heads, shift_caches, tmp_path):
    cache, dirs, _ = digits_heads
    base, *_ = shift_caches
    head = str(dirs[0])
    other = runner.invoke(app, ["diagnose", head, "--cache", str(cache), "--against", str(base)], env=ENV)
    assert other.exit_code == 1 and "the shift needs a cache of the same layers" in other.output
    gone = runner.invoke(app, ["diagnose", head, "--cache", str(cache), "--against", str(tmp_path / "x.h5")], env=ENV)
    assert gone.exit_code == 1 and "no feature cache" in gone.output
    bad = runner.invoke(app, ["diagnose", head, "--cache", str(cache), "--permutations", "0"], env=ENV)
    assert bad.exit_code == 1 and "--permutations must be a whole number from 1 to 100,000, got 0" in bad.output
    (tmp_path / "file").write_text("x")
    clash = runner.invoke(app, ["diagnose", head, "--cache", str(cache), "--out", str(tmp_path / "file")], env=ENV)
    assert clash.exit_code == 1 and "is a file; give a folder" in clash.output


def test_the_terminal_shows_a_bounded_scores_interval_inside_0_1_as_report_html_does():
    """A t-interval over 2 heads once printed AUROC 0.8255 [-0.4500, 2.1010]; differences stay as computed."""
    from laya_inspect.cli.beyond import _ci

    wide = {"mean": 0.8255, "ci_low": -0.45, "ci_high": 2.101}
    assert _ci(wide) == "0.8255 [0.0000, 1.0000]"
    assert _ci({"mean": 0.6, "ci_low": 0.55, "ci_high": 0.65}) == "0.6000 [0.5500, 0.6500]"
    assert _ci({"mean": 0.3, "ci_low": -0.7, "ci_high": 1.3}, signed=True) == "+0.3000 [-0.7000, +1.3000]"
    assert _ci({"mean": 0.6, "ci_low": None, "ci_high": None}) == "0.6000" and _ci(None) == "—"


def test_a_fit_head_output_folder_is_read_as_compare_reads_it(digits_heads, tmp_path):
    """QA: `compare heads/` expands a fit-head output to its <head>/seed_<S>/ folders, while `diagnose
    heads/` (and prune, early-exit) said "not a head directory". diagnose now takes a fit-head output
    (its laya heads' seeds: the heads with α per input) or one head's seed folders; prune and
    early-exit read every laya seed of it (their own tests: test_prune.py, test_early_exit.py)."""
    import shutil

    cache, dirs, _ = digits_heads
    fit = tmp_path / "heads"
    for s, d in enumerate(dirs):
        shutil.copytree(d, fit / "laya" / f"seed_{s}")
    with FeatureStore(cache) as store:
        save_head(
            fit / "last" / "seed_0", build_head("last", store.widths, store.num_classes), meta=cache_identity(store)
        )
    out = tmp_path / "dg"
    args = ["diagnose", str(fit), "--cache", str(cache), "--bootstrap", "50", "--device", "cpu", "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    seeds = [str((fit / "laya" / f"seed_{i}").resolve()) for i in (0, 1)]
    assert [h["head_dir"] for h in s["heads"]] == seeds  # the laya seeds, in order; last left out
    from laya_inspect.beyond.common import weighted_head_dirs

    assert weighted_head_dirs([fit / "laya"]) == [fit / "laya" / "seed_0", fit / "laya" / "seed_1"]
    # compare's refusals: a folder that is neither; one with no laya head
    neither = runner.invoke(app, ["diagnose", str(tmp_path), "--cache", str(cache), "--out", str(tmp_path / "o")])
    assert neither.exit_code == 1 and "nor a fit-head output" in neither.output
    shutil.copytree(fit / "last", tmp_path / "nolaya" / "last")
    (tmp_path / "nolaya" / "concat").mkdir()
    shutil.copytree(fit / "last" / "seed_0", tmp_path / "nolaya" / "concat" / "seed_0")
    none = runner.invoke(app, ["diagnose", str(tmp_path / "nolaya"), "--cache", str(cache), "--out", str(out)])
    assert none.exit_code == 1 and "holds no laya head (concat, last)" in " ".join(none.output.split())


def test_an_out_inside_the_fit_head_output_read_is_written_beside_its_heads(digits_heads, tmp_path):
    """`diagnose HEADS --out HEADS/diag` (and compare's, prune's, early-exit's): a fit-head output is
    read only for its <head>/seed_<S>/ head directories, so an output beside them is never read as a
    head, and fit-head --force on HEADS refuses to delete it; only an --out that is or holds a head
    directory, or lies inside one, is refused. Before, diagnose HEADS/laya/seed_0 --out HEADS/diag was
    allowed and diagnose HEADS --out HEADS/diag refused, the same folder by another path."""
    import shutil

    cache, dirs, _ = digits_heads
    fit = tmp_path / "heads"
    for s, d in enumerate(dirs):
        shutil.copytree(d, fit / "laya" / f"seed_{s}")
    base = ["--cache", str(cache), "--bootstrap", "20", "--device", "cpu", "--out"]
    result = runner.invoke(app, ["diagnose", str(fit), *base, str(fit / "diag")], env=ENV)
    assert result.exit_code == 0, result.output
    again = runner.invoke(app, ["diagnose", str(fit), *base, str(tmp_path / "dg")], env=ENV)
    assert again.exit_code == 0, again.output
    seeds = [str((fit / "laya" / f"seed_{i}").resolve()) for i in (0, 1)]
    assert [h["head_dir"] for h in json.loads((tmp_path / "dg" / "summary.json").read_text())["heads"]] == seeds
    args = ["compare", str(fit), "--method", "alpha", "--no-plots", "--no-sanity", "--limit", "40", *base]
    assert runner.invoke(app, [*args, str(fit / "cmp")], env=ENV).exit_code == 0
    for out, said in ((fit, "holds this run's input"), (fit / "laya" / "seed_0" / "d", "lies inside this run's input")):
        refused = runner.invoke(app, ["diagnose", str(fit), *base, str(out), "--force"], env=ENV)
        assert refused.exit_code == 1 and said in refused.output, refused.output
    assert (fit / "diag" / "summary.json").is_file() and not (fit / "laya" / "seed_0" / "d").exists()


def test_the_verdicts_against_msp_name_their_family_level(shift_caches, tmp_path):
    """Every score against msp is one family (errors; shift apart): its differences are drawn at
    1 − 0.05/m and summary.json, the verdict lines, the reading and report.html say which level."""
    from laya_inspect.report.reading import diagnose_reading

    base, moved2, _, head_dir = shift_caches
    config = DiagnoseConfig(permutations=50, n_boot=200, device="cpu", plots=False)
    with FeatureStore(base) as store, FeatureStore(moved2) as other:
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "a", against=other).summary
    errors, shift = s["errors"], s["shift"]["pooled"]
    m = len(errors["diff_vs_msp"])
    assert errors["family"] == {"confidence": 1 - 0.05 / m, "size": m, "of": "scores compared with msp"}
    assert shift["family"]["size"] == 2 and shift["family"]["confidence"] == 0.975
    assert all(d["confidence"] == 1 - 0.05 / m for d in errors["diff_vs_msp"].values())
    said = [line for line in s["verdict"] if " msp" in line and "CI [" in line]
    assert said and all(f"{(1 - 0.05 / m) * 100:.3g}% CI" in line or "97.5% CI" in line for line in said)
    words = f"{(1 - 0.05 / m) * 100:.3g}% intervals (Bonferroni over the {m} scores compared with msp"
    assert words in " ".join(diagnose_reading(s).lead)
    page = (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    assert words in page and "97.5% intervals (Bonferroni over the 2 α scores compared with msp" in page


def test_a_cache_extracted_otherwise_is_said_beside_the_shift(shift_caches, tmp_path):
    """QA (MobileNetV2): `diagnose --against` a cache of the very same test images extracted with
    `--normalize none` said "α profiles of the two caches: differ (permutation p = 0.001)" with no word
    that the two caches were read through other input transforms: the shift was the extraction's."""
    base = shift_caches[0]
    resized = {"from": "per image", "to": [64, 64], "mode": "bilinear", "antialias": True, "fit": "stretch"}
    image = {"kind": "image", "scale": "uint8/255", "decode": "PIL", "resize": resized, "output": [3, 64, 64]}
    normalized = {"applied": True, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "from": "model"}
    bare = {"applied": False, "mean": None, "std": None, "from": "option", "why": "--normalize none"}
    with FeatureStore(base) as store:
        splits = {s: (store.layers(s), store.labels(s)) for s in ("train", "test")}
    ours, theirs = (
        write_cache(
            tmp_path / f"{name}.h5",
            splits,
            layer_names=["l1", "l2", "l3"],
            data_spec=f"imagefolder:{name}",
            extra_attrs={"transforms": {**image, "decode": f"PIL {name}", "normalize": norm}, "weights_sha256": sha},
        )
        for name, norm, sha in (("ours", normalized, "ab" * 32), ("theirs", bare, "cd" * 32))
    )
    config = DiagnoseConfig(permutations=50, n_boot=50, device="cpu", plots=False)
    with FeatureStore(ours) as store:
        head_dir = save_head(tmp_path / "head", planted(), meta=cache_identity(store))
    with FeatureStore(ours) as store, FeatureStore(theirs) as against:
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "a", against=against).summary
    said = [w for w in s["warnings"] if "extracted otherwise" in w]
    assert len(said) == 1, s["warnings"]
    assert "weights_sha256" in said[0] and "transforms.normalize.applied: true" in said[0]
    assert "transforms.decode" not in said[0] and "data_spec" not in said[0]  # the data's own, not the extraction's
    npz = {**image, "scale": "uint8/255", "resize": None, "normalize": normalized}  # arrays at 64×64 already
    arrays = write_cache(
        tmp_path / "arrays.h5", splits, layer_names=["l1", "l2", "l3"], data_spec="npz:x.npz",
        extra_attrs={"transforms": npz, "weights_sha256": "ab" * 32},
    )  # fmt: skip
    for n, (a, b) in enumerate([(ours, ours), (ours, arrays)]):  # the same extraction: nothing said
        with FeatureStore(a) as store, FeatureStore(b) as against:
            s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / f"b{n}", against=against).summary
        assert not [w for w in s["warnings"] if "extracted otherwise" in w], (a, b)


def test_report_html_says_how_many_classes_shifted_as_the_terminal_does(shift_caches, tmp_path):
    """QA: diagnose --against printed "predicted classes whose α profile shifted: …" on the terminal
    and in summary.json's verdict, but report.html's reading left it out (MobileNetV2 on CIFAR-10
    against a noised copy: 0, 3 and 3 shifted classes over three heads, said nowhere on the page)."""
    from laya_inspect.report.reading import diagnose_reading

    base, moved2, _, head_dir = shift_caches
    config = DiagnoseConfig(permutations=50, n_boot=50, device="cpu", plots=False)
    with FeatureStore(base) as store, FeatureStore(moved2) as other:
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "a", against=other).summary
    said = [line for line in s["verdict"] if line.startswith("predicted classes whose α profile shifted: ")]
    assert len(said) == 1
    assert f"P{said[0][1:]}." in " ".join(diagnose_reading(s).lead)
    assert html.escape(f"P{said[0][1:]}.", quote=False) in (tmp_path / "a" / "report.html").read_text(encoding="utf-8")


def test_the_reading_of_one_head_says_it_reads_one_fitted_seed():
    """diagnose of one head draws its intervals over test rows: "alpha_entropy does worse than msp" held
    for that fit of the head alone: the page says "no verdict: one seed" first and keeps the numbers."""
    from laya_inspect.report.reading import diagnose_reading

    errors = {
        "interval": "bootstrap over test rows",
        "auroc": {
            "msp": {"mean": 0.9, "ci_low": 0.88, "ci_high": 0.92},
            "alpha": {"mean": 0.7, "ci_low": 0.6, "ci_high": 0.8},
        },
        "diff_vs_msp": {"alpha − msp": {"mean": -0.2, "ci_low": -0.3, "ci_high": -0.1}},
    }
    head = {"auroc": {}, "head_dir": "heads/laya/seed_0", "test_accuracy": 0.9, "n_errors": 100, "n_test": 1000}
    s = {"errors": errors, "heads": [head]}
    lead = diagnose_reading(s).lead
    assert lead[0].startswith("No verdict: one seed: the differences from msp below read one fitted head")
    assert "heads/laya/seed_0" in lead[0] and "give diagnose the fit-head folder" in lead[0]
    assert "alpha 0.700 (− msp: -0.200 [-0.300, -0.100], no verdict: one seed)" in lead[1]
    assert "worse" not in " ".join(lead)
    s["heads"] = [head, {**head, "head_dir": "heads/laya/seed_1"}]  # seeds pooled: no such sentence
    assert not any("one seed" in line for line in diagnose_reading(s).lead)


def test_a_head_near_chance_has_its_verdicts_against_msp_withheld(digits_heads, tmp_path):
    """A head fitted to permuted labels errs on nearly every test row: "α beats msp" beside it would read
    as a detector to trust, so error and shift detection are not read (fit-head's near-chance rule), the
    numbers kept; the trained heads of the same cache are not flagged."""
    cache, trained, noisy = digits_heads
    with FeatureStore(cache) as store:
        permuted = np.random.default_rng(0).permutation(store.labels("train"))
        dirs = [
            save_head(
                tmp_path / f"seed_{s}",
                fit_quickly("laya", store, 60, seed=s, labels=permuted),
                meta=cache_identity(store),
            )
            for s in (0, 1)
        ]
    out = tmp_path / "dg"
    args = ["diagnose", *map(str, dirs), "--cache", str(cache), "--against", str(noisy), "--bootstrap", "50"]
    result = runner.invoke(app, [*args, "--permutations", "50", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    assert not any(
        " msp: " in v and ("beats" in v or "no detectable difference" in v) for v in s["verdict"]
    )  # no verdict on a head that learnt nothing
    assert all(h["chance"]["near_chance"] for h in s["heads"]), [h["test_accuracy"] for h in s["heads"]]
    said = " ".join(result.output.split())
    for what in ("error detection", "shift detection"):
        (line,) = [v for v in s["verdict"] if v.startswith(f"{what} not read against msp: near chance")]
        assert "seed_0: accuracy" in line and line in " ".join(said.split())
    assert s["errors"]["diff_vs_msp"] and s["shift"]["pooled"]["detect_diff"]  # the numbers stay
    from laya_inspect.report.beyond import diagnose_sections  # report.html's tables say why, not "too few rows"

    for table in [
        t for sec in diagnose_sections(s) for t in sec.tables if t.id in ("diagnose-errors", "diagnose-shift")
    ]:
        cells = [str(row[len(row) - 2 if table.id == "diagnose-errors" else 3]) for row in table.rows[1:]]
        assert cells and all("near chance" in c and "too few" not in c for c in cells), (table.id, cells)
    assert "error detection not read against msp: near chance" in page_said(out / "report.html")
    control = tmp_path / "trained"
    args = ["diagnose", *map(str, trained), "--cache", str(cache), "--bootstrap", "50", "--device", "cpu"]
    assert runner.invoke(app, [*args, "--out", str(control)], env=ENV).exit_code == 0
    assert not any(h["chance"]["near_chance"] for h in json.loads((control / "summary.json").read_text())["heads"])


def test_a_head_of_one_layer_reads_alpha_as_not_applicable(digits_cache, tmp_path):
    """A LAYA head on one layer has α = 1 for every input: its α scores are constant by construction, so
    "alpha_entropy is worse than msp" would be a structural result, not a finding: not applicable."""
    with FeatureStore(digits_cache) as store:
        splits = {s: ([store.layers(s)[-1]], store.labels(s)) for s in ("train", "test")}
    one = write_cache(tmp_path / "one.h5", splits)
    with FeatureStore(one) as store:
        d = save_head(tmp_path / "seed_0", fit_quickly("laya", store, 10), meta=cache_identity(store))
    out = tmp_path / "dg"
    args = ["diagnose", str(d), "--cache", str(one), "--against", str(one), "--bootstrap", "50"]
    result = runner.invoke(app, [*args, "--permutations", "50", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    h = s["heads"][0]
    assert min(h["n_errors"], h["n_test"] - h["n_errors"]) >= 20  # enough rows to read otherwise
    assert not any(" msp: " in v and ("worse" in v or "no detectable difference" in v) for v in s["verdict"])
    said = " ".join(result.output.split())
    for what in ("error detection", "shift detection"):
        (line,) = [v for v in s["verdict"] if v.startswith(f"{what} by α not applicable: the head reads one layer")]
        assert line in said
    assert "α profiles of the two caches: not applicable" in said
    from laya_inspect.report.beyond import diagnose_sections

    tables = [t for sec in diagnose_sections(s) for t in sec.tables if t.id in ("diagnose-errors", "diagnose-shift")]
    assert all(
        "not applicable" in str(row[4 if t.id == "diagnose-errors" else 3]) for t in tables for row in t.rows[1:]
    )


def test_a_near_chance_head_whose_macro_f1_decides_is_not_said_to_have_learnt_nothing():
    """990:10 labels, a head right on 4 of the 10 minority rows: accuracy 0.994 beats the majority class
    on too few rows to say it learned, and its macro-F1 (0.78 against 0.50) says it may have. The line
    named the macro-F1 and then said "the scores of a head that learnt next to nothing say little";
    it reads the macro-F1 rule once, as compare does."""
    from laya_inspect.beyond.scoring import head_chance, near_chance_not_read

    y = np.r_[np.zeros(990, int), np.ones(10, int)]
    p = np.r_[np.zeros(990, int), np.ones(4, int), np.zeros(6, int)]
    chance = head_chance("seed_0", 0.994, y, p)
    line = near_chance_not_read([{"chance": chance}], "error detection")
    assert line and chance["near_chance"] and "accuracy alone cannot show whether the head learned" in line
    assert "learnt next to nothing" not in line, line
    # a head that answers the majority class on every row is still one that learnt next to nothing
    line = near_chance_not_read([{"chance": head_chance("seed_0", 0.99, y, np.zeros(1000, int))}], "error detection")
    assert line and "the head learnt next to nothing" in line, line


def test_a_difference_from_msp_every_head_shows_alone_is_said_beside_no_detectable_difference():
    """QA (MobileNetV2, CIFAR-10, 3 seeds): α entropy − msp read "no detectable difference", -0.127,
    98.8% CI [-0.338, +0.084] (t over heads, 2 degrees of freedom), and report.html "not
    distinguishable", though each head's own paired interval over its 500 test rows lay below 0
    (seed 0: [-0.131, -0.024]; seed 1: [-0.199, -0.085]; seed 2: [-0.216, -0.094])."""
    from laya_inspect.beyond.diagnose import verdict_lines as _verdict
    from laya_inspect.report.beyond import diagnose_sections
    from laya_inspect.report.reading import diagnose_reading

    def est(mean, lo, hi):
        return {"mean": mean, "ci_low": lo, "ci_high": hi}

    key = "alpha_entropy − msp"
    errors = {
        "interval": "t over heads",
        "auroc": {"msp": est(0.73, 0.69, 0.77), "alpha_entropy": est(0.60, 0.54, 0.67)},
        "aupr": {"msp": est(0.65, 0.60, 0.70), "alpha_entropy": est(0.54, 0.43, 0.65)},
        "diff_vs_msp": {key: {**est(-0.127, -0.338, 0.084), "confidence": 0.9875}},
        "family": {"confidence": 0.9875, "size": 1, "of": "scores compared with msp"},
    }
    own = [(-0.131, -0.024), (-0.199, -0.085), (-0.216, -0.094)]
    heads = [
        {
            "head_dir": f"h/laya/seed_{i}",
            "held_out_errors": 20,
            "test_accuracy": 0.55,
            "n_errors": 225,
            "n_test": 500,
            "auroc": {"msp": est(0.73, 0.69, 0.77), "alpha_entropy": est(0.60, 0.55, 0.65)},
            "diff_vs_msp": {key: {**est((lo + hi) / 2, lo, hi), "confidence": 0.9875}},
            "aupr_baseline": 0.45,
        }
        for i, (lo, hi) in enumerate(own)
    ]
    s = {"errors": errors, "heads": heads, "scores": {}}
    (line,) = _verdict(s)
    assert line.startswith("no detectable difference between error detection by alpha_entropy and msp")
    assert (
        "; alpha_entropy worse than msp on each of the 3 heads' own test rows (each head's paired interval "
        "below 0), but the interval over heads holds 0 (the heads differ too much to pin it down)" in line
    )
    s["verdict"] = [line]

    def cell():
        table = next(t for sec in diagnose_sections(s) for t in sec.tables if "AUROC − msp" in t.columns)
        return next(r[table.columns.index("verdict")] for r in table.rows if r[0] == "alpha_entropy")

    assert cell().text == "not distinguishable over heads; worse on each head's own rows"
    # report.html's reading paragraph says it too: "is not distinguishable from msp" alone read as no
    # difference at all
    alone = "alpha_entropy worse than msp on each of the 3 heads' own test rows"
    (reading,) = [x for x in diagnose_reading(s).lead if x.startswith("Misclassified")]
    assert "alpha_entropy 0.600 (is not distinguishable from msp: -0.127 [-0.338, +0.084]; " + alone in reading
    # one head's own interval holds 0: nothing more is said
    heads[0]["diff_vs_msp"][key] = {**est(-0.05, -0.12, 0.02), "confidence": 0.9875}
    (line,) = _verdict(s)
    assert "each of the 3 heads" not in line
    assert cell().text == "not distinguishable"
    assert "each of the 3 heads" not in " ".join(diagnose_reading(s).lead)


@pytest.mark.parametrize("own_half", [0.05, 0.12])
def test_an_interval_over_two_heads_that_agree_is_read_beside_the_test_rows(own_half):
    """QA: diagnose over 2 heads read "alpha AUROC − msp -0.0953 [-0.1009, -0.0898]": two heads that
    happen to agree give a t-interval a hundredth wide, though both are scored on the same 500 test rows and
    each head's own paired interval over them is ±0.05 or more. The interval over heads is now read beside
    the rows': where they hold 0 (±0.12) the verdict is withheld, else (±0.05) it stands and says the rows'
    width; in summary.json (`test_rows`), the terminal's line, report.html's cell and its reading."""
    from laya_inspect.beyond import diagnose
    from laya_inspect.report.beyond import diagnose_sections
    from laya_inspect.report.reading import diagnose_reading

    key = "alpha − msp"
    diffs = (-0.09519, -0.09541)
    per = [
        {
            "head_dir": f"h/laya/seed_{i}",
            "held_out_errors": 40,
            "test_accuracy": 0.62,
            "n_errors": 190,
            "n_test": 500,
            "aupr_baseline": 0.38,
            "auroc": {"msp": {"mean": 0.78}, "alpha": {"mean": 0.78 + d}},
            "aupr": {"msp": {"mean": 0.6}, "alpha": {"mean": 0.5}},
            "diff_vs_msp": {key: {"mean": d, "ci_low": d - own_half, "ci_high": d + own_half, "confidence": 0.95}},
        }
        for i, d in enumerate(diffs)
    ]
    errors = diagnose._pool_errors(per, 1000)
    d = errors["diff_vs_msp"][key]
    assert d["ci_high"] < 0 and d["ci_high"] - d["ci_low"] < 0.02  # the heads' narrow interval, below 0
    rows = d["test_rows"]
    assert rows["heads"] == 2 and rows["rows"] == 500 and rows["dominates"]
    assert rows["half_width"] == pytest.approx(own_half)
    assert rows["withheld"] is (own_half > 0.0953)
    assert "test rows" in errors["rows_rule"]
    s = {"errors": errors, "heads": per, "scores": {}}
    (line,) = diagnose.verdict_lines(s)
    (table,) = [t for sec in diagnose_sections(s) for t in sec.tables if t.id == "diagnose-errors"]
    cell = next(r[table.columns.index("verdict")] for r in table.rows if r[0] == "alpha")
    (reading,) = [x for x in diagnose_reading(s).lead if x.startswith("Misclassified")]
    if rows["withheld"]:
        assert line.startswith("no verdict on error detection by alpha against msp: -0.0953; the "), line
        assert "95% CI over 2 heads [-0.09" in line and "500 shared test rows (±0.1200" in line and "worse" not in line
        assert cell.text == "withheld: within the test rows' sampling"
        assert "no verdict: the 500 shared test rows alone allow ±0.120 per head" in reading
    else:
        assert line.startswith("error detection by alpha is worse than msp: -0.0953"), line
        assert "500 shared test rows (±0.0500 on average" in line and "(it still excludes 0)" in line
        # the interval once, then its AUROC, then the rows' width (the line gave the interval twice, the
        # rows' clause before "(AUROC …)")
        span = f"[{d['ci_low']:+.4f}, {d['ci_high']:+.4f}]"
        assert line.count(span) == 1, line
        rows_at = line.index("; that interval over 2 heads is far narrower than each head's own interval")
        assert line.index(span) < line.index("(AUROC alpha ") < rows_at, line
        assert "each head's own interval over the 500 shared test rows is ±0.050" in reading
    assert bool(diagnose.rows_warning(errors["diff_vs_msp"])) is rows["withheld"]


def test_shift_detection_over_two_heads_that_agree_is_read_beside_the_rows_too():
    """The same rule for telling the caches apart: 2 heads agreeing on alpha_divergence − msp +0.0602 and
    +0.0600, each head's own interval over the 400 rows of both caches ±0.08, hold 0: withheld, and warned."""
    from laya_inspect.beyond import diagnose

    keys = ("alpha_divergence − msp", "alpha_entropy − msp")

    def head(a: float) -> dict[str, Any]:
        auroc = {"msp": {"mean": 0.6}, "alpha_divergence": {"mean": 0.6 + a}, "alpha_entropy": {"mean": 0.6 + a}}
        own = {"mean": a, "ci_low": a - 0.08, "ci_high": a + 0.08, "confidence": 0.975}
        return {"n_this": 200, "n_other": 200, "detect_auroc": auroc, "detect_diff": dict.fromkeys(keys, own)}

    pooled = diagnose._pool_shift([head(0.0602), head(0.0600)], 1000)
    d = pooled["detect_diff"]["alpha_divergence − msp"]
    assert d["ci_low"] > 0 and d["test_rows"]["rows"] == 400 and d["test_rows"]["withheld"]
    (warned,) = diagnose.rows_warning(pooled["detect_diff"], "shift-detection")
    assert warned.startswith("test sampling: 2 of the shift-detection differences from msp") and "400" in warned
    said = diagnose.rows_said(d, "shift detection by alpha_divergence", "msp")
    assert said is not None and said.startswith("no verdict on shift detection by alpha_divergence against msp")


def test_against_the_same_cache_reads_no_difference_and_claims_no_side_of_0(digits_heads, tmp_path):
    """The null control: --against the very cache, so every score tells the caches apart at 0.5 on every
    head and each difference from msp is exactly 0. The line read "no detectable difference …: +0.0000,
    97.5% CI [+0.0000, +0.0000] …; read the difference to within that (it still excludes 0)" of an
    interval that is 0: the rows' clause now follows a "better" or "worse" only."""
    cache, dirs, _ = digits_heads
    out = tmp_path / "null"
    args = ["diagnose", *map(str, dirs), "--cache", str(cache), "--against", str(cache), "--bootstrap", "50"]
    result = runner.invoke(app, [*args, "--permutations", "50", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    s = json.loads((out / "summary.json").read_text())
    d = s["shift"]["pooled"]["detect_diff"]["alpha_divergence − msp"]
    assert d["values"] == [0.0, 0.0] and d["test_rows"]["dominates"]  # the case: zero width beside the rows'
    lines = [v for v in s["verdict"] if v.startswith("no detectable difference between shift detection by")]
    assert len(lines) == 2, s["verdict"]
    for line in lines:
        assert "excludes 0" not in line and "read the difference to within that" not in line, line
        assert "(AUROC alpha_" in line and "msp 0.500; 0.5 is chance)" in line, line
    said = " ".join(result.output.split())
    assert all(line in said for line in lines) and "excludes 0" not in said


def test_against_the_same_rows_of_the_same_extraction_is_warned(shift_caches, tmp_path):
    """QA: `diagnose … --against feat3.h5`, the same data extracted again, read shift AUROC 0.500 with
    "97.5% CI [+0.0000, +0.0000]" and permutation p = 1, without saying the two caches held one sample."""
    import shutil

    base, moved2, _, head_dir = shift_caches
    copy = shutil.copy(base, tmp_path / "again.h5")
    config = DiagnoseConfig(permutations=50, n_boot=100, device="cpu", plots=False)
    with FeatureStore(base) as store, FeatureStore(copy) as other:
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "a", against=other).summary
    said = [w for w in s["warnings"] if "the two sides of the shift are one sample" in w]
    assert len(said) == 1 and str(copy) in said[0] and "0.5 by construction" in said[0], s["warnings"]
    with FeatureStore(base) as store, FeatureStore(moved2) as other:  # other rows: no such warning
        s = diagnose_heads([head_dir], store, config, out_dir=tmp_path / "b", against=other).summary
    assert not [w for w in s["warnings"] if "one sample" in w]
