"""The reliability catalogue (docs/RELIABILITY.md, rows in tests/reliability_cases.py), each row run
through the real `laya-inspect` in a subprocess: the exit code, one line naming the problem, no
traceback, no wrong advice, and the case's folder exactly as it was (nothing added, changed or
removed; no temporary file left).

The shared inputs (a zoo:mlp checkpoint trained on digits, its caches, heads and compare output) are
built once per session by the CLI itself and copied into each case's folder; ``SETUPS`` then makes
the row's bad input there (random bytes, a truncated copy, an HDF5 edit, a held lock …).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability_cases import BASE, CASES, Case

Cleanup = Callable[[], None]
TIMEOUT_S = 300
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MPLBACKEND": "Agg",
    "COLUMNS": "300",  # rich and click wrap at the terminal width: keep each message on one line
    "NO_COLOR": "1",
    "OMP_NUM_THREADS": "1",
}


def cli() -> list[str]:
    """The console script a user runs (its sys.path does not hold the current folder, unlike
    ``python -m``), or ``python -m laya_inspect`` where it is not installed."""
    script = Path(sys.executable).with_name("laya-inspect")
    return [str(script)] if script.exists() else [sys.executable, "-m", "laya_inspect"]


def run_cli(argv: str, cwd: Path, *, fsize: int | None = None) -> subprocess.CompletedProcess[str]:
    def cap_file_size() -> None:  # a full disk: writes past fsize bytes fail with EFBIG (errno 27)
        import resource

        assert fsize is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [*cli(), *argv.split()],
        cwd=cwd,
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=cap_file_size if fsize else None,
    )


# ------------------------------------------------------------------------------------------------
# the shared inputs


def write_digits_npz(path: Path) -> None:
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.images / 16.0).astype(np.float32), d.target.astype(np.int64)
    np.savez(path, X_train=x[:60], y_train=y[:60], X_test=x[60:120], y_test=y[60:120])


@pytest.fixture(scope="session")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reliability-base")
    for name, argv in BASE:
        if argv is None:
            write_digits_npz(root / name)
            continue
        r = run_cli(argv, root)
        if r.returncode != 0:
            pytest.fail(f"building {name} failed: laya-inspect {argv} → exit {r.returncode}\n{r.stderr[-3000:]}")
    return root


# ------------------------------------------------------------------------------------------------
# the bad inputs: SETUPS[name](folder, *args), each may return a cleanup


def random_bytes(work: Path, name: str) -> None:
    import numpy as np

    (work / name).write_bytes(np.random.default_rng(0).bytes(4096))


def truncate(work: Path, src: str, dst: str) -> None:
    data = (work / src).read_bytes()
    (work / dst).write_bytes(data[: len(data) // 2])


def pickled_module(work: Path, name: str) -> None:
    import torch

    torch.save(torch.nn.Linear(2, 2), work / name)  # the whole module: unpickling it imports and runs code


def plain_state(work: Path, name: str) -> None:
    import torch

    torch.save({"blocks.0.weight": torch.zeros(3, 3)}, work / name)


def perturb(work: Path, src: str, dst: str) -> None:
    """The same zoo checkpoint with other backbone weights (another training run, as far as a user can tell)."""
    import torch

    obj = torch.load(work / src, weights_only=True)
    gen = torch.Generator().manual_seed(1)
    obj["state_dict"] = {
        k: v + 0.5 * torch.randn(v.shape, generator=gen) if v.is_floating_point() else v
        for k, v in obj["state_dict"].items()
    }
    torch.save(obj, work / dst)


def npz(work: Path, kind: str, dst: str) -> None:
    """A variant of digits.npz."""
    import numpy as np

    with np.load(work / "digits.npz") as z:
        a = {k: z[k].copy() for k in z.files}
    if kind == "nan":
        a["X_train"][0, 0, 0] = np.nan
    elif kind == "label_negative":
        a["y_train"][0] = -3
    elif kind == "label_1000":
        a["y_train"][0] = 1000
    elif kind == "single_class":
        a["y_train"][:] = 0
        a["y_test"][:] = 0
    elif kind == "wide":
        rng = np.random.default_rng(0)
        a["X_train"], a["X_test"] = rng.random((60, 50), dtype=np.float32), rng.random((60, 50), dtype=np.float32)
    elif kind == "shifted":
        a["X_train"], a["X_test"] = 1 - a["X_train"], 1 - a["X_test"]
    else:
        raise KeyError(kind)
    np.savez(work / dst, **a)


def python_module(work: Path, name: str) -> None:
    (work / name).write_text(
        "from torch import nn\n\n\ndef build():\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))\n"
    )


def python_split(work: Path, name: str, out: str) -> None:
    """``name`` (mynet.py) whose build() comes from ``<stem>_blocks.py`` beside it, and the cache ``out``
    of it (python:NAME:build, random weights) extracted by the CLI: the case edits the imported module."""
    blocks = Path(name).stem + "_blocks"
    (work / f"{blocks}.py").write_text(
        "from torch import nn\n\n\ndef build():\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))\n"
    )
    (work / name).write_text(f"from {blocks} import build  # noqa: F401\n")
    r = run_cli(f"extract --model python:{name}:build --random-init --data digits --limit 100 --out {out}", work)
    assert r.returncode == 0, r.stderr


def edit(work: Path, name: str, old: str, new: str) -> None:
    """``name`` with its first ``old`` made ``new``: a user's edit."""
    text = (work / name).read_text()
    assert old in text, f"{old!r} is not in {name}"
    (work / name).write_text(text.replace(old, new, 1))


