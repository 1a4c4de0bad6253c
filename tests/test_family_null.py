"""The beyond commands' verdicts read against the null (docs/METHOD.md, "Families of comparisons"):
each command reads several comparisons at once (diagnose: every score against msp; prune: α against
every other ranking; early-exit: every rule against random exit, and the other questions), and at 95%
each, where nothing differs in truth, one of them came out "beats" or "worse" in 10–25% of runs. Each
family's intervals are drawn at 1 − 0.05/m (Bonferroni), which holds that to 5%. The simulations run
the commands' own verdict functions on scores that are equal in truth; the same runs at 95% (the
family's level patched back to it) show the test can fail."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from laya_inspect.training.stats import family, family_text, level, outcome

RUNS = 300


def said(diffs) -> bool:
    """A "beats" or "worse" among the differences: what a verdict line reads as a finding."""
    return any(outcome(d) in ("better", "worse") for d in diffs)


def at_95(size: int, of: str) -> dict:
    """The family record as it was before: every comparison at 95%."""
    return {**family(1, of), "size": size}


def rates(run, monkeypatch, module) -> tuple[float, float]:
    """(wrong-verdict rate at the family's level, the same runs with every interval at 95%)."""
    new = sum(run(t) for t in range(RUNS)) / RUNS
    with monkeypatch.context() as m:
        m.setattr(module, "family", at_95)
        old = sum(run(t) for t in range(RUNS)) / RUNS
    return new, old


def test_the_family_level_and_its_words() -> None:
    assert family(4, "x")["confidence"] == pytest.approx(1 - 0.05 / 4) and family(0, "x")["confidence"] == 0.95
    assert level(family(3, "x")) == "98.3%" and level(family(4, "x")) == "98.8%" and level(None) == "95%"
    assert level({"mean": 0.1}) == "95%"  # a record written before levels were recorded
    assert family_text(family(6, "rankings compared with α"), "t-intervals") == (
        "99.2% t-intervals (Bonferroni over the 6 rankings compared with α: 95% for them together)"
    )
    assert family_text(family(1, "x")) == "95% intervals" and family_text(None) == "95% intervals"


def test_diagnose_scores_equal_to_msp_rarely_get_a_verdict(monkeypatch) -> None:
    """Four scores (α entropy, α divergence and the two combinations) against msp, every one noise:
    at 95% each, one read "beats msp" or "worse" in about a sixth of the runs (bootstrap over rows,
    one head). The scores go through what detection reads them with (:func:`.scoring.versus_msp`)."""
    from laya_inspect.beyond import scoring

    names = ("msp", "alpha_entropy", "alpha_divergence", "alpha", "msp+alpha")

    def run(t: int) -> bool:
        rng = np.random.default_rng(t)
        y = rng.random(150) < 0.3
        read = scoring.versus_msp(
            y, {k: rng.normal(size=150) for k in names}, n_boot=300, seed=t, settle=False, of="scores"
        )
        assert read["family"]["size"] == len(read["diff_vs_msp"]) == 4
        assert all(d["confidence"] == read["family"]["confidence"] for d in read["diff_vs_msp"].values())
        return said(read["diff_vs_msp"].values())

    new, old = rates(run, monkeypatch, scoring)
    assert new <= 0.06 < 0.10 <= old, (new, old)


def test_diagnose_over_heads_reads_the_family_level(monkeypatch) -> None:
    """Several heads: each score − msp is a paired t-interval over the heads' AUROCs, at the family's level."""
    from laya_inspect.beyond import diagnose

    names = ["msp", "alpha_entropy", "alpha_divergence", "alpha", "msp+alpha"]

    def run(t: int) -> bool:
        rng = np.random.default_rng(t)
        per = []
        for _ in range(3):
            auc = {k: {"mean": 0.7 + 0.02 * rng.normal()} for k in names}
            per.append({"auroc": auc, "aupr": auc, "diff_vs_msp": {f"{k} − msp": {"mean": 0.0} for k in names[1:]}})
        pooled = diagnose._pool_errors(per, 1000)
        assert pooled["family"]["size"] == 4
        return said(pooled["diff_vs_msp"].values())

    new, old = rates(run, monkeypatch, diagnose)
    assert new <= 0.06 < 0.10 <= old, (new, old)


def _below(auroc: dict, names, heads=()) -> tuple[bool, bool]:
    """("below chance" said as read now, as read from the 95% intervals before)."""
    from laya_inspect.beyond.scoring import versus_chance

    drop = ("below_chance", "chance_confidence")
    before = {k: {x: v for x, v in a.items() if x not in drop} for k, a in auroc.items()}
    now = "below chance" in versus_chance(auroc, names, "rows", heads)
    return now, "below chance" in versus_chance(before, names, "rows")


def test_diagnose_rarely_says_a_noise_score_is_below_chance() -> None:
    """Every score's AUROC is read against chance (½) too, and "X below chance" is a finding: at 95%
    each, one of five noise scores was said to be below chance in about a tenth of the runs (11.7% over
    400 runs of 300 rows). "Below chance" is read at 1 − 0.05/5 (Bonferroni over the scores with an
    AUROC); the 95% intervals, which describe each score, stay."""
    from laya_inspect.beyond import scoring

    names = ("msp", "alpha_entropy", "alpha_divergence", "alpha", "msp+alpha")
    new = old = 0
    for t in range(RUNS):
        rng = np.random.default_rng(t)
        y = rng.random(150) < 0.3
        read = scoring.versus_msp(y, {k: rng.normal(size=150) for k in names}, n_boot=300, seed=t, settle=False, of="x")
        now, before = _below(read["auroc"], names)
        new, old = new + now, old + before
    assert new / RUNS <= 0.05 < 0.08 <= old / RUNS, (new, old)
    assert all(a["chance_confidence"] == 1 - 0.05 / 5 for a in read["auroc"].values())


def test_diagnose_over_heads_rarely_says_a_noise_score_is_below_chance() -> None:
    """Several heads: each score's AUROC is a t-interval over the heads, and "below chance" is read at
    the family's level over the scores, as with one head."""
    from laya_inspect.beyond import diagnose

    names = ["msp", "alpha_entropy", "alpha_divergence", "alpha", "msp+alpha"]
    new = old = 0
    for t in range(1000):
        rng = np.random.default_rng(t)
        per = []
        for _ in range(3):
            auc = {k: {"mean": 0.5 + 0.02 * rng.normal()} for k in names}
            per.append({"auroc": auc, "aupr": auc, "diff_vs_msp": {}})
        pooled = diagnose._pool_errors(per, 1000)
        now, before = _below(pooled["auroc"], names)
        new, old = new + now, old + before
    assert new / 1000 <= 0.05 < 0.08 <= old / 1000, (new, old)
    # the sentence names the level it read
    below = {"mean": 0.4, "ci_low": 0.3, "ci_high": 0.45, "below_chance": True, "chance_confidence": 0.99}
    said = diagnose.versus_chance({"a": below}, ["a"], "rows")
    assert "a below chance (the whole AUROC interval under 0.5 at 99%, Bonferroni over the scores" in said, said


def test_prune_rankings_equal_to_alpha_rarely_get_a_verdict(monkeypatch) -> None:
    """α against random and the five other rankings over 3 seeds, every layer set's accuracy noise: at
    95% each, α read "beats" or "worse" against one of them in about a fifth of the runs."""
    from laya_inspect.beyond import prune
    from laya_inspect.beyond.rankings import NON_ALPHA

    n_layers, seeds, ks = 5, 3, [4, 3, 2, 1]

    def run(t: int) -> bool:
        rng = np.random.default_rng(t)
        sets = [s for k in ks for s in itertools.combinations(range(n_layers), k)]
        # each (layer set, seed) refit's (validation, test) accuracy; each ranking one order at every seed
        results = {(s, i): (0.9, 0.9 + 0.01 * rng.normal()) for s in sets for i in range(seeds)}
        orders = {n: [int(i) for i in rng.permutation(n_layers)] for n in ("alpha", *NON_ALPHA)}
        ranked = {n: dict.fromkeys(range(seeds), order) for n, order in orders.items()}
        randoms = {k: ([s for s in sets if len(s) == k][:4], False) for k in ks}
        _, versus = prune._compare_rankings(ranked, results, ks, list(range(seeds)), randoms)
        compared = [v for v in versus.values() if not v["same_layer_sets"]]
        assert {v["family"]["size"] for v in versus.values()} == {len(compared)}
        return said(v["mean_test_acc_over_k_diff"] for v in compared)

    new, old = rates(run, monkeypatch, prune)
    assert new <= 0.06 < 0.10 <= old, (new, old)


def test_early_exit_rules_equal_to_random_rarely_get_a_verdict(monkeypatch) -> None:
    """Each question's comparisons (rules against random exit, α added to confidence, against fixed
    depth) are a family; every rule's held-out area noise over 3 seeds."""
    from laya_inspect.beyond import exit_verdicts

    rules = ("random", "fixed", "confidence", "alpha", "confidence+alpha", "confidence+alpha_oracle")
    fired = {"epsilon": 0.05, "rows": 10, "oracle_rows": 10, "of": 100}

    def run(t: int) -> bool:
        rng = np.random.default_rng(t)
        areas = {r: list(0.8 + 0.01 * rng.normal(size=3)) for r in rules}
        points = [
            {"rule": r, "seed": 0, "step": 0, "accuracy": i, "compute_used": 0.5, "mean_depth": 1}
            for i, r in enumerate(rules)
        ]
        comp = exit_verdicts.exit_comparisons(areas, points, fired)
        assert all(e["area_diff"]["confidence"] == e["family"]["confidence"] for e in comp.values())
        return said(e["area_diff"] for e in comp.values() if e["family"]["of"] == exit_verdicts.QUESTIONS["random"])

    new, old = rates(run, monkeypatch, exit_verdicts)
    assert new <= 0.06 < 0.10 <= old, (new, old)


def test_early_exit_every_family_holds_its_rate() -> None:
    """The two smaller families (α added to confidence; against fixed depth), two comparisons each, and
    the headline's, over more runs (each family at about 5%: its pair shares a side, so Bonferroni is
    near exact)."""
    from laya_inspect.beyond import exit_verdicts

    rules = ("random", "fixed", "confidence", "alpha", "confidence+alpha", "confidence+alpha_oracle")
    fired = {"epsilon": 0.05, "rows": 10, "oracle_rows": 10, "of": 100}
    counts: dict[str, int] = dict.fromkeys(exit_verdicts.QUESTIONS.values(), 0)
    sizes, runs, together = {}, 1000, 0
    for t in range(runs):
        rng = np.random.default_rng(t)
        areas = {r: list(0.8 + 0.01 * rng.normal(size=3)) for r in rules}
        points = [
            {"rule": r, "seed": 0, "step": 0, "accuracy": i, "compute_used": 0.5, "mean_depth": 1}
            for i, r in enumerate(rules)
        ]
        by: dict[str, list] = {}
        for e in exit_verdicts.exit_comparisons(areas, points, fired).values():
            by.setdefault(e["family"]["of"], []).append(e["area_diff"])
            sizes[e["family"]["of"]] = e["family"]["size"]
        for of, diffs in by.items():
            counts[of] += said(diffs)
        together += any(said(diffs) for diffs in by.values())
    assert sizes == dict(zip(exit_verdicts.QUESTIONS.values(), (4, 2, 2)))
    assert all(c / runs <= 0.065 for c in counts.values()), counts
    # the three questions read together are not held to 5%: the output says how far they are not
    assert together / runs == pytest.approx(exit_verdicts.TOGETHER_NULL, abs=0.025), together / runs


def test_early_exit_says_its_questions_are_read_apart() -> None:
    """Each question is held to 5% on its own, all eight lines together to about 15% (the test above):
    the summary says so beside the verdicts whenever two or more questions drew an interval, and not
    when none did (one seed: no interval, no verdict)."""
    from laya_inspect.beyond import exit_verdicts

    rules = ("random", "fixed", "confidence", "alpha", "confidence+alpha", "confidence+alpha_oracle")
    fired = {"epsilon": 0.05, "rows": 10, "oracle_rows": 10, "of": 100}
    points = [
        {"rule": r, "seed": 0, "step": 0, "accuracy": i, "compute_used": 0.5, "mean_depth": 1}
        for i, r in enumerate(rules)
    ]
    rng = np.random.default_rng(0)
    said3 = exit_verdicts.read_apart(
        exit_verdicts.exit_comparisons({r: list(0.8 + 0.01 * rng.normal(size=3)) for r in rules}, points, fired)
    )
    assert said3 is not None and "the 3 questions (rules compared with random exit, " in said3
    assert "not these 8 lines together" in said3 and "in 15% of simulated runs" in said3
    one_seed = exit_verdicts.exit_comparisons({r: [0.8 + 0.01 * i] for i, r in enumerate(rules)}, points, fired)
    assert exit_verdicts.read_apart(one_seed) is None


def test_the_settle_draws_follow_the_family_level() -> None:
    """A difference from msp whose 98.8% bound lies within resampling error of 0 (and its 95% bound
    clear of it) draws more resamples; at 95% it would not have."""
    from laya_inspect.beyond.scoring import bootstrap_auc, settled_aucs
    from laya_inspect.compare.paired import unsettled

    rng = np.random.default_rng(1)
    y = rng.random(200) < 0.5
    msp = rng.normal(size=200) + 0.5 * y
    noise = rng.normal(size=200)
    ref = np.asarray(bootstrap_auc(y, msp, n_boot=2000, seed=0)["values"])
    tail = (1 - family(4, "x")["confidence"]) / 2 * 100
    near = None
    for lift in np.linspace(0.0, 1.5, 151):  # a signal added to msp whose 98.8% lower bound sits on 0
        s = msp + lift * y + 0.3 * noise
        v = np.asarray(bootstrap_auc(y, s, n_boot=2000, seed=0)["values"])
        if unsettled(v - ref, tail) and not unsettled(v - ref, 2.5) and not unsettled(v - 0.5, 2.5):
            near = s
            break
    assert near is not None
    scores = {"msp": msp, "a": near}
    assert settled_aucs(y, scores, n_boot=2000, seed=0, confidence=1 - 0.05 / 4)[1] > 2000
    assert settled_aucs(y, scores, n_boot=2000, seed=0)[1] == 2000  # at 95% that bound was clear of 0


def test_diagnose_shift_over_heads_counts_only_defined_differences() -> None:
    """Several heads, one α score's shift AUROC undefined on one head (a non-finite score): it draws no
    verdict, so the pooled family holds the other score alone and reads it at 95%, as one head does."""
    from laya_inspect.beyond import diagnose

    shifts = []
    for i in range(3):
        auc = {"msp": {"mean": 0.6 + 0.01 * i}, "alpha_divergence": {"mean": 0.7 + 0.02 * i}}
        auc["alpha_entropy"] = {"mean": None if i == 1 else 0.65}
        shifts.append({"detect_auroc": auc})
    pooled = diagnose._pool_shift(shifts, 1000)
    assert pooled["family"]["size"] == 1
    assert list(pooled["detect_diff"]) == ["alpha_divergence − msp"]
    assert pooled["detect_diff"]["alpha_divergence − msp"]["confidence"] == pooled["family"]["confidence"] == 0.95
    assert "alpha_entropy" not in pooled["detect_auroc"]
