"""`extract` end to end: real digits through the zoo MLP, hooks vs plain forward, resume after a kill."""

from __future__ import annotations

import os
import re
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from helpers import extract_args, settings_said
from typer.testing import CliRunner

from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.errors import CacheError, InputError
from laya_inspect.models import load_model

runner = CliRunner()


def _zoo_digits_checkpoint(path):
    from laya_inspect.models.zoo import build_zoo, save_zoo_checkpoint

    torch.manual_seed(0)
    model = build_zoo("mlp", in_shape=(1, 8, 8), num_classes=10)
    save_zoo_checkpoint(path, model, {})
    return path


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return _zoo_digits_checkpoint(tmp_path_factory.mktemp("zoo") / "mlp.pt")


def _not_chance(warnings):
    """``warnings`` less the one every cache of the untrained ``ckpt`` gets: it is at chance on digits."""
    return [w for w in warnings if not w.startswith("the model is near chance on its own task")]


def _config(ckpt, out, **kw):
    base = dict(model="zoo:mlp", weights=str(ckpt), data="digits", out=str(out), batch_size=64, device="cpu")
    return ExtractConfig(**{**base, **kw})


def test_extract_digits_complete_cache_reproduces_logits(ckpt, tmp_path):
    result = extract_features(_config(ckpt, tmp_path / "f.h5"))
    assert result.layer_names == ["blocks.0", "blocks.1", "blocks.2"]
    assert result.widths == [512, 256, 128]
    model = load_model("zoo:mlp", weights=str(ckpt))
    with FeatureStore(tmp_path / "f.h5") as store:
        assert store.attrs["complete"] and store.attrs["model_spec"] == "zoo:mlp"
        assert len(store.attrs["weights_sha256"]) == 64
        assert store.attrs["working_dir"] == os.getcwd()  # where a relative --data path was read from
        assert store.n("train") + store.n("test") == 1797
        assert store.class_names == [str(i) for i in range(10)]
        # The stored last block passed through the model's own classifier gives its logits.
        last = torch.from_numpy(store.layer("test", -1))
        with torch.no_grad():
            np.testing.assert_allclose(model.module.head(last).numpy(), store.logits("test"), rtol=1e-5, atol=1e-5)
        # And the stored logits are the plain forward of the same inputs.
        from laya_inspect.data import load_data

        data = load_data("digits", splits=("test",), input_spec=model.input_spec)
        x, y, idx = next(iter(data.splits["test"].batches(50)))
        with torch.no_grad():
            np.testing.assert_allclose(
                model.module(x).numpy(), store.logits("test", slice(0, 50)), rtol=1e-5, atol=1e-5
            )
        np.testing.assert_array_equal(store.labels("test", slice(0, 50)), y.numpy())


def test_float16_and_layer_subset(ckpt, tmp_path):
    extract_features(_config(ckpt, tmp_path / "f.h5", layers="blocks.0,-1", dtype="float16", splits=("test",)))
    with h5py.File(tmp_path / "f.h5") as f:
        assert f["test/layer_000"].dtype == np.float16
    with FeatureStore(tmp_path / "f.h5") as store:
        assert store.layer_names == ["blocks.0", "blocks.2"]
        assert store.splits == ["test"] and _not_chance(store.attrs["warnings"]) == []


def test_layers_named_out_of_depth_order_are_cached_in_depth_order_with_a_warning(ckpt, tmp_path):
    """QA: --layers blocks.2,blocks.0,blocks.1 was cached as given, so the last layer the 'last' head,
    the probes and early-exit read was blocks.1, not the deepest."""
    args = extract_args(ckpt, tmp_path / "f.h5", "--layers", "-1,blocks.0,1", "--split", "test", "--limit", "40")
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    said = "--layers blocks.2,blocks.0,blocks.1 named the layers out of depth order; they are kept in the order"
    assert said in result.output
    with FeatureStore(tmp_path / "f.h5") as store:
        assert store.layer_names == ["blocks.0", "blocks.1", "blocks.2"] and store.widths == [512, 256, 128]
        assert any(w.startswith(said) for w in store.attrs["warnings"])
        model = load_model("zoo:mlp", weights=str(ckpt))
        with torch.no_grad():  # the deepest layer is stored last: the model's classifier reads it
            logits = model.module.head(torch.from_numpy(store.layer("test", -1))).numpy()
        np.testing.assert_allclose(logits, store.logits("test"), rtol=1e-5, atol=1e-5)


