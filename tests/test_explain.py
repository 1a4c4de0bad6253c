"""`explain`: one row, layer by layer. Its numbers are compare's numbers for that row (the same
attribution and LOLO code on one row), its input is the source image the cache's index points at,
``--target`` takes a class name or index (in compare too), and each mistake ends in one line."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import class_blob_cache, fit_quickly
from typer.testing import CliRunner

from laya_inspect.cache.extract import ExtractConfig, extract_features
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.compare.config import resolve_target
from laya_inspect.compare.run import CompareConfig, compare_heads
from laya_inspect.errors import InputError, LockedError
from laya_inspect.explain import explain_row, write_figure
from laya_inspect.head_dir import cache_identity, save_head

runner = CliRunner()
ENV = {"COLUMNS": "100"}


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A cache extracted from the real digits images (so the input can be read back), and two heads."""
    root = tmp_path_factory.mktemp("explain")
    cache = root / "features.h5"
    extract_features(
        ExtractConfig(model="zoo:mlp", data="digits", out=str(cache), random_init=True, limit=150, device="cpu")
    )
    with FeatureStore(cache) as store:
        heads = {
            k: save_head(root / k, fit_quickly(k, store, 30), meta=cache_identity(store) | {"trained_by": "test"})
            for k in ("laya", "scalarmix")
        }
    return {"cache": cache, **heads, "root": root}


@pytest.mark.parametrize("ablation", ["resample", "mean"])  # the default, and the ablation of IG's baseline
def test_explain_gives_compares_numbers_for_that_row(digits: dict[str, Path], ablation: str) -> None:
    row = 7
    with FeatureStore(digits["cache"]) as store:
        e = explain_row(digits["laya"], store, row=row, ablation=ablation, n_steps=8, device="cpu")
        compare_heads(
            [digits["laya"]],
            store,
            CompareConfig(
                methods=("alpha", "alpha-contrib", "ig", "gradcam"),
                ablation=ablation,
                n_steps=8,
                n_boot=0,
                plots=False,
                sanity=False,
                device="cpu",
            ),
            out_dir=digits["root"] / f"cmp-{ablation}",
        )
    with h5py.File(digits["root"] / f"cmp-{ablation}" / "attributions.h5") as f:
        g = f["heads/laya"]
        assert int(f["rows"][row]) == row and e.target == int(g["targets"][row]) == e.pred
        if ablation == "mean":  # deterministic: the same removal
            np.testing.assert_allclose(e.effects, g["effects"][row], rtol=1e-6, atol=1e-9)
        else:  # compare's value is one average of 4 donors; explain's the mean of 32, with its interval
            assert e.effects_sd is not None
            assert np.all(np.abs(g["effects"][row] - e.effects) <= 4 * e.effects_sd / 2 + 1e-9)
        for m in ("alpha", "alpha-contrib", "ig", "gradcam"):
            np.testing.assert_allclose(e.scores[m], g[f"methods/{m}/scores"][row], rtol=1e-4, atol=1e-6)
    assert e.scores["alpha"].sum() == pytest.approx(1.0, abs=1e-5)
    assert e.p == pytest.approx(e.probs[e.target]) and set(e.skipped) == {"static"}