def hf_custom(work: Path, name: str) -> None:
    """A Hugging Face folder whose config asks for its own code; that code leaves a mark if it ever runs."""
    d = work / name
    d.mkdir()
    auto_map = {"AutoConfig": "configuration_custom.CustomConfig", "AutoModel": "modeling_custom.CustomModel"}
    config = {"model_type": "laya-custom", "architectures": ["CustomModel"], "auto_map": auto_map}
    (d / "config.json").write_text(json.dumps(config))
    mark = "import pathlib\npathlib.Path('CUSTOM_CODE_RAN').write_text('the folder code ran')\n"
    (d / "configuration_custom.py").write_text(
        mark + "from transformers import PretrainedConfig\n\n\nclass CustomConfig(PretrainedConfig):\n"
        "    model_type = 'laya-custom'\n"
    )
    (d / "modeling_custom.py").write_text(mark)


def torchscript_opaque(work: Path, name: str) -> None:
    """A scripted model without submodules: nothing to hook, so `--layers all` selects no layer."""
    import torch

    class Opaque(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(64, 10))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.flatten(1) @ self.w

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation notices
        torch.jit.save(torch.jit.script(Opaque()), str(work / name))


def torchscript_traced_train(work: Path, name: str) -> None:
    """A convnet traced before model.eval(): batch norm's batch statistics are fixed into its graph."""
    import torch

    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit's deprecation notices, the trace's own check
        torch.jit.save(torch.jit.trace(net.train(), torch.rand(4, 1, 8, 8)), str(work / name))


def mkdir(work: Path, name: str) -> None:
    (work / name).mkdir()


def a_file(work: Path, name: str) -> None:
    (work / name).write_text("my notes\n")


def user_files(work: Path, name: str) -> None:
    """A user's own files in NAME/: notes.txt and sub/x.txt (the folder may already exist)."""
    d = work / name
    (d / "sub").mkdir(parents=True, exist_ok=True)
    (d / "notes.txt").write_text("my notes, not laya-inspect's\n")
    (d / "sub" / "x.txt").write_bytes(bytes(range(256)))


def folder_over(work: Path, name: str) -> None:
    """NAME, a file of an output, replaced by a folder of the user's own files."""
    (work / name).unlink()
    user_files(work, name)


def symlink(work: Path, link: str, target: str) -> None:
    (work / link).symlink_to(target)


def nest(work: Path, src: str, folder: str) -> None:
    """A copy of SRC inside FOLDER/."""
    (work / folder).mkdir(exist_ok=True)
    shutil.copy(work / src, work / folder / Path(src).name)


