"""Head directories: written whole or not at all, read back with identical logits, and every kind of
damage (missing, truncated, random or mismatched files) refused in one line that names the folder."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cache
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.errors import CacheError, InputError, NotFoundError
from laya_inspect.head_dir import load_head, read_head_config, save_head
from laya_inspect.head_dir.checks import KWARG_RULES
from laya_inspect.heads import HEADS, build_head

runner = CliRunner()
ENV = {"COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
WIDTHS = [3, 5]


def _head(kind: str = "laya", seed: int = 0):
    torch.manual_seed(seed)
    return build_head(kind, WIDTHS, 4, d_star=6, tau=0.9, psi="mlp")


def _inputs() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return [torch.randn(9, w, generator=gen) for w in WIDTHS]


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    return save_head(tmp_path / "head", _head(), meta={"trained_by": "test"})


def _siblings(d: Path) -> list[str]:
    return sorted(p.name for p in d.parent.iterdir() if p.name != d.name)


@pytest.mark.parametrize("kind", HEADS.names())
def test_save_then_load_gives_identical_logits(tmp_path: Path, kind: str) -> None:
    head = _head(kind).eval()
    d = save_head(tmp_path / kind, head, meta={"seed": np.int64(3), "score": float("nan"), "kind": "not this"})
    loaded, config = load_head(d)
    with torch.no_grad():
        torch.testing.assert_close(loaded(_inputs()).logits, head(_inputs()).logits, rtol=0, atol=0)
    # meta cannot replace the keys that rebuild the head; numpy and NaN become plain JSON
    assert (config["kind"], config["seed"], config["score"]) == (kind, 3, None)
    assert sorted(p.name for p in d.iterdir()) == [".laya-inspect.json", "config.json", "weights.pt"]
    assert _siblings(d) == []  # no temporary folder left beside it


def test_standardisation_buffers_travel_with_the_head(tmp_path: Path) -> None:
    torch.manual_seed(0)
    head = build_head("laya", WIDTHS, 4, d_star=6, standardize="feature").eval()
    head.set_standardization([torch.full((w,), 0.5) for w in WIDTHS], [torch.full((w,), 2.0) for w in WIDTHS])
    loaded, _ = load_head(save_head(tmp_path / "std", head, meta={}))
    with torch.no_grad():
        torch.testing.assert_close(loaded(_inputs()).logits, head(_inputs()).logits, rtol=0, atol=0)


def test_extra_files_are_written_inside_the_same_rename(tmp_path: Path) -> None:
    d = save_head(
        tmp_path / "h",
        _head(),
        meta={},
        files={
            "metrics.json": lambda p: p.write_text('{"test_acc": 1.0}'),
            "train_log.csv": lambda p: p.write_text(""),
        },
    )
    assert sorted(p.name for p in d.iterdir()) == [
        ".laya-inspect.json",
        "config.json",
        "metrics.json",
        "train_log.csv",
        "weights.pt",
    ]


def test_a_failed_save_leaves_the_previous_head_whole(saved: Path) -> None:
    before = {p.name: p.read_bytes() for p in saved.iterdir()}

    def fail(path: Path) -> None:
        raise InputError("stop here")

    with pytest.raises(InputError, match="stop here"):
        save_head(saved, _head(seed=1), meta={}, files={"metrics.json": fail})
    assert {p.name: p.read_bytes() for p in saved.iterdir()} == before
    assert _siblings(saved) == []


KILL_MID_SAVE = """
import os, signal, sys, torch
from laya_inspect.head_dir import save_head
from laya_inspect.heads import build_head
torch.manual_seed(1)
head = build_head("laya", [3, 5], 4, d_star=6)
def die(path):  # config.json and weights.pt are written by now
    os.kill(os.getpid(), signal.SIGKILL)