def test_interrupted_run_resumes_to_identical_arrays(ckpt, tmp_path):
    full = tmp_path / "full.h5"
    extract_features(_config(ckpt, full, batch_size=100))
    part = tmp_path / "part.h5"
    calls = {"n": 0}

    def interrupt(event):
        if event["event"] == "batch":
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        extract_features(_config(ckpt, part, batch_size=100), progress=interrupt)
    with pytest.raises(CacheError, match="interrupted .*train: 300/1437 rows"):
        FeatureStore(part)
    result = extract_features(_config(ckpt, part, batch_size=64))  # another batch size may resume
    assert result.resumed_from["train"] == 300
    with FeatureStore(full) as a, FeatureStore(part) as b:
        for split in a.splits:
            for i in range(3):
                np.testing.assert_array_equal(a.layer(split, i), b.layer(split, i))
            np.testing.assert_array_equal(a.labels(split), b.labels(split))
    with pytest.raises(CacheError, match="already a complete cache"):
        extract_features(_config(ckpt, part))
    extract_features(_config(ckpt, part, overwrite=True, splits=("test",)))


_EDITED_NET = """
import os
import re
from pathlib import Path
from torch import nn


def build():  # the user's factory: which activation it builds is what they edit between runs
    act = nn.GELU() if os.environ.get("QA_NET_ACT") == "gelu" else nn.ReLU()
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), act, nn.Linear(32, 16), act, nn.Linear(16, 10))
"""


def test_resume_over_an_edited_model_with_the_same_weights_is_refused(tmp_path, monkeypatch):
    """QA: a python: model's code edited between a killed extract and its rerun (ReLU → GELU, the
    same --weights file) resumed silently: the cache mixed rows of two networks, exit 0. The rerun
    now recomputes the last rows on disk and refuses when they differ."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qa_edited_net.py").write_text(_EDITED_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    import qa_edited_net

    torch.manual_seed(0)
    torch.save(qa_edited_net.build().state_dict(), tmp_path / "net.pt")
    config = ExtractConfig(
        model="python:qa_edited_net:build", weights="net.pt", data="digits", out="f.h5", batch_size=100, device="cpu"
    )
    calls = {"n": 0}

    def interrupt(event):
        calls["n"] += event["event"] == "batch"
        if calls["n"] == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        extract_features(config, progress=interrupt)
    monkeypatch.setenv("QA_NET_ACT", "gelu")
    with pytest.raises(CacheError, match=r"rows 296–299 of split 'train' .* differ from the ones on disk"):
        extract_features(config)
    monkeypatch.setenv("QA_NET_ACT", "relu")  # the model as it was: the same rows, resumed
    assert extract_features(config).resumed_from["train"] == 300


_SHARED_NET = """
from collections import OrderedDict

from torch import nn


def build():  # one ReLU built once and used after each layer, as a user's net may
    act = nn.ReLU()
    parts = [("flat", nn.Flatten()), ("fc1", nn.Linear(64, 32)), ("act", act), ("fc2", nn.Linear(32, 16))]
    return nn.Sequential(OrderedDict([*parts, ("act2", act), ("out", nn.Linear(16, 10))]))
