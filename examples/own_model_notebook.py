# %% [markdown]
# # Your own PyTorch model, straight from memory
#
# The path a Captum user reaches for: an `nn.Module` you already hold and DataLoaders you already
# have — no model spec, no dataset spec. Here a small convnet is trained on scikit-learn's digits
# with a plain PyTorch loop (stand-in for your trained model), then laya-inspect caches three of its
# layers, fits a LAYA head on them, and scores α against what removing each layer really does.
#
# What is explained is a LAYA head fitted on the frozen network's pooled layer outputs, not the
# network's own classifier. Run as a script (`python examples/own_model_notebook.py`) or as a
# notebook (`# %%` cells). `LAYA_EXAMPLE_OUT` picks the folder; `LAYA_EXAMPLE_QUICK=1` shrinks it.

# %%
import os
import shutil
from pathlib import Path

import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from laya_inspect import CompareConfig, FeatureStore, FitConfig, compare_heads, extract_features, fit_heads

OUT = Path(os.environ.get("LAYA_EXAMPLE_OUT", "laya-example-own-model"))
QUICK = os.environ.get("LAYA_EXAMPLE_QUICK") == "1"
if OUT.exists():
    shutil.rmtree(OUT)
OUT.mkdir(parents=True)
torch.manual_seed(0)

# %% [markdown]
# ## 1. A model and its data, as you have them

# %%
x, y = load_digits(return_X_y=True)
images = torch.tensor(x / 16.0, dtype=torch.float32).view(-1, 1, 8, 8)
labels = torch.tensor(y)
order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
train_rows, test_rows = order[:1400], order[1400:]
train_loader = DataLoader(TensorDataset(images[train_rows], labels[train_rows]), batch_size=64, shuffle=True)
test_loader = DataLoader(TensorDataset(images[test_rows], labels[test_rows]), batch_size=256)

model = nn.Sequential()
model.add_module("conv1", nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU()))
model.add_module("conv2", nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)))
model.add_module("conv3", nn.Sequential(nn.Conv2d(32, 32, 3, padding=1), nn.ReLU()))
model.add_module("pool", nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten()))
model.add_module("classifier", nn.Linear(32, 10))

optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for _epoch in range(3 if QUICK else 10):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(xb), yb).backward()
        optimizer.step()
model.eval()
with torch.no_grad():
    correct = sum(int((model(xb).argmax(1) == yb).sum()) for xb, yb in test_loader)
print(f"the model's own test accuracy {correct / len(test_rows):.3f}")

# %% [markdown]
# ## 2. Cache three layers from memory
# Any iterable of `(inputs, labels)` batches works; a dict names the splits. Convolutional maps
# are pooled to one vector per layer (global average), as `extract --pool auto` does.

# %%
cached = extract_features(
    model,
    {"train": DataLoader(train_loader.dataset, batch_size=256), "test": test_loader},
    layers=["conv1", "conv2", "conv3"],
    out=OUT / "features.h5",
)
print("cached", cached.layer_names, "widths", cached.widths, "pooled", cached.pooling, "rows", cached.rows)
store = FeatureStore(cached.path)
print(store.to_pandas("test").head())

# %% [markdown]
# ## 3. Fit LAYA and the last-layer baseline

# %%
fit = fit_heads(
    store,
    FitConfig(heads=("laya", "last"), seeds=(0,), epochs=10 if QUICK else 40, probe=not QUICK, device="cpu"),
    out_dir=OUT / "heads",
)
for h in fit.summary["heads"]:
    print(f"{h['head']:>5}: test accuracy {h['test_acc']['mean']:.3f}")

# %% [markdown]
# ## 4. Which layers does each prediction rely on — and per sample, as a DataFrame

# %%
result = compare_heads(
    [OUT / "heads" / "laya" / "seed_0"],
    store,
    CompareConfig(methods=("alpha", "ig", "random"), limit=150, n_steps=8, n_boot=100, device="cpu"),
    out_dir=OUT / "compare",
)
scores = result.to_pandas()
print(scores.groupby("layer")[["alpha", "ig", "effect"]].mean().round(3))
result  # noqa: B018 - a notebook displays the last expression of a cell
