"""report.html says how the cached features were made: the layers with their pooling, and the inputs
(image size, resize fit, colour, normalisation and where it came from; a text cache's tokenizer and
token limit), from the cache's attributes, or from what the summary kept of them once the cache is gone."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from laya_inspect.beyond.config import DiagnoseConfig
from laya_inspect.beyond.diagnose import diagnose_heads
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.compare.run import CompareConfig, compare_heads
from laya_inspect.report import write_report_html
from laya_inspect.report.beyond import write_beyond_report
from laya_inspect.report.cached import inputs_fact, layers_fact
from laya_inspect.report.html import cache_facts
from laya_inspect.training.fit_head import FitConfig, fit_heads

runner = CliRunner()

DIGITS_LAYERS = "blocks.0, blocks.1, blocks.2; pooling none"
# the digits are 8×8, the zoo MLP takes 28×28 unnormalised: extract's defaults stretch them and normalise nothing
DIGITS_INPUTS = (
    "image 28×28; resized from 8×8 by stretch (straight to the size) (default); read as greyscale (1 channel); "
    "scaled /16 (values 0..16); no normalisation (the model was trained on inputs scaled to [0, 1] without "
    "mean/std) (default)"
)


def facts_of(page: Path) -> dict[str, list[str]]:
    """The provenance facts a page shows, key → every value given under it."""
    out: dict[str, list[str]] = {}
    for key, value in re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", page.read_text(encoding="utf-8"), flags=re.S):
        out.setdefault(html.unescape(key), []).append(html.unescape(value))
    return out


@pytest.fixture(scope="module")
def digits_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real digits cache through the demo's backbone (zoo:mlp, random weights: the facts do not depend on
    training), one fit-head folder and one compare folder read on it."""
    root = tmp_path_factory.mktemp("facts")
    cache = root / "digits.h5"
    args = ["extract", "--model", "zoo:mlp", "--random-init", "--data", "digits", "--limit", "100"]
    result = runner.invoke(app, [*args, "--device", "cpu", "--out", str(cache)])
    assert result.exit_code == 0, result.output
    config = FitConfig(heads=("laya",), seeds=(0,), epochs=2, lr=1e-2, batch_size=32, probe=False)
    with FeatureStore(cache) as store:
        fit_heads(store, config, out_dir=root / "heads")
        compare_heads(
            [root / "heads" / "laya" / "seed_0"],
            store,
            CompareConfig(methods=("alpha",), limit=40, n_boot=0, plots=False, sanity=False),
            out_dir=root / "compare",
        )
        diagnose_heads(
            [root / "heads" / "laya" / "seed_0"],
            store,
            DiagnoseConfig(n_boot=0, plots=False, device="cpu"),
            out_dir=root / "diagnose",
        )
    write_report_html(root / "heads")
    folders = {"heads": root / "heads", "compare": root / "compare", "diagnose": root / "diagnose"}
    return {"root": root, "cache": cache, **folders}


def test_fit_and_compare_pages_say_the_layers_and_inputs_of_the_cache(digits_runs: dict[str, Any]) -> None:
    for folder in (digits_runs["heads"], digits_runs["compare"]):
        facts = facts_of(folder / "report.html")
        assert facts["layers"] == [DIGITS_LAYERS], folder
        assert facts["inputs"] == [DIGITS_INPUTS], folder


def test_compare_summary_records_where_the_normalisation_came_from(digits_runs: dict[str, Any]) -> None:
    cache = json.loads((digits_runs["compare"] / "summary.json").read_text())["cache"]
    with FeatureStore(digits_runs["cache"]) as store:
        assert cache["transforms"] == store.attrs["transforms"]
        assert cache["layer_pooling"] == store.attrs["layer_pooling"]
    assert cache["transforms"]["normalize"]["from"] == "model: none"


def test_the_pages_say_them_from_the_summary_once_the_cache_is_gone(
    digits_runs: dict[str, Any], tmp_path: Path
) -> None:
    moved = tmp_path / "elsewhere.h5"
    digits_runs["cache"].rename(moved)
    try:
        for folder in (digits_runs["heads"], digits_runs["compare"]):
            write_report_html(folder)
            facts = facts_of(folder / "report.html")
            assert "not read" in facts["cache file"][0], folder
            assert facts["layers"] == [DIGITS_LAYERS], folder
            # the summaries keep the transforms and which extract options were left at their defaults
            assert facts["inputs"] == [DIGITS_INPUTS], folder
    finally:
        moved.rename(digits_runs["cache"])