"""


def test_a_module_run_at_several_places_is_said_to_be_read_at_its_last(tmp_path, monkeypatch):
    """QA: a user's net that reuses one activation module after each layer (a ReLU built once), with
    --layers naming it, cached only its last run's output under that name, moved after the layer it
    followed there, with no word: the reader took it for the activation where it was named first."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qa_shared_net.py").write_text(_SHARED_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    import qa_shared_net

    torch.manual_seed(0)
    torch.save(qa_shared_net.build().state_dict(), tmp_path / "net.pt")

    def extract(out, layers):
        model, weights = "python:qa_shared_net:build", "net.pt"
        config = ExtractConfig(
            model=model, weights=weights, data="digits", out=out, layers=layers, limit=40, device="cpu"
        )
        return extract_features(config).warnings

    said = "layer(s) 'act' (2 times) ran more than once in one forward pass (one module used at several places)"
    assert any(w.startswith(said) for w in extract("f.h5", "fc1,act,fc2"))
    with FeatureStore(tmp_path / "f.h5") as store:
        assert store.layer_names == ["fc1", "fc2", "act"] and store.widths == [32, 16, 16]
        assert any(w.startswith(said) for w in store.attrs["warnings"])
    assert not any("more than once" in w for w in extract("g.h5", "fc1,fc2"))


def test_amp_is_said_in_the_cache_and_the_terminal_and_changes_the_fingerprint(ckpt, tmp_path):
    """--amp rows are not float32's: extract warns, the cache records the warning and its fingerprint
    differs from the float32 cache of the same options, so their heads are told apart."""
    outputs = {}
    for name, flags in [("f32", []), ("amp", ["--amp"])]:
        res = runner.invoke(app, extract_args(ckpt, tmp_path / f"{name}.h5", "--limit", "40", *flags))
        assert res.exit_code == 0, res.output
        outputs[name] = " ".join(res.output.split())
    assert "--amp" not in outputs["f32"]
    assert "warning: --amp: the backbone ran under bfloat16 autocast" in outputs["amp"]
    assert "Run extract without --amp for float32 features" in outputs["amp"]
    with FeatureStore(tmp_path / "f32.h5") as f32, FeatureStore(tmp_path / "amp.h5") as amp:
        assert amp.attrs["compute_dtype"] == "bfloat16 (autocast)" and f32.attrs["compute_dtype"] == "float32"
        assert not _not_chance(f32.attrs["warnings"])
        (said,) = _not_chance(amp.attrs["warnings"])
        assert said.startswith("--amp: the backbone ran under bfloat16 autocast") and "GPU" in said
        assert amp.fingerprint != f32.fingerprint
        assert not np.array_equal(amp.layer("test", -1), f32.layer("test", -1))  # the rows do differ


@pytest.mark.slow
def test_cli_extract_and_list_layers(ckpt, tmp_path):
    res = runner.invoke(
        app, ["extract", "--model", "zoo:mlp", "--weights", str(ckpt), "--data", "digits", "--list-layers"]
    )
    assert res.exit_code == 0, res.output
    assert "blocks.1" in res.output and "256" in res.output
    res = runner.invoke(
        app,
        extract_args(ckpt, tmp_path / "c.h5", "--limit", "40"),
    )
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())  # which rows and how stored, said beside the rows written
    given = f"settings given: weights {ckpt} · ≤ 40 rows per split · device cpu; "
    # the digits name no split: the test rows drawn from them are said (QA: "splits train,test" alone read
    # as the data's own split)
    drawn = "(the data name no split: test drawn stratified, 20% of 1,797 rows, seed 0)"
    left = (
        "left at their defaults: layers all · pooling auto (the table says each layer's) · image size 8 "
        "(the images' own) · images read as greyscale (1 channel) · no normalisation (the model was trained "
        f"on inputs scaled to [0, 1] without mean/std) · splits train,test {drawn} · seed 0 · "
        "forward in float32 · stored as float32"
    )
    assert given + left in said
    with FeatureStore(tmp_path / "c.h5") as store:
        assert store.n("train") == 40 and store.n("test") == 40


