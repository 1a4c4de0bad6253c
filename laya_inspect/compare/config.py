"""`compare`'s options (:class:`CompareConfig`, one field per command-line option) and the record of
every choice its numbers rest on (:data:`CHOICES`, written into summary.json and attributions.h5);
definitions in docs/METHOD.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..choices import (
    ABLATION_NAMES,
    BASELINE_CHOICES,
    DONOR_POOL,
    MAX_SUBSETS,
    METHOD_NAMES,
    MIN_LAYERS,
    NEGLIGIBLE_EFFECT,
    RANDOM_ORDERS,
    RESAMPLE_DRAWS,
    TABLE_LAYERS,
    TIE_ORDERS,
    TIE_TOLERANCE,
)
from ..errors import InputError, suggest
from ..options import MAX_RESAMPLES, check, option, range_text, seed_rule, tuples, within
from ..runtime import DEVICE_HELP, check_device
from .draws import RANDOM_STREAM

TARGETS = ("pred", "true")
# What a layer's removal is measured on (docs/METHOD.md, "One target"): the target logit f_c, the
# quantity IG and Grad-CAM explain, or its softmax probability p_c.
EFFECTS = ("logit", "prob")


def resolve_target(target: str, class_names: Sequence[str], num_classes: int | None = None) -> str | int:
    """``pred`` / ``true``, or the class index ``target`` names: a class name (looked up first) or an
    index 0 … C−1 (C = ``num_classes``, else the number of class names)."""
    text = str(target).strip()
    if text in TARGETS:
        return text
    names = [str(c) for c in class_names]
    if text in names:
        return names.index(text)
    n = num_classes if num_classes is not None else len(names)
    try:
        index = int(text)
    except ValueError:
        index = -1
    if 0 <= index < n:
        return index
    raise InputError(
        f"--target must be one of pred, true, a class name or a class index 0…{n - 1}, got {target!r}; "
        f"{suggest(text, [*TARGETS, *names])}"
    )


CHOICES = {
    "spearman": "average ranks for ties; effects closer than tie_tolerance count as tied; a row whose scores are "
    "all equal or whose effects are all tied is undefined: counted in n_undefined, excluded from the mean and "
    "the bootstrap",
    "effect": "what a removal is measured on (--effect): logit = the target logit f_c(x), the quantity IG and "
    "Grad-CAM explain (default); prob = its softmax probability p_c(x). p, p_ablated, effects, Deletion@k, the "
    "oracle and every curve below use it; 'p' in these names is that quantity",
    "tie_tolerance": f"{TIE_TOLERANCE:g} absolute, in the units of the effect: about 10× the float32 resolution of "
    "a probability near 1 (and of a logit near 10), the precision of the cached features and of the trained head",
    "bootstrap": "percentile 95% interval of the mean over n_boot resamples of the valid rows, numpy default_rng(seed)",
    "top_order": "descending score; layers whose scores tie exactly across the k-th place are averaged over: "
    "Deletion@1 is the mean drop of the layers tied at the top, and, with at most "
    f"{TABLE_LAYERS} layers, each curve point "
    "the mean over every pick of the tied layers that fill the top k; with more layers, the curves of a row "
    f"whose scores tie exactly anywhere are the mean over {TIE_ORDERS} seeded random tie-breaks (the tied layers "
    "ordered by uniform keys, default_rng([seed, 4, j]) for draw j; an estimate of that mean, never the lower "
    "layer index first); n_top_ties counts rows with a tied top score, n_curve_ties rows with any exact tie",
    "top_layer_agreement": "the top-scored layer's effect is within tie_tolerance of the largest effect; a row "
    "whose top score k layers share (exactly) earns the share of those k whose effect is (1/k for one of them)",
    "deletion_at_1": "p − p(x with the top-scored layer ablated), read from the single-layer LOLO ablations; "
    "the mean over the layers tied at the top score where several are",
    "deletion_curve": "k = 1…L: the top-k layers of each sample ablated together in one forward pass",
    "insertion_curve": "k = 1…L: p with only the top-k layers of each sample kept, every other layer ablated",
    "areas": "deletion_area / insertion_area: mean of the curve over k = 1…L−1 (k = L is the same for every order)",
    "subset_faithfulness": f"Pearson r per sample across layer subsets S between Σ_(i∈S) score_i and "
    f"p − p(x with S ablated together); every non-empty proper subset when 2^L − 2 ≤ {MAX_SUBSETS}, else "
    f"{MAX_SUBSETS} distinct subsets (size uniform in 1…L−1), default_rng([seed, 3]); the same subsets for "
    "every sample and method",
    "oracle": "k = 1: max_i e_i; k > 1: the k layers with the largest single-layer effects ablated together "
    "(sorted-effects order, not an exhaustive search over k-subsets)",
    "random": f"curves: k = 1: mean_i e_i (exact expectation over orderings); k > 1: mean over {RANDOM_ORDERS} "
    "uniformly random orderings per sample, numpy default_rng([seed, 1, fit seed]); scores (ρ, subset ρ): uniform "
    "noise, default_rng([seed, 2, fit seed]) (the fit seed: the head's config.json seed; [seed, 1] and [seed, 2] "
    f"for a head that records none); the random method: default_rng([seed, {RANDOM_STREAM}, fit seed]) ([seed, "
    f"{RANDOM_STREAM}] for a head that records none)",
    "top1_only": "a one-hot attribution on the largest effect, and on any effect within tie_tolerance of it (what "
    "knowing only the top layer earns); its curves take those layers first and the others in a seeded random "
    "order, default_rng([seed, 6])",
    "resample": f"h_i (or h_S) replaced by a donor's, the donors drawn uniformly from up to {DONOR_POOL} "
    f"seeded train rows with finite features; p averaged over {RESAMPLE_DRAWS} donors per sample "
    "(default_rng([seed, 5])), the same donors for every measurement of a sample",
    "mix": "layer removed inside the aggregation: logits = W Σ_(j kept) α_j z_j + b with α from the intact pass, "
    "not renormalised (renormalising is 'drop')",
    "circular": "alpha/alpha-contrib/static with drop or mix; ig whose baseline equals the ablation value "
    "(mean/mean, zero/zero); "
    "gradcam with zero (<df_c/dh_i, h_i> is the first-order estimate of h_i → 0): marked, never best",
    "caveats": f"no best when L < {MIN_LAYERS} or when the mean over rows of max_i |e_i| < {NEGLIGIBLE_EFFECT:g}",
    "per_class": "grouped by the target class c(x), first ablation only; no bootstrap per class",
    "rows": "the whole split, or with --limit a seeded (default_rng(seed)) random subset, sorted",
    "nonfinite_rows": "rows with non-finite features or logits are refused, or with --allow-nonfinite left out "
    "(rows_left_out); a row with a non-finite probability or score is left out of that score and counted",
    "gradcam": "LayerGradCam on head.taps[i] (Identity on h_i): for vectors <df_c/dh_i, h_i>; relu as recorded",
    "unused_layers": "attributions run on head.logits + 0·Σ(inputs and tap outputs), so a layer the head ignores "
    "gets a zero gradient instead of an autograd error (exactly zero for finite features)",
    "probabilities": "every ablated pass (LOLO, subsets, curves) runs a float64 copy of the head, logits and "
    "softmax in float64; attributions run the head as trained (float32)",
    "alpha_contrib": "alpha_i(x)·<∂f_c/∂h_agg, z_i> for LAYA heads, ∂f_c/∂h_agg by autograd through the output "
    "layer at the head's own h_agg (= W_c for the linear output, where the scores sum to f_c − b_c)",
    "profile_normalisation": "plots: a method's per-layer mean score divided by Σ_i |mean score_i| (sign kept)",
}


# IG holds its n_steps step sizes and scaled inputs in memory and runs n_steps forwards per row:
# 10,000 is 200× the default; a typo of 10⁹ ended in a MemoryError after the heads were loaded.
MAX_IG_STEPS = 10_000


@dataclass(frozen=True)
class CompareConfig:
    methods: tuple[str, ...] = option(
        ("all",),
        flag="--method",
        always=True,
        help=f"repeatable or comma list: {', '.join(METHOD_NAMES)} or all (default: all)",
    )
    ablation: str = option(
        "resample",  # not mean: IG's default baseline is the train mean (docs/METHOD.md, "The default pair")
        flag="--ablation",
        help=f"how a layer is removed: {' | '.join(ABLATION_NAMES)}, a comma list, or all "
        "(every one that applies to each head; default resample)",
    )
    effect: str = option(
        "logit",
        flag="--effect",
        help="what a layer's removal is measured on: logit (the target logit, which IG and Grad-CAM explain) "
        "| prob (its softmax probability)",
        choices=EFFECTS,
    )
    target: str = option(
        "pred",
        flag="--target",
        help="class to explain: pred (the head's prediction) | true (the label) | a class name or index",
    )
    split: str = option("test", flag="--split", help="cache split to compare on")
    limit: int | None = option(None, flag="--limit", help="at most N rows (seeded random subset)", always=True)
    seed: int = option(
        0,
        flag="--seed",
        help="seed of random attribution scores, --limit rows, bootstrap, random orders, subsets and resample donors",
        always=True,
    )
    n_steps: int = option(50, flag="--n-steps", help=f"Integrated Gradients steps (1 … {MAX_IG_STEPS:,})", always=True)
    internal_batch_size: int | None = option(None, flag="--internal-batch-size", help="Captum IG internal batch size")
    baseline: str = option(
        "mean", flag="--baseline", help=f"IG baseline b_i: {' | '.join(BASELINE_CHOICES)} (mean over the train split)"
    )
    relu: bool = option(False, flag="--relu/--no-relu", help="apply ReLU to Grad-CAM scores")
    n_boot: int = option(
        1000,
        flag="--bootstrap",
        help=f"bootstrap resamples for the faithfulness 95% CI (0 = none; at most {MAX_RESAMPLES:,})",
        always=True,
    )
    device: str = option("auto", flag="--device", help=DEVICE_HELP, always=True)
    batch_size: int = option(512, flag="--batch-size", help="samples per chunk (a LOLO pass sees (L+1)× as many rows)")
    allow_other_cache: bool = option(
        False, flag="--allow-other-cache", help="use heads trained on a cache with another fingerprint (warns)"
    )
    allow_nonfinite: bool = option(
        False,
        flag="--allow-nonfinite",
        help="leave out (and count) rows with NaN/Inf features or logits instead of refusing them",
    )
    plots: bool = option(True, flag="--plots/--no-plots", help="write plots/ (PNG)")
    svg: bool = option(False, flag="--svg", help="also write each plot as SVG")
    sanity: bool = option(
        True,
        flag="--sanity/--no-sanity",
        help="sanity checks per head: its attributions with re-initialised weights and from a head fitted on "
        "permuted labels, against the trained head's (docs/METHOD.md)",
    )
    workers: int | None = option(
        None,
        flag="--workers",
        help="heads measured at once on CPU, each in a forked process (default: usable CPUs ÷ --threads, at most "
        "the heads; 1 = one after another); results do not depend on it",
    )

    def __post_init__(self) -> None:
        tuples(self)
        check_device(self.device)
        check(
            self,
            [
                (
                    bool(str(self.target).strip()),
                    "target",
                    "must be one of pred, true, a class name or a class index",
                ),
                (self.baseline in BASELINE_CHOICES, "baseline", f"must be one of {', '.join(BASELINE_CHOICES)}"),
                (self.effect in EFFECTS, "effect", f"must be one of {', '.join(EFFECTS)}"),
                (self.limit is None or self.limit >= 1, "limit", "must be ≥ 1"),
                seed_rule(self),
                (within(self.n_steps, 1, MAX_IG_STEPS), "n_steps", range_text(1, MAX_IG_STEPS)),
                (within(self.n_boot, 0, MAX_RESAMPLES), "n_boot", range_text(0, MAX_RESAMPLES)),
                (self.batch_size >= 1, "batch_size", "must be ≥ 1"),
                (self.workers is None or self.workers >= 1, "workers", "must be a whole number ≥ 1"),
                (
                    self.internal_batch_size is None or self.internal_batch_size >= 1,
                    "internal_batch_size",
                    "must be ≥ 1",
                ),
            ],
        )
        from .ablations import resolve_ablations  # torch; only when a config is built, not for --help

        resolve_ablations(self.ablation)  # NotFoundError naming the valid ablations

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "methods": list(self.methods)}