save_head(sys.argv[1], head, meta={}, files={"metrics.json": die})
"""


def test_a_killed_save_leaves_the_previous_head_and_the_next_save_cleans_up(saved: Path) -> None:
    before = load_head(saved)[0]
    proc = subprocess.run([sys.executable, "-c", KILL_MID_SAVE, str(saved)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert any(".tmp-" in n for n in _siblings(saved))  # the half-written folder, under its temporary name
    after = load_head(saved)[0]
    with torch.no_grad():
        torch.testing.assert_close(after(_inputs()).logits, before(_inputs()).logits, rtol=0, atol=0)
    save_head(saved, _head(seed=2), meta={})
    assert _siblings(saved) == []


def test_a_killed_first_save_leaves_no_head_directory(tmp_path: Path) -> None:
    target = tmp_path / "new"
    proc = subprocess.run([sys.executable, "-c", KILL_MID_SAVE, str(target)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert not target.exists()
    with pytest.raises(NotFoundError, match="is not a head directory"):
        load_head(target)


FULL_DISK_SAVE = """
import resource, sys, torch
from laya_inspect.errors import WriteError
from laya_inspect.head_dir import save_head
from laya_inspect.heads import build_head
head = build_head("laya", [64, 64], 10, d_star=32)  # weights.pt ≈ 30 KB
resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))  # Python ignores SIGXFSZ: writes get EFBIG
try:
    save_head(sys.argv[1], head, meta={})
except WriteError as e:
    print(e)
    sys.exit(3)