def test_cli_extract_settings_line_states_every_setting_given(ckpt, tmp_path):
    """QA: --layers, --split, --seed and --dtype given read "settings, all left at their defaults: seed 0
    · stored as float32" (only the seed and dtype were looked at): the line says what shaped the cache."""
    args = ["--layers", "blocks.1", "--split", "test", "--seed", "3", "--dtype", "float16", "--allow-nonfinite"]
    res = runner.invoke(app, extract_args(ckpt, tmp_path / "c.h5", *args), env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    given, left = settings_said(res.output).removeprefix("settings given: ").split("; left at their defaults: ")
    assert given.split(" · ") == [
        f"weights {ckpt}",
        "layers blocks.1",  # one style: each setting in words, as fit's and compare's lines
        "NaN/inf activations kept",
        "splits test (the data name no split: test drawn stratified, 20% of 1,797 rows, seed 3)",
        "seed 3",
        "stored as float16",
        "device cpu",
    ]
    # --pool auto: each layer's pooling is in the table below; the 8-px digits reach the MLP as they are
    assert left.split(" · ") == [
        "pooling auto (the table says each layer's)",
        "image size 8 (the images' own)",
        "images read as greyscale (1 channel)",
        "no normalisation (the model was trained on inputs scaled to [0, 1] without mean/std)",
        "every row",
        "forward in float32",
    ]
    with FeatureStore(tmp_path / "c.h5") as store:
        assert store.layer_names == ["blocks.1"] and store.splits == ["test"]


@pytest.fixture(scope="module")
def small_photos(tmp_path_factory):
    """32-px photos in an image folder, as CIFAR's: smaller than the 224 px MobileNetV2 takes."""
    from PIL import Image

    root = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for label in ("cat", "dog"):
            (root / split / label).mkdir(parents=True)
            for i in range(2):
                pixels = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / label / f"{i}.png")
    return root


@pytest.mark.parametrize(
    "extra, given, left",
    [
        # QA: 32-px images went in at 224 px with no word; "pooling mean" stood over a table saying "none"
        (["--layers", "features.18,classifier.1", "--pool", "mean"],
         ["pooling mean on 1 of 2 layers (the table says each)"], ["image size 224 (the model's)"]),
        (["--layers", "-1", "--image-size", "64"], ["image size 64"], []),
        (["--layers", "features.18", "--pool", "max"], ["pooling max"], ["image size 224 (the model's)"]),
    ],
)  # fmt: skip
def test_cli_extract_states_the_image_size_and_pooling_used(small_photos, tmp_path, extra, given, left):
    args = ["extract", "--model", "torchvision:mobilenet_v2", "--random-init", "--data", f"imagefolder:{small_photos}"]
    args += ["--limit", "2", "--device", "cpu", "--out", str(tmp_path / "c.h5"), *extra]
    res = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    said_given, said_left = settings_said(res.output).split("; left at their defaults: ")
    assert [g for g in given if g not in said_given.split(" · ")] == [], res.output
    assert [x for x in left if x not in said_left.split(" · ")] == [], res.output
    assert "image size" in said_given + said_left and "pooling mean ·" not in said_given + " ·", res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--layers", "blocks.7"], "did you mean"),
        (["--model", "zoo:mpl"], "mlp"),
        (["--model", "nosuch:thing"], "available"),
        (["--data", "digts"], "digits"),
        (["--split", "train,valid"], "valid"),
        (["--dtype", "float64"], "float32"),
        (["--pool", "median"], "median"),
        (["--resize", "pad"], "resize must be one of stretch, crop"),
    ],
)
def test_cli_errors_are_one_line_exit_1(ckpt, tmp_path, args, message):
    base = {
        "--model": "zoo:mlp",
        "--weights": str(ckpt),
        "--data": "digits",
        "--out": str(tmp_path / "e.h5"),
        "--device": "cpu",
    }
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    argv = ["extract"] + [x for kv in base.items() for x in kv]
    if base["--model"] != "zoo:mlp":
        argv = [a for a in argv]  # weights of the zoo mlp are irrelevant to an unknown model name
    res = runner.invoke(app, argv)
    assert res.exit_code == 1, res.output
    assert message in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("suffix", ["partial", "shards"])