def test_the_rows_alpha_is_shown_beside_the_constant_rules_profile(digits: dict[str, Path]) -> None:
    """One row's α beside the profile every row gets (the head's mean α over the split, compare's
    constant rule): before, explain printed α alone, so a row could not be told from the profile."""
    with FeatureStore(digits["cache"]) as store:
        e = explain_row(digits["laya"], store, row=3, n_steps=4, device="cpu")
        compare_heads(
            [digits["laya"]],
            store,
            CompareConfig(methods=("alpha",), n_boot=0, plots=False, sanity=False, device="cpu"),
            out_dir=digits["root"] / "cmp-profile",
        )
        n = store.n("test")
    with h5py.File(digits["root"] / "cmp-profile" / "attributions.h5") as f:
        alpha = f["heads/laya/methods/alpha/scores"][()]
    assert e.profile is not None and e.profile_rows == n == len(alpha)
    np.testing.assert_allclose(e.profile, alpha.mean(axis=0), rtol=1e-4, atol=1e-6)
    args = ["explain", str(digits["laya"]), "--cache", str(digits["cache"]), "--row", "3", "--n-steps", "4"]
    result = runner.invoke(app, [*args, "--device", "cpu"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    said = f"mean α over the {n} test rows (the constant rule: the profile every row gets): blocks.0 {e.profile[0]:.3f}"
    assert said in " ".join(result.output.split()), result.output
    data = json.loads(runner.invoke(app, [*args, "--device", "cpu", "--json"], env=ENV).output)
    assert data["constant_rule"]["rows"] == n
    assert data["layers"]["blocks.1"]["constant_rule"] == pytest.approx(float(e.profile[1]))


def test_the_profile_is_read_chunk_by_chunk_not_the_whole_split_at_once(digits: dict[str, Path], monkeypatch) -> None:
    """Explaining one row read every layer of the split into memory at once for the constant rule's profile;
    it is now summed chunk by chunk, to the same profile."""
    import laya_inspect.training.loop as loop

    with FeatureStore(digits["cache"]) as store:
        whole = explain_row(digits["laya"], store, row=3, n_steps=4, device="cpu")
        monkeypatch.setattr(loop, "STREAM_CHUNK_ROWS", 50)
        read = store.layers

        def by_rows(split: str, rows: object = None) -> list:
            assert rows is not None or split != "test", "the whole test split read at once"
            return read(split, rows)

        monkeypatch.setattr(store, "layers", by_rows)
        chunked = explain_row(digits["laya"], store, row=3, n_steps=4, device="cpu")
    assert chunked.profile_rows == whole.profile_rows > 50
    np.testing.assert_allclose(chunked.profile, whole.profile, rtol=1e-5, atol=1e-7)


def test_the_input_is_the_source_image_of_that_row(digits: dict[str, Path]) -> None:
    from sklearn.datasets import load_digits

    d = load_digits()
    with FeatureStore(digits["cache"]) as store:
        e = explain_row(digits["scalarmix"], store, row=3, split="train", target="true", n_steps=4, device="cpu")
        assert e.source_row == int(store.index("train", np.array([3]))[0])
    assert e.input.kind == "image" and e.input.image is not None
    np.testing.assert_allclose(e.input.image, d.images[e.source_row] / 16.0, atol=1e-6)
    assert e.label == int(d.target[e.source_row]) == e.target
    assert set(e.scores) == {"ig", "gradcam", "static"} and np.allclose(e.scores["static"].sum(), 1.0)


def test_a_cache_without_a_readable_source_still_explains(digits_cache: Path, digits: dict[str, Path]) -> None:
    with FeatureStore(digits_cache) as store:
        head = save_head(digits["root"] / "small", fit_quickly("laya", store, 30), meta=cache_identity(store))
        e = explain_row(head, store, row=0, target="3", ablation="zero", baseline="zero", n_steps=4, device="cpu")
    assert e.target == 3 and e.target_rule == "class" and e.ablation == "zero"
    assert e.input.kind is None and "no dataset 'test'" in e.input.note


def test_resolve_target_takes_names_and_indices() -> None:
    names = ["cat", "dog", "7"]
    assert resolve_target("pred", names) == "pred" and resolve_target("true", names) == "true"
    assert resolve_target("dog", names) == 1 and resolve_target("7", names) == 2  # a name before an index
    assert resolve_target("0", names) == 0
    with pytest.raises(InputError, match="--target must be one of pred, true, a class name or a class index 0…2"):
        resolve_target("3", names)
    with pytest.raises(InputError, match="did you mean 'dog'"):
        resolve_target("dgo", names)


def test_compare_target_can_be_one_class(digits: dict[str, Path]) -> None:
    with FeatureStore(digits["cache"]) as store:
        res = compare_heads(
            [digits["scalarmix"]],
            store,
            CompareConfig(methods=("static",), target="4", limit=20, n_boot=0, plots=False, device="cpu"),
            out_dir=digits["root"] / "cmp4",
        )
    assert set(res.heads[0].targets.tolist()) == {4} and res.summary["target"] == "4"
    assert res.summary["heads"][0]["per_class"]["n"][4] == 20


def test_explain_command_prints_the_table_and_writes_the_figure(digits: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "row5.png"
    args = ["explain", str(digits["laya"]), "--cache", str(digits["cache"]), "--row", "5", "--n-steps", "4"]
    result = runner.invoke(app, [*args, "--out", str(out), "--device", "cpu"], env=ENV)
    assert result.exit_code == 0, result.output
    for text in ("test row 5", "predicted", "α", "IG", "Grad-CAM", "LOLO effect (resample)", "blocks.0", "blocks.2"):
        assert text in result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    table = " ".join(result.output.split())
    result = runner.invoke(app, [*args, "--json", "--target", "true"], env=ENV)
    data = json.loads(result.output)
    assert data["row"] == 5 and data["target_rule"] == "true" and data["target"] == data["label"]
    assert set(data["layers"]["blocks.0"]) == {
        *("lolo_effect", "lolo_effect_sd", "lolo_effect_ci", "logit_ablated"),
        *("alpha", "alpha-contrib", "ig", "gradcam", "constant_rule"),
    }
    assert data["draws"] == 32 and "mean over `draws` donors" in data["lolo_effect_note"]
    assert "95% interval (32 draws)" in table and "the mean over 32 donors" in table
    # one row states no verdict: it points at compare's, read against the constant rule
    assert "constant rule" in data["verdict"] and "beats the constant rule" in table


def test_explain_names_its_settings_on_the_terminal_in_its_json_and_in_its_figure(
    digits: dict[str, Path], tmp_path: Path
) -> None:
    """QA: `explain HEAD --cache C --row 5` never named the IG baseline (mean), --n-steps 50 or --seed 0,
    where every other command prints the settings given and those left at their defaults."""
    from PIL import Image

    out = tmp_path / "row5.png"
    args = ["explain", str(digits["laya"]), "--cache", str(digits["cache"]), "--row", "5", "--n-steps", "4"]
    result = runner.invoke(app, [*args, "--device", "cpu", "--out", str(out)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert (
        "settings given: IG baseline mean, 4 steps · device cpu; left at their defaults: target pred · "
        "effect logit · ablation resample · 32 draws · seed 0" in " ".join(result.output.split())
    ), result.output
    settings = json.loads(Image.open(out).text["Description"].removeprefix("settings: "))
    assert settings["baseline"] == "mean" and settings["n_steps"] == 4 and settings["seed"] == 0
    # a seed given to an ablation that draws no donors is said as given, deciding nothing
    result = runner.invoke(app, [*args, "--ablation", "mean", "--seed", "3"], env={"COLUMNS": "300"})
    assert "--seed 3 (decides nothing here: mean draws no donors)" in " ".join(result.output.split())
    data = json.loads(runner.invoke(app, [*args, "--ablation", "mean", "--json"], env=ENV).output)
    assert data["config"]["ablation"] == "mean" and data["config"]["n_steps"] == 4
    assert "seed" in data["config_defaults"] and not {"ablation", "n_steps"} & set(data["config_defaults"])


def test_explain_takes_threads_as_the_other_commands_that_run_a_head(digits: dict[str, Path], monkeypatch) -> None:
    """QA: explain had no --threads and set none, so it ran on torch's default of every core, where
    the README says every command that runs a model takes --threads (default: a few for a head)."""
    import torch

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    args = ["explain", str(digits["laya"]), "--cache", str(digits["cache"]), "--row", "5", "--n-steps", "4", "--json"]
    try:
        for n in (1, 2):
            result = runner.invoke(app, [*args, "--threads", str(n)], env=ENV)
            assert result.exit_code == 0, result.output
            assert torch.get_num_threads() == n
        result = runner.invoke(app, [*args, "--threads", "0"], env={"COLUMNS": "200"})
        assert result.exit_code == 1 and "--threads must be a whole number ≥ 1, got 0" in result.output
    finally:
        torch.set_num_threads(before)


def test_the_ablated_value_is_named_by_what_it_holds(digits: dict[str, Path]) -> None:
    with FeatureStore(digits["cache"]) as store:
        logit = explain_row(digits["laya"], store, row=5, ablation="mean", n_steps=4, device="cpu")
        prob = explain_row(digits["laya"], store, row=5, ablation="mean", n_steps=4, device="cpu", effect="prob")
    layer = logit.to_dict()["layers"]["blocks.0"]
    assert "p_ablated" not in layer and layer["logit_ablated"] == pytest.approx(logit.p_ablated[0])  # a logit
    layer = prob.to_dict()["layers"]["blocks.0"]
    assert "logit_ablated" not in layer and layer["p_ablated"] == pytest.approx(prob.p_ablated[0])
    assert 0 <= layer["p_ablated"] <= 1
    # a deterministic removal: one, no spread
    assert logit.draws == 1 and logit.effects_sd is None and "lolo_effect_sd" not in layer


def test_the_resample_effect_is_the_mean_over_donor_draws_with_its_interval(digits: dict[str, Path]) -> None:
    # one donor per removal moved the effect of a layer by a factor of 8 between --seed values (QA, row 5)
    with FeatureStore(digits["cache"]) as store:
        runs = [explain_row(digits["laya"], store, row=5, n_steps=4, device="cpu", seed=s) for s in (0, 1, 2)]
        again = explain_row(digits["laya"], store, row=5, n_steps=4, device="cpu", seed=0)
        few = explain_row(digits["laya"], store, row=5, n_steps=4, device="cpu", seed=0, draws=8)
    for e in runs:
        assert e.draws == 32 and e.effects_sd is not None and e.effects_ci is not None
        low, high = e.effects_ci.T
        assert np.all(low <= e.effects) and np.all(e.effects <= high) and np.all(e.effects_sd >= 0)
        assert np.all(np.isfinite(e.effects_ci)) and np.any(e.effects_sd > 0)  # the donors differ
    # the seeds' intervals overlap layer by layer: a --seed moves the effect within its uncertainty
    lows = np.max([e.effects_ci[:, 0] for e in runs], axis=0)
    highs = np.min([e.effects_ci[:, 1] for e in runs], axis=0)
    assert np.all(lows <= highs)
    np.testing.assert_array_equal(again.effects, runs[0].effects)  # the same seed, the same donors
    assert few.draws == 8 and np.all(few.effects_ci[:, 1] - few.effects_ci[:, 0] >= 0)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--row", "999"], "--row 999 is outside split 'test'"),
        (["--row", "0", "--target", "eleven"], "--target must be one of pred, true, a class name"),
        (["--row", "0", "--out", "fig.jpg"], "give a .png (or .svg) file name"),
        (["--row", "0", "--split", "valid"], "no split 'valid'"),
        (["--row", "0", "--ablation", "drop"], "'drop' ablation needs a head with aggregation weights"),
        (["--row", "0", "--seed", "-1"], "--seed must be an integer from 0 to 2**64 - 1, got -1"),
        (["--row", "0", "--draws", "1"], "--draws must be a whole number from 2 to 1,024, got 1"),
        (["--row", "0", "--seed", str(2**64)], f"--seed must be an integer from 0 to 2**64 - 1, got {2**64}"),
    ],
)
def test_explain_mistakes_end_in_one_line(digits: dict[str, Path], tmp_path: Path, extra: list[str], message: str):
    head = digits["laya"] if "drop" not in extra else save_last(digits)
    result = runner.invoke(app, ["explain", str(head), "--cache", str(digits["cache"]), *extra], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "error:" in result.output and message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_a_row_whose_finite_features_overflow_the_head_gets_compares_error(digits: dict[str, Path], tmp_path):
    """3.4e38 is a finite float32, but no head's logits stay finite on it: explain says so, as compare
    does, naming the row (not a method's complaint about the head)."""
    cache = tmp_path / "overflow.h5"
    shutil.copy(digits["cache"], cache)
    with h5py.File(cache, "r+") as f:
        last = sorted(k for k in f["test"] if k.startswith("layer_"))[-1]
        f["test"][last][5] = 3.4e38
    result = runner.invoke(
        app, ["explain", str(digits["laya"]), "--cache", str(cache), "--row", "5"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    line = " ".join(result.output.split())
    assert "gives non-finite logits (NaN or ±inf) on row 5 of split 'test'" in line and "alpha-contrib" not in line
    compared = runner.invoke(
        app, ["compare", str(digits["laya"]), "--cache", str(cache), "--out", str(tmp_path / "cmp")], env=ENV
    )
    assert "gives non-finite logits (NaN or ±inf) on 1 of" in " ".join(compared.output.split())


def test_explain_out_replaces_only_a_figure_explain_wrote_and_only_with_force(digits: dict[str, Path], tmp_path):
    from laya_inspect.out_dir import atomic_dir

    args = ["explain", str(digits["laya"]), "--cache", str(digits["cache"]), "--row", "5", "--n-steps", "4"]

    def run(out: Path, *extra: str) -> tuple[int, str]:
        r = runner.invoke(app, [*args, "--device", "cpu", "--out", str(out), *extra], env={"COLUMNS": "300"})
        assert "Traceback" not in r.output, r.output
        return r.exit_code, " ".join(r.output.split())

    ours = tmp_path / "row5.png"
    assert run(ours)[0] == 0
    code, text = run(ours)
    assert code == 1 and "exists; pass --force to replace it" in text
    assert run(ours, "--force")[0] == 0
    users = tmp_path / "mine.svg"
    users.write_text("<svg>my figure</svg>")
    with atomic_dir(tmp_path / "heads", command="fit-head") as tmp:  # another command's plot
        (tmp / "profiles").mkdir()
        (tmp / "profiles" / "layer_weights.png").write_bytes(b"\x89PNG fit-head's plot")
    theirs = tmp_path / "heads" / "profiles" / "layer_weights.png"
    for path, why in ((users, "is not a figure laya-inspect explain wrote"), (theirs, "`laya-inspect fit-head`")):
        before = path.read_bytes()
        for extra in ((), ("--force",)):
            code, text = run(path, *extra)
            assert code == 1 and why in text and path.read_bytes() == before, text


def save_last(digits: dict[str, Path]) -> Path:
    path = digits["root"] / "last"
    if not path.exists():
        with FeatureStore(digits["cache"]) as store:
            save_head(path, fit_quickly("last", store, 5), meta=cache_identity(store))
    return path


def test_write_figure_svg(digits: dict[str, Path], tmp_path: Path) -> None:
    with FeatureStore(digits["cache"]) as store:
        e = explain_row(digits["scalarmix"], store, row=1, n_steps=4, device="cpu")
    path = write_figure(e, tmp_path / "one.svg")
    assert path.read_text().lstrip().startswith("<?xml") and "<svg" in path.read_text()


def test_a_figure_saved_at_out_while_explain_runs_is_not_replaced(digits: dict[str, Path], tmp_path: Path) -> None:
    """QA (race): `explain --out row1.png` checked its --out only before the work; a figure the user
    saved there while the row was explained was replaced at the end, with --force or without."""
    out = tmp_path / "row1.png"
    with FeatureStore(digits["cache"]) as store:
        e = explain_row(digits["laya"], store, row=1, n_steps=4, device="cpu")
    out.write_bytes(b"\x89PNG the user's own figure")
    with pytest.raises(InputError, match="exists and is not a figure laya-inspect explain wrote"):
        write_figure(e, out)
    with pytest.raises(InputError, match="is not a figure laya-inspect explain wrote"):
        write_figure(e, out, force=True)
    assert out.read_bytes() == b"\x89PNG the user's own figure" and sorted(tmp_path.iterdir()) == [out]


def test_force_replaces_a_figure_only_as_explain_wrote_it(digits: dict[str, Path], tmp_path: Path) -> None:
    """QA (data loss): --force took any file holding explain's mark for explain's, so a figure the user
    annotated (the SVG's metadata, mark and all, kept) was replaced; and one with no record of how it
    was written (its record removed) likewise."""
    with FeatureStore(digits["cache"]) as store:
        e = explain_row(digits["laya"], store, row=1, n_steps=4, device="cpu")
    out = write_figure(e, tmp_path / "row1.svg")
    write_figure(e, out, force=True)  # unchanged since written: replaced
    annotated = out.read_text().replace("</svg>", '<text x="5" y="5">outlier, ask Ana</text></svg>')
    out.write_text(annotated)
    with pytest.raises(InputError, match=f"is not as laya-inspect wrote it: {out} .changed since it was written"):
        write_figure(e, out, force=True)
    assert out.read_text() == annotated
    from laya_inspect.out_dir import record_of

    out.unlink()
    write_figure(e, out)
    record_of(out).unlink()
    before = out.read_bytes()
    with pytest.raises(InputError, match="has no record beside it"):
        write_figure(e, out, force=True)
    assert out.read_bytes() == before
    record_of(out).write_text("my notes")  # a user's file under the record's name is never replaced
    with pytest.raises(InputError, match="not a record laya-inspect wrote"):
        write_figure(e, tmp_path / "row1.svg", force=True)
    assert record_of(out).read_text() == "my notes"


def test_a_second_explain_writing_the_same_figure_is_refused_naming_the_first(
    digits: dict[str, Path], tmp_path: Path
) -> None:
    """QA (race): explain took no lock on its --out, so two `explain --force --out same.png` at once
    both wrote it and both exited 0. Another process holding the figure's lock, as a running explain
    does from its check to its write, refuses the command and write_figure, naming that PID."""
    import subprocess
    import sys

    out = tmp_path / "row5.png"
    args = ["explain", str(digits["laya"]), "--cache", str(digits["cache"]), "--row", "5", "--n-steps", "4"]
    assert runner.invoke(app, [*args, "--out", str(out), "--device", "cpu"], env=ENV).exit_code == 0
    before = out.read_bytes()
    hold = (
        "import sys\nfrom laya_inspect.files import output_lock\n"
        "with output_lock(sys.argv[1]):\n print('held', flush=True); sys.stdin.read()"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", hold, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        r = runner.invoke(app, [*args, "--out", str(out), "--force", "--device", "cpu"], env=ENV)
        line = " ".join(r.output.split())
        assert r.exit_code != 0 and f"is being written by another laya-inspect process (PID {other.pid})" in line, line
        with FeatureStore(digits["cache"]) as store:
            e = explain_row(digits["laya"], store, row=5, n_steps=4, device="cpu")
        with pytest.raises(LockedError, match=f"PID {other.pid}"):
            write_figure(e, out, force=True)
    finally:
        other.communicate("")
    assert out.read_bytes() == before
    assert write_figure(e, out, force=True) == out  # the lock is free again: replaced, as explain wrote it


def test_a_text_input_is_read_back_and_a_changed_source_is_said(tmp_path: Path) -> None:
    from helpers import write_cache

    from laya_inspect.explain import read_input

    texts = [f"review number {i}: {'a fine film' if i % 2 else 'a dull film'}" for i in range(12)]
    lines = ["text,label,split"] + [
        f"{t},{'pos' if i % 2 else 'neg'},{'test' if i >= 8 else 'train'}" for i, t in enumerate(texts)
    ]
    data = tmp_path / "reviews.csv"
    data.write_text("\n".join(lines) + "\n")
    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(4, 3)).astype("float32") for _ in range(2)]
    test = {"test": (feats, np.array([0, 1, 0, 1]))}
    cache = write_cache(tmp_path / "t.h5", test, data_spec=f"csv:{data}", indices={"test": np.arange(8, 12)})
    with FeatureStore(cache) as store:
        view = read_input(store, "test", 9, label=1)  # file row 9 ("pos" = class 1 of ["neg", "pos"])
        changed = read_input(store, "test", 9, label=0)
        absent = read_input(store, "test", 2, label=0)  # row 2 is a train row
    assert view.kind == "text" and view.text == texts[9]
    assert changed.kind is None and "the data changed since extraction" in changed.note
    assert absent.kind is None and "is not in split 'test'" in absent.note


def _reviews_cache(tmp_path: Path, texts: list[str]) -> Path:
    """A cache of random features over test rows 8 … 11 of a CSV of ``texts`` labelled neg, pos, …"""
    from helpers import write_cache

    lines = ["text,label,split"] + [
        f"{t},{'pos' if i % 2 else 'neg'},{'test' if i >= 8 else 'train'}" for i, t in enumerate(texts)
    ]
    data = tmp_path / "reviews.csv"
    data.write_text("\n".join(lines) + "\n")
    feats = [np.random.default_rng(0).normal(size=(4, 3)).astype("float32") for _ in range(2)]
    cache = write_cache(
        tmp_path / "t.h5",
        {"test": (feats, np.array([0, 1, 0, 1]))},
        data_spec=f"csv:{data}",
        indices={"test": np.arange(8, 12)},
    )
    return cache


def test_a_text_row_is_named_by_the_start_of_its_text_as_an_image_row_by_its_file(tmp_path: Path) -> None:
    """QA: explain on a CSV of texts said only "source row 9" in its header and the figure's input
    panel, where an image folder's row names its file: a reader matching a row to their table had a
    number alone. The row is now named by its text's first 60 characters, quoted."""
    from laya_inspect.explain import read_input

    texts = [f"review {i}" for i in range(12)]
    texts[9] = "an unusually long review that goes on about the film " * 4
    with FeatureStore(_reviews_cache(tmp_path, texts)) as store:
        short, long = read_input(store, "test", 8, label=0), read_input(store, "test", 9, label=1)
    assert short.where(8) == "line 10 of reviews.csv: 'review 8'"
    assert long.text == texts[9] and long.source == repr(texts[9][:59] + "…")
    assert long.where(9) == "line 11 of reviews.csv: 'an unusually long review that goes on about the film an unu…'"


@pytest.mark.parametrize("blank", ["  ", "\u200b\u200b", "\ufeff", "\u200d \x07\x7f"])
def test_an_empty_text_is_said_where_its_row_is_explained(tmp_path: Path, blank: str) -> None:
    """QA: explain on a test row whose text was empty printed "input: " and nothing else, then a
    confident prediction and its layer table; only the cache's warning, naming a CSV line, not the
    row, said that such a row describes the empty string. The row's own view now says it, also of a
    text of only zero-width spaces, a byte-order mark or control characters, which extract calls empty."""
    from laya_inspect.explain import read_input

    texts = [f"review {i}" if i != 9 else blank for i in range(12)]
    with FeatureStore(_reviews_cache(tmp_path, texts)) as store:
        empty, full = read_input(store, "test", 9, label=1), read_input(store, "test", 8, label=0)
    assert empty.kind == "text" and "an empty text: its features describe the empty string" in empty.note
    assert full.kind == "text" and full.text == "review 8" and not full.note


def test_a_text_with_a_newline_or_a_direction_override_is_shown_on_one_line(tmp_path: Path) -> None:
    """QA: explain printed a row's text as it was: a newline broke the "input:" line in two, and a
    right-to-left override (U+202E) turned the rest of the terminal line round, so the words on screen
    were not the order the model read. Characters that do not print are now shown as escapes."""
    from helpers import write_cache

    from laya_inspect.training.fit_head import FitConfig, fit_heads

    texts = [f"review {i}" for i in range(24)]
    texts[20] = "first line\nsecond \u202eline"
    lines = ["text,label,split"] + [f'"{t}",{i % 2},{"test" if i >= 16 else "train"}' for i, t in enumerate(texts)]
    data = tmp_path / "reviews.csv"
    data.write_text("\n".join(lines) + "\n")
    rng = np.random.default_rng(0)
    y = np.arange(24) % 2
    feats = [rng.normal(size=(24, 3)).astype("float32") + y[:, None] for _ in range(2)]
    splits = {"train": ([f[:16] for f in feats], y[:16]), "test": ([f[16:] for f in feats], y[16:])}
    cache = write_cache(
        tmp_path / "t.h5", splits, data_spec=f"csv:{data}", indices={"train": np.arange(16), "test": np.arange(16, 24)}
    )
    cfg = FitConfig(heads=("laya",), seeds=(0,), d_star=8, epochs=2, probe=False, device="cpu")
    with FeatureStore(cache) as store:
        (run,) = fit_heads(store, cfg, out_dir=tmp_path / "fit").runs
    args = ["explain", str(run.head_dir), "--cache", str(cache), "--row", "4", "--draws", "2", "--device", "cpu"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "r.png")], env=ENV)
    assert result.exit_code == 0, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("input:")]
    assert line == "input: first line\\nsecond \\u202eline", line
    # the header names the row by its text's start, as an image row by its file, on the same line
    (header,) = [x for x in result.output.splitlines() if "(line 22 of reviews.csv" in x]
    assert "(line 22 of reviews.csv: 'first line\\nsecond \\u202eline'): label" in header, header


def test_a_relative_data_path_is_read_from_the_folder_extract_ran_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`extract --data csv:text.csv` records the path as typed; explain run from another folder once
    said "input not shown: no csv file 'text.csv'"."""
    from helpers import write_cache

    from laya_inspect.explain import read_input

    here, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    texts = [f"line {i}" for i in range(6)]
    rows = ["text,label,split"] + [f"{t},{'ab'[i % 2]},{'test' if i >= 4 else 'train'}" for i, t in enumerate(texts)]
    (here / "text.csv").write_text("\n".join(rows) + "\n")
    feats = [np.zeros((2, 3), dtype="float32")]
    split, rows = {"test": (feats, np.array([0, 1]))}, {"test": np.array([4, 5])}
    with_dir = write_cache(
        tmp_path / "a.h5", split, data_spec="csv:text.csv", extra_attrs={"working_dir": str(here)}, indices=rows
    )
    without = write_cache(tmp_path / "b.h5", split, data_spec="csv:text.csv", indices=rows)
    monkeypatch.chdir(elsewhere)
    with FeatureStore(with_dir) as store:
        view = read_input(store, "test", 5, label=1)
    with FeatureStore(without) as store:
        lost = read_input(store, "test", 5, label=1)
    assert view.kind == "text" and view.text == "line 5"
    assert lost.kind is None and "run explain from the one extract ran in" in lost.note


def test_explaining_a_class_the_head_never_saw_in_training_is_refused_by_explain_and_compare(tmp_path: Path) -> None:
    """QA (MobileNetV2, a test-only class): `explain --target true` on a row of a class with no training
    rows printed LOLO effects of +0.86 and a top layer for an output unit that never learnt anything."""
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    y_train, y_test = np.arange(40) % 2 * 2, np.arange(12) % 3  # class 1 only in the test split
    cache = class_blob_cache(tmp_path / "c.h5", y_train, y_test)
    cfg = FitConfig(heads=("laya",), seeds=(0,), d_star=8, epochs=3, probe=False, device="cpu")
    with FeatureStore(cache) as store:
        (run,) = fit_heads(store, cfg, out_dir=tmp_path / "fit").runs
        with pytest.raises(InputError, match=r"class '1' had no training rows.*--target pred"):
            explain_row(run.head_dir, store, row=1, target="true", device="cpu", draws=2)
        with pytest.raises(InputError, match=r"class '1' had no training rows"):
            explain_row(run.head_dir, store, row=0, target="1", device="cpu", draws=2)
        assert explain_row(run.head_dir, store, row=1, target="pred", device="cpu", draws=2).target != 1
        # compare: the same refusal for --target true (4 of 12 rows) and for the class named
        quick = {"methods": ("alpha",), "n_boot": 0, "plots": False, "sanity": False, "device": "cpu"}
        for target, said in (("true", r"4 of 12 rows"), ("1", r"12 of 12 rows")):
            with pytest.raises(InputError, match=rf"class\(es\) '1' had no training rows.*{said}.*--target pred"):
                compare_heads([run.head_dir], store, CompareConfig(target=target, **quick), out_dir=tmp_path / target)
        compare_heads([run.head_dir], store, CompareConfig(target="pred", **quick), out_dir=tmp_path / "pred")


def test_a_class_never_trained_is_refused_in_one_line_when_the_cache_names_no_classes(tmp_path: Path) -> None:
    """A cache written without class names (an old or hand-written one: the store then counts the
    classes from the labels) made the refusal above index the empty name list: IndexError, a traceback."""
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    y_train, y_test = np.arange(40) % 2 * 2, np.arange(12) % 3  # class 1 only in the test split
    cache = class_blob_cache(tmp_path / "c.h5", y_train, y_test)
    with h5py.File(cache, "a") as f:  # as written before extract recorded its attributes' digest
        del f.attrs["class_names"], f.attrs["attrs_sha256"]
    cfg = FitConfig(heads=("laya",), seeds=(0,), d_star=8, epochs=3, probe=False, device="cpu")
    with FeatureStore(cache) as store:
        assert store.class_names == [] and store.num_classes == 3
        (run,) = fit_heads(store, cfg, out_dir=tmp_path / "fit").runs
        with pytest.raises(InputError, match=r"class '1' had no training rows.*--target pred"):
            explain_row(run.head_dir, store, row=1, target="true", device="cpu", draws=2)
        # compare's refusal of the same target indexed the same empty list
        quick = CompareConfig(target="true", methods=("alpha",), n_boot=0, plots=False, sanity=False, device="cpu")
        with pytest.raises(InputError, match=r"class\(es\) '1' had no training rows.*4 of 12 rows"):
            compare_heads([run.head_dir], store, quick, out_dir=tmp_path / "compare")


def test_the_table_marks_every_layer_tied_at_a_columns_top_not_the_shallowest(tmp_path: Path) -> None:
    """QA: a ScalarMix head whose weights stayed uniform gave a static column of equal weights, and the
    table marked blocks.0 alone as the layer it "ranks first": a tie read as the shallowest layer's win.
    Every tied layer is marked (1/k credit each, as stats.top_credit); an untied column keeps one mark."""
    import torch

    from laya_inspect.heads import build_head

    cache = class_blob_cache(tmp_path / "c.h5", np.arange(30) % 3, np.arange(9) % 3)
    torch.manual_seed(0)
    with FeatureStore(cache) as store:
        head = build_head("scalarmix", store.widths, store.num_classes, d_star=4).eval()  # scalars at 0: uniform
        folder = save_head(tmp_path / "sm", head, meta=cache_identity(store))
    args = ["explain", str(folder), "--cache", str(cache), "--row", "0", "--ablation", "mean", "--device", "cpu"]
    result = runner.invoke(app, args, env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines() if line.strip()[:7] == "blocks."}
    header = next(line.split() for line in result.output.splitlines() if line.split()[:1] == ["layer"])
    static = header.index("static") - 1  # the cells after the layer's name
    assert [rows[k][static] for k in sorted(rows)] == ["+0.500*", "+0.500*"], result.output
    ig = header.index("IG") - 1
    assert sum(cells[ig].endswith("*") for cells in rows.values()) == 1, result.output


def test_an_image_folder_changed_since_extraction_is_said_not_shown_as_another_image(tmp_path: Path) -> None:
    """QA (MobileNetV2 on a CIFAR-10 folder): after one test image was deleted, `explain --row 5` drew
    the next file of the same class as "input (source row 5)" with no word: the one row's label still
    matched, so the shifted numbering went unseen."""
    from helpers import write_cache
    from PIL import Image

    from laya_inspect.explain import read_input

    root = tmp_path / "images"
    for split, n in (("train", 3), ("test", 4)):
        for c, name in enumerate(("cat", "dog")):
            (root / split / name).mkdir(parents=True)
            for i in range(n):  # each file its own grey level, so the image read back names the file
                level = 10 * (4 * c + i) + (100 if split == "test" else 0)
                Image.new("RGB", (8, 8), (level, level, level)).save(root / split / name / f"{i:02d}.png")
    feats = [np.zeros((8, 3), dtype="float32")]
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    split = {"test": (feats, labels)}
    cache = write_cache(
        tmp_path / "c.h5", split, class_names=["cat", "dog"], data_spec=f"imagefolder:{root}",
        indices={"test": np.arange(8)},
    )  # fmt: skip
    with FeatureStore(cache) as store:
        same = read_input(store, "test", 1, label=0)
        (root / "test" / "cat" / "00.png").unlink()  # source row 1 is now the file that was row 2
        changed = read_input(store, "test", 1, label=0)
    assert same.kind == "image" and same.image is not None
    assert abs(float(same.image.mean()) - 110 / 255) < 1e-6  # test/cat/01.png
    assert same.source == "test/cat/01.png" and same.where(1) == "source row 1: test/cat/01.png"
    assert changed.kind is None and changed.image is None
    assert (
        "the data changed since extraction" in changed.note and "on 2 of 8 rows" in changed.note
    )  # row 3 now a dog, row 7 gone


def test_the_terminal_table_keeps_every_layer_name_and_number_whole_on_80_columns(digits: dict[str, Path]) -> None:
    """QA (MobileNetV2, layers features.16 … 18): on an 80-column terminal the table cut every layer
    name to "features" and the scores to "+0.…", so no row could be told from another."""
    from rich.console import Console

    from laya_inspect.cli.explain import explain_table
    from laya_inspect.report.reading import num

    with FeatureStore(digits["cache"]) as store:
        base = explain_row(digits["laya"], store, row=3, n_steps=4, device="cpu", draws=8)
    assert base.effects_ci is not None
    # QA (MiniLM, layers hidden_states.0 … 6): names that long cropped the interval to "[-0.2" at 80
    long_names = dataclasses.replace(base, layer_names=[f"hidden_states.{i}" for i in range(len(base.layer_names))])
    for e, width in ((base, 80), (base, 72), (long_names, 80)):  # 72: the titles and intervals wrap
        console = Console(width=width, record=True, color_system=None)
        console.print(explain_table(e))
        text = console.export_text()
        assert "…" not in text and max(map(len, text.splitlines())) <= width
        cells = [line.split() for line in text.splitlines()]
        words = text.replace("[", " ").replace("]", " ").replace(",", " ").replace("*", " ").split()
        for i, layer in enumerate(e.layer_names):
            row = next(c for c in cells if c and c[0] == layer)  # the name whole, at the start of its row
            for scores in [*e.scores.values(), e.effects]:
                assert num(scores[i], 3, sign=True) in " ".join(row)
            assert {num(v, 3, sign=True) for v in e.effects_ci[i]} <= set(words)