def test_prune_early_exit_and_diagnose_pages_say_them_from_their_summary_once_the_cache_is_gone(
    digits_runs: dict[str, Any], tmp_path: Path
) -> None:
    """QA: the prune, early-exit and diagnose pages gave cache_facts nothing but the fingerprint, so once
    the cache was gone their layers and inputs lines disappeared. Their summaries keep the cache's
    pooling, transforms and the extract options left at their defaults, so the "(default)" marks stay."""
    folder = digits_runs["diagnose"]
    cache = json.loads((folder / "summary.json").read_text())["cache"]
    with FeatureStore(digits_runs["cache"]) as store:
        assert cache["transforms"] == store.attrs["transforms"]
        assert cache["config_defaults"] == store.attrs["config_defaults"]
    moved = tmp_path / "elsewhere.h5"
    digits_runs["cache"].rename(moved)
    try:
        write_beyond_report(folder)
        facts = facts_of(folder / "report.html")
        assert "not read" in facts["cache file"][0]
        assert facts["layers"] == [DIGITS_LAYERS] and facts["inputs"] == [DIGITS_INPUTS]
    finally:
        moved.rename(digits_runs["cache"])


def test_a_text_cache_says_its_pooling_per_layer_its_tokenizer_and_its_token_limit(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from helpers import tiny_bert

    from laya_inspect.cache.extract import ExtractConfig, extract_features

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "good", "bad"]
    tiny_bert(tmp_path, vocab, layers=2, max_position_embeddings=64)
    texts = ["the cat", "good", "bad cat", "a good cat", "the bad cat", "a cat", "good good", "bad"]
    rows = "".join(f'"{t}",{i % 2},{"test" if i >= 4 else "train"}\n' for i, t in enumerate(texts))
    (tmp_path / "t.csv").write_text("text,label,split\n" + rows)
    out = tmp_path / "t.h5"
    extract_features(ExtractConfig(model=f"hf:{tmp_path / 'model'}", data=f"csv:{tmp_path / 't.csv'}", out=str(out)))
    facts = dict(cache_facts(str(out), []))
    # the default pooling: the embeddings' mean over the tokens after [CLS], each block's [CLS] token
    assert facts["layers"] == (
        "hidden_states.0, hidden_states.1, hidden_states.2; pooling mean[1:] (hidden_states.0), "
        "cls (hidden_states.1, hidden_states.2)"
    )
    with FeatureStore(out) as store:
        sha = store.attrs["transforms"]["sha256"]
    assert facts["inputs"] == (
        f"text, tokenizer BertTokenizer ({tmp_path / 'model'}, sha256 {sha}); token limit 64, "
        "longer texts truncated; padding longest"
    )


def test_many_layers_are_named_by_their_ends_with_their_count() -> None:
    names = [f"hidden_states.{i}" for i in range(13)]
    assert layers_fact(names, ["mean[1:]"] + ["cls"] * 12) == (
        "13 layers: hidden_states.0, hidden_states.1, hidden_states.2, …, hidden_states.11, hidden_states.12; "
        "pooling mean[1:] (hidden_states.0), cls (hidden_states.1 … hidden_states.12, 12 layers)"
    )
    assert layers_fact(names[:2], None) == "hidden_states.0, hidden_states.1; pooling not recorded"


def test_a_torchvision_preset_read_with_your_own_weights_is_said_to_be_assumed() -> None:
    """A torchvision or timm model's mean/std belong to its architecture: with --weights given (absent from
    ``config_defaults``) they are an assumption about those weights, as extract's settings line says."""
    norm = {"applied": True, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "from": "model"}
    transforms = {"kind": "image", "output": [3, 224, 224], "normalize": norm}
    said = "normalize mean [0.485, 0.456, 0.406] / std [0.229, 0.224, 0.225]"
    given = ["layers", "normalize"]  # --weights given
    assert inputs_fact(transforms, given, "torchvision:resnet18").endswith(
        f"{said} (the model's: its architecture's preset, assumed for --weights) (default)"
    )
    assert inputs_fact(transforms, [*given, "weights"], "torchvision:resnet18").endswith(
        f"{said} (the model's mean/std) (default)"
    )
    assert inputs_fact(transforms, given, "hf:model").endswith(f"{said} (the model's mean/std) (default)")
