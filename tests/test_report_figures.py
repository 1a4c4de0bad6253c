"""The captions of the page's figures (laya_inspect/report/figures.py)."""

import html
import re
from pathlib import Path

import numpy as np

from laya_inspect.cache.store import FeatureStore
from laya_inspect.report import write_report_html
from laya_inspect.training.fit_head import FitConfig, fit_heads
from tests.helpers import write_cache


def test_the_layer_weight_captions_name_the_split_fit_head_tested_on(tmp_path: Path) -> None:
    """fit-head --test-split valid: the page's layer-weight figures were captioned "on the test split",
    a split the heads never saw; they name the valid split, as the tables above them do."""
    rng = np.random.default_rng(0)
    y = np.arange(60) % 2
    feats = [rng.normal(size=(60, 4)) + y[:, None], rng.normal(size=(60, 3)) - y[:, None]]
    splits = {"train": ([f[:40] for f in feats], y[:40]), "valid": ([f[40:] for f in feats], y[40:])}
    cache = write_cache(tmp_path / "c.h5", splits)
    config = FitConfig(heads=("laya",), seeds=(0,), epochs=2, batch_size=16, probe=False, test_split="valid")
    with FeatureStore(cache) as store:
        fit_heads(store, config, out_dir=tmp_path / "heads")
    page = write_report_html(tmp_path / "heads").read_text(encoding="utf-8")
    captions = [html.unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", page, re.S)]
    weights = [c for c in captions if c.startswith("Mean weight per layer")]
    assert weights and all("on the valid split" in c for c in weights), captions
    by_class = [c for c in captions if c.startswith("Mean α by class")]
    assert by_class and all("of the valid split" in c for c in by_class), by_class
    assert not [c for c in captions if "test split" in c or "test rows" in c], captions


def test_the_profile_plots_name_the_split_fit_head_tested_on(tmp_path: Path, monkeypatch) -> None:
    """fit-head --test-split valid: the layer-weight bars' axis read "mean weight on the test split" and the
    class heatmaps' titles "test rows", inside the PNGs; they name the valid split, as the captions do."""
    import laya_inspect.training.plots as plots
    import laya_inspect.workers as workers

    rng = np.random.default_rng(0)
    y = np.arange(60) % 2
    feats = [rng.normal(size=(60, 4)) + y[:, None], rng.normal(size=(60, 3)) - y[:, None]]
    splits = {"train": ([f[:40] for f in feats], y[:40]), "valid": ([f[40:] for f in feats], y[40:])}
    cache = write_cache(tmp_path / "c.h5", splits)
    said: list[str] = []
    monkeypatch.setattr(workers, "plot_workers", lambda n: 1)  # drawn here, where the labels can be read
    monkeypatch.setattr(plots, "_save", lambda fig, stem, formats=(): said.extend(_texts(fig)) or {})
    config = FitConfig(heads=("laya",), seeds=(0, 1), epochs=2, batch_size=16, probe=False, test_split="valid")
    with FeatureStore(cache) as store:
        fit_heads(store, config, out_dir=tmp_path / "heads")
    assert any("mean weight on the valid split" in t for t in said), said
    assert any("valid rows" in t for t in said) and not [t for t in said if "test" in t], said


def _texts(fig) -> list[str]:
    return [t for ax in fig.axes for t in (ax.get_ylabel(), ax.get_title()) if t]
