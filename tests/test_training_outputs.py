"""What fit-head and train leave on disk: --out replaced whole or refused, a killed or starved run
leaves the previous output intact, and pooled-over-seeds plots say so in their titles."""

from __future__ import annotations

import hashlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.files import temp_file_name

runner = CliRunner()
ENV = {"COLUMNS": "200"}
QUICK = ["--epochs", "1", "--no-probe", "--d-star", "8"]


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones too) with the sha256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _fit(cache: Path, out: Path, *args: str) -> None:
    result = runner.invoke(app, ["fit-head", str(cache), "--seed", "0", *QUICK, *args, "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output


def test_force_replaces_the_whole_folder_and_no_force_refuses(digits_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "heads"
    _fit(digits_cache, out, "--head", "laya,last")
    assert (out / "laya" / "seed_0" / "weights.pt").is_file()
    refused = runner.invoke(app, ["fit-head", str(digits_cache), "--head", "last", *QUICK, "--out", str(out)], env=ENV)
    assert refused.exit_code == 1 and "is not empty; pass --force" in refused.stderr
    assert (out / "laya").is_dir()
    _fit(digits_cache, out, "--head", "last", "--force")
    # Fewer heads with --force: nothing of the earlier run is left for `compare` to pick up.
    assert sorted(p.name for p in out.iterdir()) == [
        ".laya-inspect.json",
        "last",
        "report.html",
        "runs.csv",
        "runs.json",
        "summary.csv",
        "summary.json",
    ]
    assert not list(tmp_path.glob(".heads.*"))  # no temporary or old folder beside it


def test_out_that_is_a_file_is_refused(digits_cache: Path, tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    result = runner.invoke(app, ["fit-head", str(digits_cache), *QUICK, "--out", str(target)], env=ENV)
    assert result.exit_code == 1 and "is a file; give a folder" in result.stderr
    assert target.read_text() == "x"


def _limit_file_size(limit: int):  # noqa: ANN202 - a preexec_fn
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _cli(*args: str, limit: int | None = None, **kwargs) -> subprocess.Popen:  # noqa: ANN003
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "laya_inspect", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_limit_file_size(limit) if limit else None,
        **kwargs,
    )


@pytest.mark.slow
def test_killed_fit_leaves_the_previous_folder_intact(digits_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "heads"
    _fit(digits_cache, out, "--head", "last")
    before = _snapshot(out)
    proc = _cli("fit-head", str(digits_cache), "--head", "laya", "--seeds", "3", "--epochs", "100000",
                "--patience", "100000", "--no-probe", "--force", "--out", str(out))  # fmt: skip
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".heads.tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(tmp_path.glob(".heads.tmp-*")), "the run never started writing"
    time.sleep(2.0)  # well into training the first head
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert _snapshot(out) == before  # killed mid-run: the old results are untouched
    _fit(digits_cache, out, "--head", "concat", "--force")  # the same command again finishes, and cleans up
    assert (out / "concat").is_dir() and not (out / "last").exists()
    assert not list(tmp_path.glob(".heads.*"))


@pytest.mark.slow
def test_full_disk_ends_fit_head_with_one_line_and_keeps_the_old_folder(digits_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "heads"
    _fit(digits_cache, out, "--head", "last")
    before = _snapshot(out)
    # 64 KiB per file: config.json fits, LAYA's weights.pt (d* = 96) does not.
    proc = _cli("fit-head", str(digits_cache), "--head", "laya", "--seed", "0", "--epochs", "1", "--no-probe",
                "--force", "--out", str(out), limit=64 * 1024)  # fmt: skip
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]  # after the progress lines
    assert last.startswith("error: could not write ") and "File too large (errno 27)" in last
    assert f"--out {out} was left as it was" in last and "Traceback" not in err
    assert _snapshot(out) == before
    assert not list(tmp_path.glob(".heads.*"))


@pytest.mark.slow
def test_full_disk_ends_train_with_one_line_and_no_checkpoint(tmp_path: Path) -> None:
    ckpt = tmp_path / "mlp.pt"
    args = ("train", "--model", "zoo:mlp", "--data", "digits", "--epochs", "1", "--limit", "200", "--device", "cpu")
    first = _cli(*args, "--out", str(ckpt))  # an older checkpoint of train's own: --force may replace only that
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    older, files = ckpt.read_bytes(), sorted(p.name for p in tmp_path.iterdir())
    proc = _cli(*args, "--seed", "1", "--force", "--out", str(ckpt), limit=256 * 1024)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert f"could not write {ckpt}" in err and "errno 27" in err and "Traceback" not in err
    assert ckpt.read_bytes() == older  # --force replaces only with a complete file
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # no new metrics, no leftovers


def test_train_refuses_a_folder_as_out(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", "--model", "zoo:mlp", "--data", "digits", "--out", str(tmp_path)], env=ENV)
    assert result.exit_code == 1 and "is a folder; give a checkpoint file name" in result.stderr


def test_pooled_plots_say_so_and_seed_plots_exist(tmp_path: Path) -> None:
    """Titles read from the SVG text (fonts kept as text): pooled figures name the number of seeds."""
    import matplotlib

    from laya_inspect.training.profiles import compute_profiles, write_profiles

    rng = np.random.default_rng(0)
    labels = np.arange(30) % 3

    class Run:
        def __init__(self, head: str, seed: int) -> None:
            from types import SimpleNamespace

            w = rng.dirichlet(np.ones(2), size=30)
            self.head, self.seed, self.static_weights = head, seed, None
            self.test = SimpleNamespace(weights=w, preds=labels, labels=labels)

    profiles = compute_profiles([Run("laya", s) for s in (0, 1, 2)], layer_names=["a", "b"], class_names=list("xyz"))
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        files = write_profiles(tmp_path, profiles, formats=("png", "svg"))
    assert "pooled over 3 seeds" in (tmp_path / "layer_weights.svg").read_text()
    assert "(all test rows, pooled over 3 seeds)" in (tmp_path / "laya_class_all.svg").read_text()
    assert "seed 1 only" in (tmp_path / "laya_class_all_seed1.svg").read_text()
    seeds_svg = (tmp_path / "laya_seeds.svg").read_text()
    assert "seed 0" in seeds_svg and "seed 2" in seeds_svg and "pooled over 3 seeds" in seeds_svg
    assert "seed_layer_csv" in files and profiles["alpha"]["laya"]["seed_agreement"]["pairs"] == 3


TRAIN = ["train", "--model", "zoo:mlp", "--data", "digits", "--epochs", "1", "--limit", "300", "--device", "cpu"]


class _Killed(BaseException):
    """A kill at one rename: not an Exception, so nothing on the way out treats it as an error to report."""


def _pair(ckpt: Path) -> tuple[int, int | None]:
    """The seed the checkpoint was trained with, and the seed its metrics file says (None: no metrics file)."""
    import json

    import torch

    seed = torch.load(ckpt, map_location="cpu", weights_only=True)["training"]["seed"]
    metrics = ckpt.with_name(ckpt.stem + ".metrics.json")
    return seed, json.loads(metrics.read_text())["training"]["seed"] if metrics.exists() else None


def test_train_killed_between_its_two_renames_leaves_no_mismatched_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`train --force` writes a checkpoint and its metrics: a run killed at either rename leaves the
    old pair or the new one, at worst a checkpoint without metrics, never the metrics of one run
    beside the checkpoint of another."""
    ckpt = tmp_path / "m.pt"
    assert runner.invoke(app, [*TRAIN, "--out", str(ckpt)], env=ENV).exit_code == 0
    replace = os.replace
    for seed, killed_at in ((1, "m.pt"), (2, "m.metrics.json")):

        def killed(src, dst, *args, _at=killed_at, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            if Path(dst).name == _at:
                raise _Killed
            return replace(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, "replace", killed)
        with pytest.raises(_Killed):
            runner.invoke(app, [*TRAIN, "--seed", str(seed), "--force", "--out", str(ckpt)], env=ENV)
        monkeypatch.setattr(os, "replace", replace)
        trained, described = _pair(ckpt)
        assert described in (trained, None), (
            f"killed at {killed_at}: the metrics of seed {described} beside a checkpoint of seed {trained}"
        )
    assert runner.invoke(app, [*TRAIN, "--seed", "3", "--force", "--out", str(ckpt)], env=ENV).exit_code == 0
    assert _pair(ckpt) == (3, 3)


def test_train_removes_the_temporary_files_a_killed_run_left_on_its_out(tmp_path: Path) -> None:
    """A SIGKILLed run leaves `m.pt.tmp-PID` (and its metrics'): the next run on that --out removes
    those whose process is gone, and nothing else: a running process's, another output's, a user's."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = [tmp_path / temp_file_name("m.pt", gone.pid), tmp_path / temp_file_name("m.metrics.json", gone.pid)]
        kept = [
            tmp_path / temp_file_name("m.pt", alive.pid),  # a run still writing
            tmp_path / temp_file_name("other.pt", gone.pid),  # another output's
            tmp_path / "m.pt.tmp-notes",  # not the tool's naming
            tmp_path / f"m.pt.tmp-{gone.pid}.txt",
            tmp_path / f"m.pt.tmp-{gone.pid}",  # no check value: a user's, or an older version's
        ]
        for p in stale + kept:
            p.write_bytes(b"half a file")
        r = runner.invoke(app, [*TRAIN, "--out", str(tmp_path / "m.pt")], env=ENV)
        assert r.exit_code == 0, r.output
        assert [p.name for p in stale if p.exists()] == []
        assert [p.name for p in kept if not p.exists()] == []
    finally:
        alive.kill()
        alive.wait()


def test_a_temporary_folder_left_under_this_process_s_own_pid_is_cleared(tmp_path):
    """Review: in a container every run may be PID 1; a fit-head killed there left .OUT.tmp-1, which the
    next run under the same PID took for its own live temporary and then failed on: 'File exists'."""
    import os

    from laya_inspect.files import make_temp_dir
    from laya_inspect.out_dir import atomic_dir

    out = tmp_path / "out"
    left = tmp_path / f".out.tmp-{os.getpid()}"
    make_temp_dir(left)  # as the killed run made it, with the tool's mark (a user's folder is refused)
    (left / "x").write_text("from the killed run")
    with atomic_dir(out) as tmp:
        (tmp / "a").write_text("new")
    assert (out / "a").read_text() == "new" and not left.exists() and not (out / "x").exists()
