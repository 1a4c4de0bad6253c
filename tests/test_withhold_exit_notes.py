"""early-exit on a text encoder's layers: hidden_states.0, its embeddings, costs no FLOPs (a table
lookup), and the fixed-depth table says so where it shows "FLOPs run 0.0%", in the terminal and in
report.html, rather than leaving a depth of zero cost unexplained."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pytest
from helpers import write_cache
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.head_dir import cache_identity, save_head
from laya_inspect.heads import LayaHead

runner = CliRunner()
ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
NAMES = ["hidden_states.0", "hidden_states.1", "hidden_states.2"]


@pytest.fixture(scope="module")
def text_cache(tmp_path_factory) -> Path:
    """Three 2-D layers named as a Hugging Face encoder's, the first its embeddings; the class is the
    sign of layer 2's first feature."""
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 200), ("test", 120)):
        feats = [rng.normal(size=(n, 2)).astype(np.float32) for _ in range(3)]
        splits[name] = (feats, (feats[1][:, 0] < 0).astype(np.int64))
    attrs = {"layer_roles": {"hidden_states.0": "embeddings"}}
    return write_cache(tmp_path_factory.mktemp("text") / "c.h5", splits, layer_names=NAMES, extra_attrs=attrs)


def test_a_layer_of_no_flops_is_said_to_cost_none_in_the_terminal_and_report(text_cache, tmp_path):
    with FeatureStore(text_cache) as store:
        head_dir = save_head(tmp_path / "head", LayaHead([2, 2, 2], 2, d_star=2).eval(), meta=cache_identity(store))
    out = tmp_path / "ee"
    args = ["early-exit", str(head_dir), "--cache", str(text_cache), "--seeds", "2", "--epochs", "2"]
    args += ["--thresholds", "5", "--costs", "shapes", "--device", "cpu", "--no-plots", "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "0.0%" in said  # the embeddings' row of the fixed-depth table
    note = "FLOPs run 0.0% at hidden_states.0: nothing up to it does multiply-adds (an embeddings layer is a table"
    assert note in said
    page = " ".join(html.unescape((out / "report.html").read_text()).split())
    assert note in page


def test_no_note_where_every_depth_runs_some_compute():
    from laya_inspect.beyond.scoring import no_flops_note

    assert no_flops_note({"compute_used_by_depth": {"features.1": 0.02, "features.2": 0.5}}) is None
    two = no_flops_note({"compute_used_by_depth": {"a": 0.0, "b": 0.0, "c": 1.0}})
    assert two is not None and two.startswith("FLOPs run 0.0% at a, b: nothing up to them")