def test_an_out_named_like_extracts_own_working_files_is_refused_and_nothing_is_written(ckpt, tmp_path, suffix):
    # a complete cache at X.h5.partial would be read as an interrupted extraction of X.h5: resumed from, or
    # deleted; a cache at X.h5.shards, where torchrun keeps X.h5's shards, stopped every later extract of
    # X.h5 (--overwrite too) with "X.h5.shards/manifest.json cannot be read (Not a directory)"
    out = tmp_path / f"x.h5.{suffix}"
    res = runner.invoke(app, extract_args(ckpt, out, "--limit", "40"), env={"COLUMNS": "300"})
    assert res.exit_code == 1, res.output
    assert f"'.{suffix}'" in res.output and "Traceback" not in res.output
    assert list(tmp_path.iterdir()) == []
    res = runner.invoke(app, extract_args(ckpt, tmp_path / "x.h5", "--limit", "40"), env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output  # so the cache it names can still be written
    batches = [(torch.zeros(4, 2), torch.zeros(4))]
    with pytest.raises(InputError, match=suffix):  # the notebook path too
        extract_features(torch.nn.Sequential(torch.nn.Linear(2, 2)), batches, layers=["0"], out=out)


@pytest.mark.parametrize("out", [".", ".."])
def test_an_out_with_no_name_of_its_own_is_refused_as_a_folder(ckpt, tmp_path, monkeypatch, out):
    # `extract --out .` ended in a traceback (ValueError: PosixPath('.') has an empty name) from the
    # check of the names extract keeps beside a cache, before the folder check could say what was wrong
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    res = runner.invoke(app, extract_args(ckpt, out, "--limit", "40", "--overwrite"), env={"COLUMNS": "300"})
    assert res.exit_code == 1, res.output
    assert isinstance(res.exception, SystemExit), res.exception  # no traceback
    assert f"--out {out} is a folder" in res.output
    assert list((tmp_path / "work").iterdir()) == []


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_users_file_where_the_shards_folder_goes_is_refused_in_one_line_and_kept(ckpt, tmp_path, overwrite):
    # a file at X.h5.shards stopped extract of X.h5 with "X.h5.shards/manifest.json cannot be read
    # (Not a directory); pass --overwrite to start again", which --overwrite did not mend
    shards = tmp_path / "x.h5.shards"
    shards.write_text("my notes")
    argv = extract_args(ckpt, tmp_path / "x.h5", "--limit", "40", *(["--overwrite"] if overwrite else []))
    res = runner.invoke(app, argv, env={"COLUMNS": "300"})
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.split())
    assert f"{shards} is a file" in said and "move it away yourself" in said, said
    assert "--overwrite to start again" not in said and "Traceback" not in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.h5.shards"] and shards.read_text() == "my notes"


def test_a_symlink_where_the_shards_folder_goes_is_refused_and_its_folder_kept(ckpt, tmp_path):
    # a link X.h5.shards to a user's folder was accepted: a torchrun extract wrote its shards through it
    # into that folder, and --overwrite's clean-up (rmtree of a link) silently did nothing
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    shards = tmp_path / "x.h5.shards"
    shards.symlink_to(mine, target_is_directory=True)
    res = runner.invoke(
        app, extract_args(ckpt, tmp_path / "x.h5", "--limit", "40", "--overwrite"), env={"COLUMNS": "300"}
    )
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.split())
    assert f"{shards} is a symlink (to {mine})" in said and "move it away yourself" in said, said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "x.h5.shards"] and shards.is_symlink()
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def test_the_default_resize_is_recorded_as_stretch_so_either_resumes_the_other(ckpt, tmp_path):
    default, chosen = _config(ckpt, tmp_path / "c.h5"), _config(ckpt, tmp_path / "c.h5", resize="stretch")
    assert default.resize is None and default.identity() == chosen.identity()
    crop = _config(ckpt, tmp_path / "c.h5", resize="crop")
    assert default.identity()["resize"] == "stretch" != crop.identity()["resize"]


def test_auto_pools_an_mlp_mixers_patches_by_their_mean_and_a_vits_by_its_class_token(tmp_path):
    """MLP-Mixer's blocks give 14 × 14 patch tokens and no class token: auto took the top-left patch.
    A ViT with 4 registers and no class token, pooled by the mean, put a register in token 0."""
    from helpers import need_timm_model

    for name, want in (("mixer_s16_224", "mean"), ("test_vit", "cls"), ("vit_little_patch16_reg4_gap_256", "mean[4:]")):
        need_timm_model(name)
        out = tmp_path / f"{name}.h5"
        config = ExtractConfig(
            model=f"timm:{name}", random_init=True, data="digits", limit=4, splits=("test",), out=str(out), device="cpu"
        )
        extract_features(config)
        with FeatureStore(out) as store:
            assert set(store.attrs["layer_pooling"]) == {want}, name