def image_folder(work: Path, kind: str, name: str) -> None:
    """NAME/a/ and NAME/b/: real photos (skimage.data) as small JPEGs, and in NAME/b/ one bad file:
    ``damaged_jpeg`` a photo's JPEG with 32 bytes in its middle overwritten (same length, not cut short),
    ``huge`` a 13,500 × 13,500 PNG (one bit a pixel, a few hundred KB), beyond twice PIL's pixel limit."""
    import io

    import numpy as np
    from PIL import Image
    from skimage import data

    for i, photo in enumerate(("astronaut", "chelsea", "rocket", "coffee", "camera", "horse")):
        (work / name / "ab"[i % 2]).mkdir(parents=True, exist_ok=True)
        Image.fromarray(getattr(data, photo)()).convert("RGB").resize((32, 32)).save(
            work / name / "ab"[i % 2] / f"{photo}.jpg"
        )
    if kind == "damaged_jpeg":
        buf = io.BytesIO()
        Image.fromarray(data.coffee()).save(buf, "JPEG", quality=90)
        damaged, mid = bytearray(buf.getvalue()), len(buf.getvalue()) // 2
        damaged[mid : mid + 32] = np.random.default_rng(0).integers(0, 256, 32, dtype=np.uint8).tobytes()
        (work / name / "b" / "damaged.jpg").write_bytes(bytes(damaged))
    elif kind == "huge":
        Image.new("1", (13_500, 13_500)).save(work / name / "b" / "huge.png")
    else:
        raise KeyError(kind)


def readonly(work: Path, name: str) -> Cleanup:
    d = work / name
    d.mkdir()
    d.chmod(0o555)
    return lambda: d.chmod(0o755)


def _make_incomplete(f) -> None:
    f.attrs["complete"] = False
    for split in f:
        g = f[split]
        g.attrs["n_written"] = int(g.attrs["n"]) // 2
        g.attrs["complete"] = False


def incomplete(work: Path, name: str) -> None:
    """As a run killed half-way leaves it: complete = false, half of each split's rows counted."""
    import h5py

    with h5py.File(work / name, "r+") as f:
        _make_incomplete(f)


def interrupted(work: Path, name: str) -> None:
    """What a run of `extract --out NAME` killed half-way leaves: NAME.partial, incomplete, and no NAME."""
    incomplete(work, name)
    (work / name).rename(work / f"{name}.partial")


def cache(work: Path, kind: str, src: str, dst: str) -> None:
    """A copy of a cache with one thing wrong."""
    import h5py
    import numpy as np

    if src != dst:  # else the cache is edited in place, as a user edits the one extract wrote
        shutil.copy(work / src, work / dst)
    with h5py.File(work / dst, "r+") as f:
        if kind == "note_attribute":
            f.attrs["note"] = "checked by hand"
        elif kind == "incomplete":
            _make_incomplete(f)
        elif kind == "drop_layer_names":
            del f.attrs["layer_names"]
        elif kind == "drop_labels":
            del f["test/labels"]
        elif kind == "zero_rows":
            g = f["train"]
            for key in list(g):
                ds = g[key]
                shape, dtype, attrs = ds.shape, ds.dtype, dict(ds.attrs)
                del g[key]
                new = g.create_dataset(key, shape=(0, *shape[1:]), dtype=dtype, maxshape=(None, *shape[1:]))
                new.attrs.update(attrs)
            g.attrs.update(n=0, n_written=0)
        elif kind == "width_mismatch":
            g = f["test"]
            n, attrs = g["layer_000"].shape[0], dict(g["layer_000"].attrs)
            del g["layer_000"]
            g.create_dataset("layer_000", data=np.random.default_rng(0).random((n, 300), dtype=np.float32))
            g["layer_000"].attrs.update(attrs)
        elif kind == "single_class":
            for split in f:
                f[split]["labels"][...] = 0
        elif kind == "label_negative":
            f["train/labels"][0] = -3
        elif kind == "label_1000":
            f["train/labels"][0] = 1000
        elif kind in ("nan", "nan_test"):
            f["train/layer_000" if kind == "nan" else "test/layer_000"][3] = np.nan
        elif kind == "other_layer_names":
            f.attrs["layer_names"] = json.dumps(["features.1", "features.2", "features.3"])
        elif kind == "other_data_spec":
            f.attrs["data_spec"] = "npz:other.npz"
        else:
            raise KeyError(kind)
        if kind.startswith("other_"):  # another cache, whole: its attributes' digest is its own
            from laya_inspect.cache.schema import seal

            seal(f)


def head(work: Path, kind: str) -> None:
    """badhead/: a copy of the LAYA head directory with one thing wrong."""
    d = work / "badhead"
    shutil.copytree(work / "heads" / "laya" / "seed_0", d)
    config_path, weights = d / "config.json", d / "weights.pt"
    config = json.loads(config_path.read_text())
    if kind == "invalid_json":
        config_path.write_text('{"schema_version": 1, "kind": "laya", ')
        return
    if kind == "drop_kind":
        del config["kind"]
    elif kind == "unknown_kwargs":
        config["kwargs"]["foo"] = 1
    elif kind == "misfit_kwargs":
        config["kwargs"]["d_star"] = 32
    elif kind == "truncate_weights":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif kind == "drop_weights":
        weights.unlink()
    else:
        raise KeyError(kind)
    config_path.write_text(json.dumps(config, indent=2))