"""


def test_a_full_disk_is_one_write_error_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "h"
    proc = subprocess.run([sys.executable, "-c", FULL_DISK_SAVE, str(target)], capture_output=True, timeout=120)
    assert proc.returncode == 3, proc.stderr.decode()
    line = proc.stdout.decode().strip()
    assert "weights.pt" in line and "errno" in line and "\n" not in line
    assert list(tmp_path.iterdir()) == []


def test_save_refuses_a_folder_that_is_not_a_head_directory(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a head directory"):
        save_head(tmp_path / "results", _head(), meta={})
    assert (tmp_path / "results" / "notes.txt").read_text() == "mine"
    with pytest.raises(InputError, match=r"did not write \(notes.txt\)"):  # force never deletes a user's file
        save_head(tmp_path / "results", _head(), meta={}, force=True)
    assert (tmp_path / "results" / "notes.txt").read_text() == "mine"
    save_head(tmp_path / "results" / "head", _head(), meta={})
    save_head(tmp_path / "results" / "head", _head(), meta={})  # an earlier head directory: replaced whole
    names = sorted(p.name for p in (tmp_path / "results" / "head").iterdir())
    assert names == [".laya-inspect.json", "config.json", "weights.pt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        save_head(tmp_path / "file", _head(), meta={})


# -- every kind of damage ---------------------------------------------------------------------


def _edit_config(d: Path, edit) -> None:
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps(edit(config)))


def _pop(key: str):
    return lambda c: {k: v for k, v in c.items() if k != key}


def _set(key: str, value):
    return lambda c: {**c, key: value}


def _kw(**changes):
    return lambda c: {**c, "kwargs": {k: v for k, v in {**c["kwargs"], **changes}.items() if v is not ...}}


def _put(d: Path, obj) -> None:
    torch.save(obj, d / "weights.pt")


def _state(d: Path, **changes) -> None:
    """weights.pt with entries replaced (a tensor) or removed (None)."""
    state = {**torch.load(d / "weights.pt", weights_only=True), **changes}
    _put(d, {k: v for k, v in state.items() if v is not None})


def _tau_nan(d: Path) -> None:  # json.dumps cannot write NaN into the file by itself
    path = d / "config.json"
    path.write_text(path.read_text().replace('"tau": 0.9', '"tau": NaN'))


def _write(name: str, data: bytes | str):
    return lambda d: (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


CONFIG_DAMAGE = {
    "invalid JSON": (_write("config.json", '{"kind": "laya",'), "is not valid JSON"),
    "not UTF-8": (_write("config.json", b"\xff\xfe{}"), "is not valid JSON"),
    "a JSON list": (_write("config.json", "[1, 2]"), "holds a JSON list, not an object"),
    "no schema_version": (lambda d: _edit_config(d, _pop("schema_version")), "has no schema_version"),
    "other schema_version": (lambda d: _edit_config(d, _set("schema_version", 2)), "has schema_version 2"),
    "no kind": (lambda d: _edit_config(d, _pop("kind")), "has no head kind"),
    "kind not a name": (lambda d: _edit_config(d, _set("kind", 3)), "has kind 3, not a name"),
    "unknown kind": (lambda d: _edit_config(d, _set("kind", "lyaa")), "unknown head kind 'lyaa'.*did you mean 'laya'"),
    "no kwargs": (lambda d: _edit_config(d, _pop("kwargs")), "has no kwargs"),
    "kwargs a list": (lambda d: _edit_config(d, _set("kwargs", [1])), "kwargs that are not an object"),
    "unknown kwarg": (lambda d: _edit_config(d, _kw(depth=3)), r"unknown 'depth'; it takes widths, num_classes"),
    "missing kwarg": (lambda d: _edit_config(d, _kw(widths=...)), "missing widths"),
    "widths a string": (lambda d: _edit_config(d, _kw(widths="35")), "kwargs.widths is '35', which must be a"),
    "tau negative": (lambda d: _edit_config(d, _kw(tau=-1)), "kwargs.tau is -1, which must be a finite number"),
    "tau NaN": (_tau_nan, "config.json field kwargs.tau is nan"),
    "d_star a bool": (lambda d: _edit_config(d, _kw(d_star=True)), "kwargs.d_star is True, which must be a positive"),
    "kwargs of another shape": (lambda d: _edit_config(d, _kw(d_star=8)), r"weights.pt .* config.json .*d_star 8"),
    "huge kwargs": (lambda d: _edit_config(d, _kw(widths=[10**12, 10**12])), "shape"),
}
WEIGHTS_DAMAGE = {
    "no weights.pt": (lambda d: (d / "weights.pt").unlink(), "has config.json but no weights.pt"),
    "empty": (_write("weights.pt", b""), "is not a readable PyTorch file"),
    "truncated": (lambda d: _write("weights.pt", (d / "weights.pt").read_bytes()[:700])(d), "not a readable"),
    "random bytes": (_write("weights.pt", np.random.default_rng(0).bytes(4096)), "is not a readable PyTorch file"),
    "a pickled object": (lambda d: _put(d, {"w": Fraction(1, 3)}), "which would run code"),
    "a list": (lambda d: _put(d, [torch.zeros(2)]), "holds a list that is not a state_dict"),
    "a missing key": (lambda d: _state(d, **{"classifier.bias": None}), "missing classifier.bias"),
    "an extra key": (lambda d: _state(d, extra=torch.zeros(1)), "unexpected extra"),
    "a wrong shape": (lambda d: _state(d, **{"classifier.bias": torch.zeros(5)}), r"classifier.bias \(5,\) vs \(4,\)"),
    "integer weights": (lambda d: _state(d, **{"classifier.bias": torch.zeros(4, dtype=torch.int64)}), "torch.int64"),
    "NaN weights": (
        lambda d: _state(d, **{"classifier.bias": torch.full((4,), torch.nan)}),
        "non-finite .* classifier.b",
    ),
}


@pytest.mark.parametrize("case", list(CONFIG_DAMAGE) + list(WEIGHTS_DAMAGE))
def test_damage_is_one_cache_error_naming_the_folder(saved: Path, case: str) -> None:
    damage, message = {**CONFIG_DAMAGE, **WEIGHTS_DAMAGE}[case]
    damage(saved)
    with pytest.raises(CacheError, match=message) as info:
        load_head(saved)
    text = str(info.value)
    assert str(saved) in text and "\n" not in text
    assert "laya-inspect fit-head" in text or "use the laya-inspect that wrote it" in text  # what to do


def test_missing_and_misplaced_directories(tmp_path: Path, saved: Path) -> None:
    with pytest.raises(NotFoundError, match="is not a head directory .it does not exist.; create one"):
        read_head_config(tmp_path / "nope")
    with pytest.raises(CacheError, match=f"is a file, not a head directory.*give its folder {saved}$"):
        load_head(saved / "config.json")
    with pytest.raises(CacheError, match="no config.json"):
        load_head(tmp_path)


def test_every_constructor_argument_has_a_rule() -> None:
    import inspect

    for kind in HEADS.names():
        params = inspect.signature(HEADS.get(kind).__init__).parameters
        assert set(params) - {"self"} <= set(KWARG_RULES), kind


def test_a_head_for_other_widths_is_refused_even_with_force(saved: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    cache = write_cache(tmp_path / "c.h5", {"test": ([rng.normal(size=(8, w)) for w in (3, 6)], np.arange(8) % 4)})
    with FeatureStore(cache) as store:
        with pytest.raises(CacheError, match="fingerprint"):
            load_head(saved, store=store)
        with (
            pytest.warns(UserWarning, match="fingerprint"),
            pytest.raises(CacheError, match=r"widths \[3, 5\].*\[3, 6\]"),
        ):
            load_head(saved, store=store, force=True)


# -- edited fields, checked against each other, the weights and the cache ----------------------


@pytest.fixture
def fitted(tmp_path: Path) -> tuple[Path, Path]:
    """(cache of three layers of widths 3, 5, 5 and four classes, a laya head written on it as fit-head does)."""
    from laya_inspect.head_dir import cache_identity

    rng = np.random.default_rng(0)

    def split(n: int):
        return [rng.normal(size=(n, w)).astype("float32") for w in (3, 5, 5)], np.arange(n) % 4

    cache = write_cache(tmp_path / "c.h5", {"train": split(24), "test": split(16)})
    with FeatureStore(cache) as store:
        torch.manual_seed(0)
        head = build_head("laya", store.widths, 4, d_star=6, tau=0.9, standardize="feature")
        d = save_head(tmp_path / "head", head, meta=cache_identity(store))
    return cache, d


def _read_on(d: Path, cache: Path, **kw):
    from laya_inspect.head_dir import store_for_heads

    with FeatureStore(cache) as store:
        return load_head(d, store=store_for_heads(store, [d]), **kw)


EDITED = {
    "a layer named twice": (
        _set("layer_names", ["blocks.0", "blocks.2", "blocks.2"]),
        "config.json field layer_names names 'blocks.2' twice",
    ),
    "a layer the cache lacks": (
        _set("layer_names", ["blocks.0", "blocks.1", "blocks.9"]),
        "config.json field layer_names names 'blocks.9', a layer .*c.h5 .the cache it was fitted on. does not hold",
    ),
    "layers reordered": (
        _set("layer_names", ["blocks.0", "blocks.2", "blocks.1"]),
        r"config.json field layer_names lists blocks.0, blocks.2, blocks.1, not in the order of .*c.h5's layers",
    ),
    "a layer left out": (
        _set("layer_names", ["blocks.0", "blocks.1"]),
        "config.json field layer_names has 2 names, but kwargs.widths has 3 layers",
    ),
    "a layer of another width": (
        lambda c: {**c, "layer_names": ["blocks.0", "blocks.2"], "kwargs": {**c["kwargs"], "widths": [3, 3]}},
        r"field layer_names names 'blocks.2' \(width 5 in .*\) as layer 1, which kwargs.widths gives width 3",
    ),
    "a class left out": (
        _set("class_names", ["0", "1", "2"]),
        "config.json field class_names has 3 names, but kwargs.num_classes is 4",
    ),
    "a class renamed": (
        _set("class_names", ["a", "1", "2", "3"]),
        "config.json field class_names is 'a', '1', '2', '3', but .*c.h5, the cache it was fitted on, names",
    ),
    "class_names not names": (_set("class_names", [0, 1, 2, 3]), "config.json field class_names.0 is 0"),
    "num_classes edited": (_kw(num_classes=5), "field class_names has 4 names, but kwargs.num_classes is 5"),
    "tau 0": (_kw(tau=0), "config.json field kwargs.tau is 0, which must be a finite number > 0"),
    "tau a string": (_kw(tau="0.5"), "config.json field kwargs.tau is '0.5', which must be a finite number > 0"),
    "standardize edited": (
        _kw(standardize="zscore"),
        "config.json field kwargs.standardize is 'zscore', which must be",
    ),
    "cache_rows not an object": (_set("cache_rows", ["x"]), "config.json field cache_rows is"),
    "cache_fingerprint not a string": (_set("cache_fingerprint", 3), "config.json field cache_fingerprint is 3"),
}


@pytest.mark.parametrize("case", list(EDITED))
def test_an_edited_config_field_is_refused_naming_config_json_and_the_field(fitted, case: str) -> None:
    cache, d = fitted
    edit, message = EDITED[case]
    _edit_config(d, edit)
    with pytest.raises(CacheError, match=message) as info:
        _read_on(d, cache)
    text = str(info.value)
    assert text.startswith(str(d / "config.json")) and "\n" not in text and "laya-inspect fit-head" in text


def test_a_head_written_on_the_cache_loads_unchanged(fitted) -> None:
    from laya_inspect.beyond.common import Split, trust_lines
    from laya_inspect.compare.loaded import head_warnings, load_heads

    cache, d = fitted
    head, config = _read_on(d, cache)
    assert config["layer_names"] == ["blocks.0", "blocks.1", "blocks.2"] and head.widths == [3, 5, 5]
    with FeatureStore(cache) as store:
        assert head_warnings(load_heads([d], store, False, torch.device("cpu")), store, "test") == []
        assert trust_lines(store, [(d, config)], Split("test", [], np.zeros(40, dtype=np.int64))) == []


def test_another_layer_of_the_same_width_is_refused_by_the_recorded_digest(tmp_path: Path, fitted) -> None:
    from laya_inspect.head_dir import cache_identity

    cache, _ = fitted
    with FeatureStore(cache) as store:  # a head of some layers, as fit-head --layers writes it
        view = store.keep_layers(["blocks.0", "blocks.1"])
        d = save_head(tmp_path / "some", build_head("laya", view.widths, 4, d_star=6), meta=cache_identity(view))
    assert _read_on(d, cache)[1]["layer_names"] == ["blocks.0", "blocks.1"]
    _edit_config(d, _set("layer_names", ["blocks.0", "blocks.2"]))  # blocks.2 is 5 wide, as blocks.1
    with pytest.raises(CacheError, match="config.json field layer_names was changed after laya-inspect wrote the head"):
        _read_on(d, cache)


def test_half_precision_weights_are_refused_naming_weights_pt(fitted) -> None:
    cache, d = fitted
    _put(d, {k: v.half() for k, v in torch.load(d / "weights.pt", weights_only=True).items()})
    with pytest.raises(CacheError, match=r"weights.pt holds \S+ as torch.float16, not float32"):
        _read_on(d, cache)


def test_a_standardisation_scale_of_zero_is_refused(fitted) -> None:
    cache, d = fitted
    _state(d, **{"standardizers.1.scale": torch.zeros(5)})
    with pytest.raises(CacheError, match=r"weights.pt holds a standardisation scale ≤ 0 in standardizers.1.scale"):
        _read_on(d, cache)


def test_a_head_without_cache_rows_loads_and_says_its_rows_are_unchecked(fitted) -> None:
    from laya_inspect.beyond.common import Split, trust_lines
    from laya_inspect.compare.loaded import head_warnings, load_heads

    cache, d = fitted
    _edit_config(d, _pop("cache_rows"))  # as a head written before laya-inspect recorded them
    head, config = _read_on(d, cache)
    said = "records no cache_rows in its config.json .* cannot be checked"
    with FeatureStore(cache) as store:
        (line,) = head_warnings(load_heads([d], store, False, torch.device("cpu")), store, "test")
        assert re.search(said, line)
        (line,) = trust_lines(store, [(d, config)], Split("test", [], np.zeros(40, dtype=np.int64)))
        assert re.search(said, line)


def test_the_cli_refuses_an_edited_head_in_one_red_line(fitted) -> None:
    cache, d = fitted
    _edit_config(d, _set("layer_names", ["blocks.0", "blocks.2", "blocks.1"]))
    res = runner.invoke(app, ["explain", str(d), "--cache", str(cache), "--row", "0", "--device", "cpu"], env=ENV)
    assert res.exit_code == 1, res.output
    assert "config.json field layer_names lists blocks.0, blocks.2, blocks.1" in " ".join(res.output.split())
    assert "Traceback" not in res.output


# -- CLI ---------------------------------------------------------------------------------------


def test_export_head_refuses_a_pickled_model_without_suggesting_trust_pickle(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    cache = write_cache(tmp_path / "c.h5", {"test": ([rng.normal(size=(8, 3))], np.arange(8) % 2)})
    ckpt = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 2), ckpt)
    res = runner.invoke(app, ["export-head", str(ckpt), "--cache", str(cache), "--out", str(tmp_path / "h")], env=ENV)
    assert res.exit_code == 1, res.output
    assert "is a pickled model" in res.stderr and "weights-only" in res.stderr
    assert "--trust-pickle" not in res.stderr and not (tmp_path / "h").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (["--seeds", "-2"], "--seeds -2: --seeds is how many seeds to run (N ≥ 1 runs seeds 0 … N−1)"),
        (["--seeds", "0"], "--seeds 0: --seeds is how many seeds to run"),
        (["--seed", "-1"], "--seed must be an integer from 0 to 2**64 - 1, got -1"),
    ],
)
def test_bad_seeds_name_the_value_and_the_valid_ones(digits_cache: Path, tmp_path: Path, args, message) -> None:
    res = runner.invoke(app, ["fit-head", str(digits_cache), *args, "--out", str(tmp_path / "fh")], env=ENV)
    assert res.exit_code == 1 and message in " ".join(res.stderr.split()), res.output
    assert not (tmp_path / "fh").exists()


def _train(path: Path, seed: int) -> Path:
    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "1", "--limit", "300"]
    res = runner.invoke(app, [*args, "--seed", str(seed), "--out", str(path)], env=ENV)
    assert res.exit_code == 0, res.output
    return path


def _extract(ckpt: Path, out: Path) -> Path:
    args = ["extract", "--model", "zoo:mlp", "--weights", str(ckpt), "--data", "digits", "--limit", "300"]
    res = runner.invoke(app, [*args, "--out", str(out), "--device", "cpu"], env=ENV)
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.slow
def test_export_head_checks_that_the_cache_comes_from_the_checkpoint(tmp_path: Path) -> None:
    from laya_inspect.models.weights import sha256_file

    a, b = _train(tmp_path / "a.pt", 0), _train(tmp_path / "b.pt", 1)
    cache_a = _extract(a, tmp_path / "a.h5")

    def export(ckpt: Path, out: Path, *extra: str):
        return runner.invoke(
            app, ["export-head", str(ckpt), "--cache", str(cache_a), "--out", str(out), *extra], env=ENV
        )

    res = export(b, tmp_path / "wrong")
    assert res.exit_code == 1, res.output
    line = " ".join(res.stderr.split())
    for name in (str(cache_a), str(b), str(a), sha256_file(a), sha256_file(b)):
        assert name in line, name
    assert not (tmp_path / "wrong").exists()

    res = export(a, tmp_path / "right")
    assert res.exit_code == 0, res.output
    export_json = json.loads((tmp_path / "right" / "export.json").read_text())
    assert export_json["accuracy_on_cache"] == pytest.approx(export_json["joint_test_acc"], abs=1e-9)
    with FeatureStore(cache_a) as store:
        head, config = load_head(tmp_path / "right", store=store)
    assert config["checkpoint"] == str(a) and config["backbone"]["weights_sha256"] == sha256_file(a)

    res = export(a, tmp_path / "right")  # an existing --out needs --force, which replaces it whole
    assert res.exit_code == 1 and "--force" in res.stderr
    res = export(a, tmp_path / "right", "--force")
    assert res.exit_code == 0, res.output
    (tmp_path / "right" / "stale.txt").write_text("the user's")
    res = export(a, tmp_path / "right", "--force")  # a file export-head did not write: never deleted
    assert res.exit_code == 1 and "stale.txt" in res.stderr
    assert (tmp_path / "right" / "stale.txt").read_text() == "the user's"

    rng = np.random.default_rng(0)
    no_hash = write_cache(
        tmp_path / "n.h5", {"test": ([rng.normal(size=(8, w)) for w in (512, 256, 128)], np.arange(8))}
    )
    res = runner.invoke(app, ["export-head", str(a), "--cache", str(no_hash), "--out", str(tmp_path / "n")], env=ENV)
    assert res.exit_code == 1 and "records no weights hash" in res.stderr


CHECKPOINT_HEADS = {
    "unknown kind": (lambda h: {"kind": "lya", "config": {}}, "unknown head kind 'lya'.*did you mean 'laya'"),
    "no config": (lambda h: {"kind": "laya"}, "has no constructor arguments"),
    "config a string": (lambda h: {"kind": "laya", "config": "cfg"}, "has no constructor arguments"),
    "no state_dict": (lambda h: {"kind": "laya", "config": h.config()}, "holds a NoneType that is not a state_dict"),
    "other shapes": (
        lambda h: {"kind": "laya", "config": {**h.config(), "d_star": 5}, "state_dict": h.state_dict()},
        r"its config describes .*d_star 5.*: shape \(weights vs config\)",
    ),
    "unknown kwarg": (
        lambda h: {"kind": "laya", "config": {**h.config(), "foo": 1}, "state_dict": h.state_dict()},
        "unexpected keyword argument 'foo'",
    ),
}


@pytest.mark.parametrize("case", list(CHECKPOINT_HEADS))
def test_a_tampered_checkpoint_head_is_one_input_error(case: str) -> None:
    from laya_inspect.head_dir import head_from_checkpoint

    make, message = CHECKPOINT_HEADS[case]
    head = _head()
    with pytest.raises(InputError, match=message) as info:
        head_from_checkpoint({"head": make(head)}, source="x.pt")
    assert "x.pt" in str(info.value) and "laya-inspect train" in str(info.value)
    good = {"kind": "laya", "config": head.config(), "state_dict": head.state_dict()}
    assert isinstance(head_from_checkpoint({"head": good}), type(head))


def test_export_head_names_its_out_as_the_user_typed_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit: export-head's refusals named --out by its absolute path ("--out /home/…/x1 is not
    empty"), unlike every other command's; they name it as typed, and still touch nothing."""
    from types import SimpleNamespace

    from laya_inspect.errors import InputError
    from laya_inspect.head_dir.export import export_head

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x1").mkdir()
    (tmp_path / "x1" / "notes.txt").write_text("mine")
    store = SimpleNamespace(path=tmp_path / "c.h5")
    refusals = ((False, "--out x1 is not empty"), (True, "--out x1 holds files laya-inspect export-head did not write"))
    for force, said in refusals:
        with pytest.raises(InputError) as e:
            export_head(tmp_path / "ck.pt", store, "x1", force=force)  # type: ignore[arg-type]
        assert str(e.value).startswith(said), str(e.value)
    assert (tmp_path / "x1" / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_export_head_records_a_kept_leftover_in_export_json(tmp_path: Path) -> None:
    """Attack: `mkdir .xh.old-4194303; echo x > .xh.old-4194303/mine.txt; export-head … --out xh --force`
    kept the folder and said so on stderr only: export.json had no warnings to name it in."""
    a = _train(tmp_path / "a.pt", 0)
    cache = _extract(a, tmp_path / "a.h5")
    args = ["export-head", str(a), "--cache", str(cache), "--out", str(tmp_path / "xh")]
    assert runner.invoke(app, args, env=ENV).exit_code == 0
    assert json.loads((tmp_path / "xh" / "export.json").read_text())["warnings"] == []
    mine = tmp_path / ".xh.old-4194303"  # a number a PID can be, no process has here
    mine.mkdir()
    (mine / "mine.txt").write_text("x")
    res = runner.invoke(app, [*args, "--force"], env=ENV)
    assert res.exit_code == 0, res.output
    (said,) = json.loads((tmp_path / "xh" / "export.json").read_text())["warnings"]
    assert str(mine) in said and "left as it is" in said
    assert (mine / "mine.txt").read_text() == "x"
    from laya_inspect.out_dir import foreign_files

    assert foreign_files(tmp_path / "xh") == []  # the note is in the digest export-head's marker records