def test_a_timm_vit_pooled_by_the_mean_is_pooled_as_its_own_head_pools_it():
    """timm's head averages a ViT's tokens after its class and register tokens (num_prefix_tokens):
    auto's mean over all 260 tokens of vit_little_patch16_reg4_gap_256 took its 4 registers in."""
    from helpers import need_timm_model

    from laya_inspect.layers import pool

    need_timm_model("vit_little_patch16_reg4_gap_256")
    loaded = load_model("timm:vit_little_patch16_reg4_gap_256", random_init=True)
    vit, seen = loaded.module, []
    handle = vit.blocks[-1].register_forward_hook(lambda m, i, o: seen.append(o))
    with torch.no_grad():
        vit(torch.randn(2, 3, 256, 256))
        own = vit.pool(seen[0])
    handle.remove()
    rows, decided = pool(seen[0], "auto", sequence=loaded.sequence_pool, image_hw=(256, 256))
    assert decided == "mean[4:]"
    torch.testing.assert_close(rows, own)
    assert not torch.allclose(pool(seen[0], "mean")[0], own, atol=1e-3)


def test_usage_error_exits_2():
    res = runner.invoke(app, ["extract", "--batch-size", "many"])
    assert res.exit_code == 2


def _stopped_extract(args, monkeypatch, where):
    """`extract` through the command line with Ctrl-C raised at ``where``: before the cache file is made
    (while the model and data load) or at the first rows, before any is written."""
    import laya_inspect.cache.extract as extract_module
    from laya_inspect.cache.writer import FeatureWriter

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    if where == "prepare":
        monkeypatch.setattr(extract_module, "prepare", ctrl_c)
    else:
        monkeypatch.setattr(FeatureWriter, "append", ctrl_c)
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    monkeypatch.undo()
    assert result.exit_code == 130 and "Traceback" not in result.output, result.output
    return result.stderr.strip().splitlines()[-1]  # after the progress line


def test_ctrl_c_before_any_row_says_nothing_was_written_and_what_is_on_disk(ckpt, tmp_path, monkeypatch):
    """QA: Ctrl-C while the model loaded said "the rows written so far are kept in the cache's .partial
    file" when there were none and no file."""
    from laya_inspect.cache.writer import FeatureWriter
    from laya_inspect.cli.app import INTERRUPTED

    out = tmp_path / "f.h5"
    args = extract_args(ckpt, out, "--split", "test", "--limit", "40")
    said = _stopped_extract(args, monkeypatch, "prepare")
    assert said == "interrupted: no row was written and no file was made; run the same command again", said
    assert sorted(p.name for p in tmp_path.iterdir()) == []

    said = _stopped_extract(args, monkeypatch, "append")
    partial = tmp_path / "f.h5.partial"
    assert said == (
        f"interrupted: no row was written: {partial} holds the cache's layout and no rows; run the same "
        "command again to start from the first row, or pass --overwrite to start with other options"
    ), said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.h5.partial"]
    with h5py.File(partial, "r") as f:
        assert int(f["test"].attrs["n_written"]) == 0
    assert runner.invoke(app, args).exit_code == 0  # as said: the same command starts it
    assert sorted(p.name for p in tmp_path.iterdir()) == [".f.h5.laya-inspect.json", "f.h5"]  # and its record

    before = out.read_bytes()  # --overwrite stopped before any row: the earlier cache is untouched
    said = _stopped_extract([*args, "--overwrite"], monkeypatch, "append")
    assert said.endswith(
        f"holds the cache's layout and no rows; {out}, the earlier cache, is as it was; run the same command "
        "again to start from the first row, or pass --overwrite to start with other options"
    ), said
    assert out.read_bytes() == before

    append, calls = FeatureWriter.append, []  # rows on disk, then stopped: the line that says they are kept

    def second_batch(self, *a, **kw):
        calls.append(1)
        if len(calls) == 2:
            self.flush()
            raise KeyboardInterrupt
        return append(self, *a, **kw)

    monkeypatch.setattr(FeatureWriter, "append", second_batch)
    result = runner.invoke(app, extract_args(ckpt, tmp_path / "g.h5", "--split", "test", "--batch-size", "8"))
    monkeypatch.undo()
    assert result.exit_code == 130, result.output
    assert result.stderr.strip().splitlines()[-1] == f"interrupted: {INTERRUPTED['extract']}"