def summary(work: Path, kind: str) -> None:
    """cmp/summary.json, tampered with."""
    path = work / "cmp" / "summary.json"
    s = json.loads(path.read_text())
    if kind == "invalid_json":
        path.write_text(path.read_text()[:100])
        return
    if kind == "wrong_kind":
        s = {"kind": "something-else", "heads": []}
    elif kind == "drop_heads":
        del s["heads"]
    elif kind == "wrong_types":
        s["heads"] = ["oops" for _ in s["heads"]]
    else:
        raise KeyError(kind)
    path.write_text(json.dumps(s))


HOLDER = """
import fcntl, os, sys, time
from laya_inspect.files import lock_text
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, lock_text())
print("ready", flush=True)
time.sleep(600)
"""


def lock_held(work: Path, name: str) -> Cleanup:
    """Another process holds the output's lock (files.output_lock's `.<name>.lock`, PID inside)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(work / f".{name}.lock")], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"

    def stop() -> None:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]

    return stop


SETUPS: dict[str, Callable[..., Cleanup | None]] = {
    "random_bytes": random_bytes,
    "image_folder": image_folder,
    "truncate": truncate,
    "pickled_module": pickled_module,
    "plain_state": plain_state,
    "perturb": perturb,
    "npz": npz,
    "python_module": python_module,
    "python_split": python_split,
    "edit": edit,
    "hf_custom": hf_custom,
    "torchscript_opaque": torchscript_opaque,
    "torchscript_traced_train": torchscript_traced_train,
    "mkdir": mkdir,
    "file": a_file,
    "readonly": readonly,
    "interrupted": interrupted,
    "cache": cache,
    "head": head,
    "summary": summary,
    "lock_held": lock_held,
    "user_files": user_files,
    "symlink": symlink,
    "nest": nest,
    "folder_over": folder_over,
}


# ------------------------------------------------------------------------------------------------
# the check


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with its content hash ("dir" for folders); byte-code caches aside."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if "__pycache__" in rel.parts:
            continue
        if p.is_symlink():
            out[str(rel)] = f"link to {os.readlink(p)}"
        else:
            out[str(rel)] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def problems(
    case: Case, r: subprocess.CompletedProcess[str], before: dict[str, str], after: dict[str, str]
) -> list[str]:
    found = []
    err = " ".join(r.stderr.split())
    if "Traceback" in r.stderr:
        found.append("a traceback")
    if r.returncode != case.exit:
        found.append(f"exit {r.returncode}, expected {case.exit}")
    if not any(m.lower() in err.lower() for m in case.message):
        found.append(f"no {' or '.join(map(repr, case.message))} in stderr")
    found += [f"wrong advice {a!r}" for a in case.absent if a.lower() in err.lower()]
    added = sorted(set(after) - set(before))
    if added:
        temporary = [p for p in added if ".tmp-" in Path(p).name]
        found.append(f"left {', '.join(added[:6])}" + (f" (temporary: {', '.join(temporary)})" if temporary else ""))
    removed = sorted(set(before) - set(after))
    if removed:
        found.append(f"removed {', '.join(removed[:6])}")
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    if changed:
        found.append(f"changed {', '.join(changed[:6])}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_catalogue_row(case: Case, base: Path, tmp_path: Path) -> None:
    if case.not_root and os.geteuid() == 0:
        pytest.skip("root ignores file permissions")
    work = tmp_path / "w"
    shutil.copytree(base, work)
    cleanups: list[Cleanup] = []
    try:
        for step in case.setup:
            name, *args = step.split()
            done = SETUPS[name](work, *args)
            if done is not None:
                cleanups.append(done)
        before = snapshot(work)
        try:
            r = run_cli(case.argv, work, fsize=case.fsize)
        except subprocess.TimeoutExpired:
            pytest.fail(f"laya-inspect {case.argv} ran past {TIMEOUT_S} s")
        after = snapshot(work)
    finally:
        for cleanup in reversed(cleanups):
            cleanup()
    found = problems(case, r, before, after)
    last = next((line.strip() for line in reversed(r.stderr.splitlines()) if line.strip()), "(no stderr)")
    assert not found, f"{'; '.join(found)} — exit {r.returncode}, stderr's last line: {last}"
