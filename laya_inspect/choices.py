"""Names and defaults that option declarations need, kept free of torch, numpy and scipy.

The CLI builds every command's options, and so its `--help`, from the config dataclasses; those
must import without the heavy stack for `laya-inspect --help` to answer in well under a second.
The registries (heads, attribution methods, ablations) stay where their objects are defined;
`tests/test_cli_startup.py` checks that each registry holds exactly the names listed here, in order.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import NotFoundError, suggest

# Registries: the keys of HEADS, METHODS and ABLATIONS, in registry order ("all" expands in this order).
HEAD_NAMES = ("laya", "last", "concat", "scalarmix")
METHOD_NAMES = ("alpha", "alpha-contrib", "ig", "gradcam", "static", "random")
ABLATION_NAMES = ("mean", "zero", "resample", "drop", "mix")

# Heads and training.
PSI_CHOICES = ("identity", "mlp")
# feature: μ and σ per feature | layer: μ per feature, one σ per layer | none: raw features
STANDARDIZE_CHOICES = ("feature", "layer", "none")
VAL_MODES = ("stratified", "last")
MONITORS = ("loss", "acc")  # the validation metric early stopping watches; ties go to the other
# logits: cross-entropy on the logits | probs: Keras' categorical cross-entropy on softmax
# probabilities clipped to [1e-7, 1 − 1e-7] (the reference notebook's loss; no gradient where clipped)
LOSSES = ("logits", "probs")
INITS = ("glorot", "torch")  # Keras' glorot-uniform + zero bias (the paper's) | PyTorch's own defaults

# compare.
BASELINE_CHOICES = ("mean", "zero")
MAX_SUBSETS = 32  # every non-empty proper subset when there are at most this many, else a seeded sample
RANDOM_ORDERS = 8  # seeded random orderings per sample for the random curves, 1 < k < L
# up to this many layers compare measures all 2^L ablation masks once per sample (and so can average
# the curves of tied scores over every pick of the tied layers)
TABLE_LAYERS = 8
# with more layers, the curves of a row whose scores tie exactly are the mean over this many seeded
# random tie-breaks (as many orderings as the random reference averages): an estimate, not the exact
# expectation, at (1 + TIE_ORDERS)× the curve passes of a method with tied rows
TIE_ORDERS = 8
RESAMPLE_DRAWS = 4  # donors per sample for `resample`; the probabilities are averaged over them
DONOR_POOL = 1024  # train rows the donors are drawn from (a seeded uniform subset of the split)
# Effects closer than this (probability units) count as tied: ~10× the float32 resolution of a
# probability near 1 (eps 1.2e-7), the precision the features are cached in and the head was
# trained at, so an ordering finer than this is not a property of the model (docs/METHOD.md).
TIE_TOLERANCE = 1e-6
# Below this mean of max_i |e_i(x)| (0.1 percentage point of confidence) every effect is ≈ 0 and
# ranking methods would rank noise: a caveat, no "best".
NEGLIGIBLE_EFFECT = 1e-3
MIN_LAYERS = 3  # with L = 2, ρ is ±1 or undefined by construction
MIN_ROWS = 20  # fewer compared rows: a percentile bootstrap over them is no 95% interval (2 rows: 3 resamples)


def known(kind: str, name: str, names: Sequence[str]) -> str:
    """``name`` if it is one of ``names``, else NotFoundError worded as a registry's ("no head 'x'; …")."""
    if name not in names:
        raise NotFoundError(f"no {kind} {name!r}; {suggest(name, names)}")
    return name
