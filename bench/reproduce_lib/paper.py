"""The paper's reference numbers (as the paper reports them), typed once here and nowhere else."""

from __future__ import annotations

# Table 1: accuracy mean ± std over 5 seeds, backbones trained jointly with each head.
TABLE1 = {
    "fmnist": {
        "last": (0.8829, 0.0063),
        "concat": (0.8789, 0.0020),
        "scalarmix": (0.8807, 0.0026),
        "laya": (0.8834, 0.0046),
    },
    "cifar": {
        "last": (0.7112, 0.0236),
        "concat": (0.7155, 0.0096),
        "scalarmix": (0.7144, 0.0171),
        "laya": (0.7212, 0.0060),
    },
    "imdb": {
        "last": (0.8692, 0.0057),
        "concat": (0.8688, 0.0062),
        "scalarmix": (0.8669, 0.0043),
        "laya": (0.8707, 0.0035),
    },
}
PAPER_SEEDS = 5
# Attention profiles: mean α of the deepest layer / last stage.
ALPHA_DEEPEST = {"fmnist": 0.76, "cifar": 0.96}
VIT_PROFILE = "frozen ViT-B/16 (Best Artworks): mass on blocks 5, 7, 9–11, block 12 ≈ 0"
# Faithfulness on Fashion-MNIST (LAYA head): α 0.8575, gradient-based post-hoc ≈ 0.89, static far lower.
FAITH_FMNIST = {"alpha": "0.8575", "ig": "≈ 0.89", "gradcam": "≈ 0.89", "static": "far lower"}
FAITH_FMNIST_ALPHA = 0.8575
FAITH_FMNIST_GRAD = 0.89
# Deletion@1 of α on the frozen ViT-B/16 (Best Artworks): the best of all methods.
DELETION1_VIT_ALPHA = 0.5787
# The reference Keras notebook: LAYA, Fashion-MNIST, seed 1337, validation = the last 10%.
NOTEBOOK_SEED1337 = 0.8842
# Training set sizes of the paper (90% of the training split; 10% held out for validation).
PAPER_TRAIN_ROWS = {"fmnist": 54000, "cifar": 45000, "imdb": 22500}
# Which Table 1 row each zoo experiment stands beside; only the first two are the paper's own data.
PAPER_ROW = {"fmnist": "fmnist", "cifar": "cifar", "bilstm": "imdb"}
SAME_DATA = {"fmnist": True, "cifar": True, "bilstm": False}
