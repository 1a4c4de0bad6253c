# %% [markdown]
# # laya-inspect from Python, on scikit-learn's digits
#
# The whole pipeline through the library, no command line: train a small backbone, cache its
# hidden states, fit a LAYA head (and the last-layer baseline) on them, then ask which layers each
# prediction relies on — α beside Integrated Gradients and Grad-CAM, all scored against what
# removing a layer really does (leave-one-layer-out effects; definitions in docs/METHOD.md).
#
# What is explained is the LAYA head fitted on the frozen backbone's pooled layer states, not the
# backbone's own classifier and not its pixels.
#
# Run it as a script (`python examples/digits_notebook.py`) or open it as a notebook (Jupyter and VS
# Code read the `# %%` cells; `jupytext --to notebook` converts it). It runs on a CPU in well under a
# minute. `LAYA_EXAMPLE_OUT` picks the output folder; `LAYA_EXAMPLE_QUICK=1` shrinks the budget.

# %%
import os
import shutil
from pathlib import Path

from laya_inspect import (
    CompareConfig,
    ExtractConfig,
    FeatureStore,
    FitConfig,
    JointConfig,
    compare_heads,
    extract_features,
    fit_heads,
    train_joint,
)

OUT = Path(os.environ.get("LAYA_EXAMPLE_OUT", "laya-example-digits"))
QUICK = os.environ.get("LAYA_EXAMPLE_QUICK") == "1"
if OUT.exists():
    shutil.rmtree(OUT)  # a fresh run each time: every step below refuses to overwrite silently
OUT.mkdir(parents=True)

# %% [markdown]
# ## 1. A backbone to inspect
# `zoo:mlp` is the paper's MLP (512-256-128), trained here end to end with its own classifier for a
# few epochs. Any trained network works instead: torchvision, timm, Hugging Face, TorchScript.

# %%
backbone = train_joint(
    JointConfig(model="zoo:mlp", data="digits", head="last", epochs=3 if QUICK else 10, device="cpu"),
    out=OUT / "backbone.pt",
)
print(f"backbone test accuracy {backbone.metrics['test_acc']:.3f}")

# %% [markdown]
# ## 2. Cache every block's hidden state
# One HDF5 file holds each layer's pooled state for every row, with the data spec and weights hash
# it was made from.

# %%
extract_features(
    ExtractConfig(
        model="zoo:mlp", data="digits", weights=str(OUT / "backbone.pt"), out=str(OUT / "features.h5"), device="cpu"
    )
)
store = FeatureStore(OUT / "features.h5")
print("layers:", store.layer_names, "widths:", store.widths)
print({split: store.n(split) for split in store.splits}, "rows; fingerprint", store.fingerprint)

# %% [markdown]
# ## 3. Fit heads on the frozen states
# LAYA learns per-input layer weights α(x); `last` reads the last block alone (the usual probe).

# %%
fit = fit_heads(
    store,
    FitConfig(
        heads=("laya", "last"),
        seeds=(0,) if QUICK else (0, 1),
        epochs=5 if QUICK else 30,
        probe=not QUICK,  # the quality gate's one-layer logistic probes: a reference, and the slow part
        device="cpu",
    ),
    out_dir=OUT / "heads",
)
for h in fit.summary["heads"]:
    print(f"{h['head']:>5}: test accuracy {h['test_acc']['mean']:.3f} over {h['n']} seed(s)")

# %% [markdown]
# ## 4. Which layers does each prediction rely on?
# `compare_heads` scores α, IG and Grad-CAM against the leave-one-layer-out effects. In a notebook
# the result shows itself as the reading and tables of its report.

# %%
result = compare_heads(
    [OUT / "heads" / "laya" / "seed_0"],
    store,
    CompareConfig(limit=100 if QUICK else 300, n_steps=8 if QUICK else 32, n_boot=100, device="cpu"),
    out_dir=OUT / "compare",
)
head = result.summary["heads"][0]
for method, s in head["methods"].items():
    rho, agree = s["faithfulness"]["mean"], s["top_layer_agreement"]
    print(f"{method:>8}: faithfulness ρ {rho:+.2f}, top-layer agreement {agree:.0%}")
result  # noqa: B018 - a notebook displays the last expression of a cell

# %% [markdown]
# ## 5. One prediction, layer by layer

# %%
from laya_inspect.explain import explain_row  # noqa: E402

one = explain_row(OUT / "heads" / "laya" / "seed_0", store, row=0, n_steps=8, device="cpu")
print(f"row 0: label {one.label}, predicted {one.pred}")
for i, layer in enumerate(one.layer_names):
    effect = round(float(one.effects[i]), 4) + 0.0  # + 0.0: never print "-0.0000"
    print(f"  {layer}: α {one.scores['alpha'][i]:.3f}   LOLO effect {effect:+.4f}")

# %% [markdown]
# ## 6. One page to read
# `compare_heads` wrote `compare/report.html`; the fit-head folder gets its page here. Both open
# offline in any browser.

# %%
from laya_inspect.report import write_report_html  # noqa: E402

page = write_report_html(OUT / "heads")
print("open", page, "and", OUT / "compare" / "report.html")
store.close()