def test_ctrl_c_after_the_cache_is_in_place_says_it_is_complete(ckpt, tmp_path, monkeypatch):
    """Review: a stop after the new cache was renamed into place (--overwrite's clean-up) said "no row
    was written and no file was made; FILE, the earlier cache, is as it was"."""
    import laya_inspect.cache.extract as extract_module

    out = tmp_path / "f.h5"
    args = extract_args(ckpt, out, "--split", "test", "--limit", "40")
    assert runner.invoke(app, args).exit_code == 0

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(extract_module, "drop_stale_shards", ctrl_c)
    result = runner.invoke(app, [*args, "--overwrite"], env={"COLUMNS": "300"})
    monkeypatch.undo()
    assert result.exit_code == 130, result.output
    said = result.stderr.strip().splitlines()[-1]
    assert said == f"interrupted: {out} was written whole before the stop: every row is in it, ready to use", said


def test_ctrl_c_while_extract_starts_does_not_say_rows_were_kept(ckpt, tmp_path, monkeypatch):
    """QA: Ctrl-C while the command loaded its modules and set its threads (before the model loads) said
    "the rows written so far are kept in the cache's .partial file" when there was none."""
    import laya_inspect.runtime as runtime

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runtime, "set_threads", ctrl_c)
    out = tmp_path / "f.h5"
    result = runner.invoke(app, extract_args(ckpt, out, "--split", "test", "--limit", "40"))
    monkeypatch.undo()
    said = result.stderr.strip().splitlines()[-1]
    assert result.exit_code == 130 and "Traceback" not in result.output, result.output
    assert said == "interrupted: no row was written and no file was made; run the same command again", said
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("folder", ["x.h5.shards", "x.h5.shards.partial", "x.h5.shards.old"])
def test_a_users_file_inside_a_shards_folder_is_refused_and_kept_by_overwrite(ckpt, tmp_path, folder):
    # --overwrite removed a cache's shards folder whole (rmtree), a user's notes saved in it included;
    # a folder holding a file extract does not write is now refused, named, and left as it is
    shards = tmp_path / folder
    shards.mkdir()
    (shards / "notes.txt").write_text("my notes")
    res = runner.invoke(
        app, extract_args(ckpt, tmp_path / "x.h5", "--limit", "40", "--overwrite"), env={"COLUMNS": "300"}
    )
    assert res.exit_code == 1, res.output
    said = " ".join(res.output.split())
    assert f"{shards} is a folder holding notes.txt" in said and "move it away yourself" in said, said
    assert (shards / "notes.txt").read_text() == "my notes" and not (tmp_path / "x.h5").exists()


_NUMBERED_NET = """
import os
import re
from pathlib import Path

import torch
from torch import nn


def build():  # a classifier of 5 classes whose class k is the data's class SHIFT (or of WIDTH classes)
    width, shift = int(os.environ.get("QA_WIDTH", "5")), int(os.environ.get("QA_SHIFT", "0"))
    head = nn.Linear(5, width, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.roll(torch.eye(width, 5), shift, dims=0))
    return nn.Sequential(nn.Identity(), head)
"""


@pytest.mark.parametrize(
    ("width", "shift", "said"),
    [
        (5, 0, None),
        (5, 1, r"near chance on its own task: .* on 0 of 80 train rows \(0\.000, the majority class's share 0\.200\)"),
        (10, 0, r"gives 10 logits per row and the data has 5 classes"),
    ],
)
def test_logits_in_another_class_numbering_than_the_labels_are_warned_of_and_recorded(
    tmp_path, monkeypatch, width, shift, said
):
    """QA: a model whose classes are not the data's (another order, another count) had its logits cached
    as "the frozen model's own logits" beside labels they do not score (0.07 top-logit accuracy), without
    a word. extract now warns, and the cache's warnings record it; logits that agree with the labels do not."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qa_numbered_net.py").write_text(_NUMBERED_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("QA_WIDTH", str(width))
    monkeypatch.setenv("QA_SHIFT", str(shift))
    import qa_numbered_net

    torch.save(qa_numbered_net.build().state_dict(), tmp_path / "net.pt")
    y = {s: np.arange(n) % 5 for s, n in (("train", 80), ("test", 40))}
    x = {f"X_{s}": np.eye(5, dtype=np.float32)[v] for s, v in y.items()}
    np.savez(tmp_path / "d.npz", **x, **{f"y_{s}": v for s, v in y.items()}, class_names=np.array(list("abcde")))
    config = ExtractConfig(
        model="python:qa_numbered_net:build", weights="net.pt", data="npz:d.npz", layers="0", out="c.h5",
        batch_size=16, device="cpu", splits=("train",),
    )  # fmt: skip
    result = extract_features(config)
    with FeatureStore(tmp_path / "c.h5") as store:
        recorded = list(store.attrs.get("warnings") or [])
    numbering = [w for w in result.warnings if "class numbering" in w]
    if said is None:
        assert numbering == [] and not any("class numbering" in w for w in recorded)
    else:
        assert len(numbering) == 1 and re.search(said, numbering[0]), result.warnings
        assert numbering[0] in recorded


CIFAR_JPEG = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "cifar10-jpeg.tar.gz"


@pytest.fixture(scope="module")
def cifar_jpegs(tmp_path_factory):
    """Two real CIFAR-10 JPEGs per class and split, airplane and cat, in an image folder (32 px, square)."""
    import tarfile

    if not CIFAR_JPEG.is_file():
        pytest.skip(f"{CIFAR_JPEG} is absent (../shared/data/README.md)")
    root, kept = tmp_path_factory.mktemp("cifar"), {}
    with tarfile.open(CIFAR_JPEG) as tar:
        for member in tar:
            parts = Path(member.name).parts[-3:]
            if not member.isfile() or len(parts) < 3 or parts[1] not in ("airplane", "cat"):
                continue
            if parts[0] in ("train", "test") and kept.get(parts[:2], 0) < 2:
                kept[parts[:2]] = kept.get(parts[:2], 0) + 1
                (root / parts[0] / parts[1]).mkdir(parents=True, exist_ok=True)
                (root / Path(*parts)).write_bytes(tar.extractfile(member).read())
            if len(kept) == 4 and min(kept.values()) == 2:
                break
    return root


def test_cli_extract_says_and_records_every_default_that_shapes_the_rows(cifar_jpegs, tmp_path):
    """QA: extract --model torchvision:mobilenet_v2 --weights W --data imagefolder:DIR --image-size 96 named
    no resize, no normalisation beside the settings, and not the device: the stretch, the ImageNet mean/std
    (torchvision's preset for the architecture, which the user's own weights need not share) and the device
    are said left at their defaults, and the cache records which options were left at them."""
    import torchvision

    weights = tmp_path / "mnv2.pt"
    torch.save(torchvision.models.mobilenet_v2(num_classes=2).state_dict(), weights)
    args = ["extract", "--model", "torchvision:mobilenet_v2", "--weights", str(weights), "--image-size", "48"]
    args += ["--data", f"imagefolder:{cifar_jpegs}", "--layers", "-1", "--out", str(tmp_path / "c.h5")]
    res = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    given, left = settings_said(res.output).split("; left at their defaults: ")
    left_items = left.split(" · ")
    assert "resize stretch (straight to the size)" in left_items, res.output
    assert "images read as RGB (3 channels)" in left_items, res.output
    norm = [x for x in left_items if x.startswith("normalize ")]
    assert norm == [
        "normalize mean 0.485,0.456,0.406 / std 0.229,0.224,0.225 (the model's: its architecture's preset, "
        "assumed for --weights; --normalize if trained otherwise)"
    ], res.output
    assert "device cpu (auto)" in left_items or "device cuda (auto)" in left_items, res.output
    assert "forward in float32" in left_items and "image size 48" in given.split(" · "), res.output
    with FeatureStore(tmp_path / "c.h5") as store:
        assert {"resize", "normalize", "device", "amp", "pool", "batch_size"} <= set(store.attrs["config_defaults"])
        assert "image_size" not in store.attrs["config_defaults"]
        # where it writes and whether it may replace a cache shape no row: a rerun with --overwrite
        # writes the same attributes
        assert not {"out", "overwrite"} & set(store.attrs["config_defaults"])
        assert store.attrs["device"] in ("cpu", "cuda:0", "cuda") and store.attrs["batch_size"] >= 1
