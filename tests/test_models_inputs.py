"""What load_model refuses, and how: random weights, custom code, unreadable files, inputs the model rejects."""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import pickle
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import need_timm_model, watch_hooks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file
from torch import nn

from laya_inspect.data import load_data
from laya_inspect.errors import InputError, LayaError, NotFoundError, UnsafeCheckpointError
from laya_inspect.layers import list_layers, pool, resolve_layers
from laya_inspect.models import build_zoo, load_model, load_weights, read_checkpoint, save_zoo_checkpoint
from laya_inspect.models.base import Adapter, InputSpec, LoadedModel

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


def save_script(module: nn.Module, path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit.* deprecation notices
        torch.jit.save(torch.jit.script(module), str(path))
    return path


def one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text, text
    return text


# ---------------------------------------------------------------------------------------------
# random weights only on purpose


@pytest.mark.parametrize("spec", ["torchvision:squeezenet1_1", "timm:test_resnet", "zoo:cnn"])
def test_no_weights_is_refused_unless_random_init(spec):
    if spec.startswith("timm:"):
        need_timm_model(spec.split(":", 1)[1])
    with pytest.raises(InputError) as info:
        load_model(spec)
    text = one_line(info)
    assert f"{spec} without --weights would be a randomly initialised network" in text
    assert "pass --weights FILE, or --random-init" in text
    loaded = load_model(spec, random_init=True)
    assert loaded.random_init and loaded.weights_sha256 is None and loaded.weights_path is None
    assert loaded.warnings == [
        f"{spec} has random weights (--random-init, no --weights): its layers describe an untrained network, "
        "not a trained one"
    ]


def test_python_source_without_weights_is_refused_before_the_module_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "noisy_factory_mod.py").write_text(
        "from pathlib import Path\nPath('imported').write_text('yes')\n"
        "from torch import nn\ndef make():\n    return nn.Linear(2, 2)\n"
    )
    with pytest.raises(InputError, match="python:noisy_factory_mod:make without --weights"):
        load_model("python:noisy_factory_mod:make")
    assert not (tmp_path / "imported").exists()


def test_sources_that_carry_their_weights_refuse_random_init(tmp_path, tiny_bert):
    path = tmp_path / "seq.pt"
    save_script(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), path)
    for spec in (f"torchscript:{path}", f"hf:{tiny_bert}"):
        with pytest.raises(InputError, match="loads the weights saved with it, so --random-init does not apply"):
            load_model(spec, random_init=True)
        loaded = load_model(spec)
        assert not loaded.random_init and loaded.warnings == []


# ---------------------------------------------------------------------------------------------
# weights_sha256


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_weights_sha256_of_files_directories_and_archives(tmp_path, tiny_bert):
    hf = load_model(f"hf:{tiny_bert}")
    assert hf.weights_sha256 == sha(tiny_bert / "model.safetensors") == load_model(f"hf:{tiny_bert}").weights_sha256
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    archive = save_script(seq, tmp_path / "seq.pt")
    assert load_model(f"torchscript:{archive}").weights_sha256 == sha(archive)
    torch.save(seq.state_dict(), tmp_path / "w.pt")
    on_top = load_model(f"torchscript:{archive}", weights=tmp_path / "w.pt")
    joined = hashlib.sha256(
        b"seq.pt\0" + sha(archive).encode() + b"w.pt\0" + sha(tmp_path / "w.pt").encode()
    ).hexdigest()
    assert on_top.weights_sha256 == joined and on_top.weights_path == str(tmp_path / "w.pt")
    ckpt = save_zoo_checkpoint(tmp_path / "mlp.pt", build_zoo("mlp"))
    assert load_model("zoo:mlp", weights=ckpt).weights_sha256 == sha(ckpt)


# ---------------------------------------------------------------------------------------------
# Hugging Face directories with their own code


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=20,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
    )
    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("tiny_bert")
    transformers.BertModel(config).save_pretrained(d)
    return d


MODELING = """
import os
from pathlib import Path

from transformers import BertModel

Path(os.environ["LAYA_TEST_MARKER"]).write_text("the directory's code ran")


class TinyModel(BertModel):
    pass
"""


@pytest.fixture()
def custom_bert(tiny_bert, tmp_path) -> Path:
    d = tmp_path / "custom"
    d.mkdir()
    for f in tiny_bert.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    config = json.loads((d / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_tiny.TinyModel"}
    (d / "config.json").write_text(json.dumps(config))
    (d / "modeling_tiny.py").write_text(MODELING)
    return d


def never_prompt(*_args, **_kwargs):
    raise AssertionError("transformers asked on the terminal whether to run the directory's code")


def test_custom_code_is_refused_without_trust_remote_code_and_never_prompts(custom_bert, tmp_path, monkeypatch):
    monkeypatch.setattr("builtins.input", never_prompt)
    monkeypatch.setenv("LAYA_TEST_MARKER", str(tmp_path / "marker"))
    with pytest.raises(InputError) as info:
        load_model(f"hf:{custom_bert}")
    text = one_line(info)
    assert "holds its own code (modeling_tiny.py, auto_map in config.json)" in text
    assert "Pass --trust-remote-code if you trust it" in text
    assert not (tmp_path / "marker").exists()
    # an auto_map in another config, or a code file alone, is refused the same way
    (custom_bert / "modeling_tiny.py").unlink()
    config = json.loads((custom_bert / "config.json").read_text())
    del config["auto_map"]
    (custom_bert / "config.json").write_text(json.dumps(config))
    (custom_bert / "tokenizer_config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": ["tok.Tok", None]}}))
    with pytest.raises(InputError, match=r"holds its own code \(auto_map in tokenizer_config.json\)"):
        load_model(f"hf:{custom_bert}")
    (custom_bert / "tokenizer_config.json").unlink()
    (custom_bert / "helpers.py").write_text("")
    with pytest.raises(InputError, match=r"holds its own code \(helpers.py\)"):
        load_model(f"hf:{custom_bert}")


@pytest.mark.slow  # a fresh interpreter, so transformers copies the code into a temporary module cache
def test_custom_code_runs_with_trust_remote_code(custom_bert, tmp_path):
    script = (
        "import sys; from laya_inspect.models import load_model\n"
        "m = load_model(sys.argv[1], trust_remote_code=True)\n"
        "print(type(m.module).__name__, len(m.weights_sha256), m.default_layers[-1])\n"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
        "LAYA_TEST_MARKER": str(tmp_path / "marker"),
    }
    res = subprocess.run(
        [sys.executable, "-c", script, f"hf:{custom_bert}"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["TinyModel", "64", "hidden_states.1"]
    assert (tmp_path / "marker").read_text() == "the directory's code ran"


def test_broken_hf_config_is_one_line(tiny_bert, tmp_path):
    d = tmp_path / "broken"
    d.mkdir()
    (d / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="config.json does not load") as info:
        load_model(f"hf:{d}")
    one_line(info)
    (d / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    with pytest.raises(InputError, match="config.json does not load"):
        load_model(f"hf:{d}")


# ---------------------------------------------------------------------------------------------
# python:pkg.module:factory from the current directory


def test_python_modules_are_found_in_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "cwd_pkg_laya").mkdir()
    (tmp_path / "cwd_pkg_laya" / "nets.py").write_text(
        "from torch import nn\ndef build():\n    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))\n"
    )
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    loaded = load_model("python:cwd_pkg_laya.nets:build", random_init=True)
    assert loaded.num_classes == 2 and sys.path == before
    monkeypatch.chdir(ROOT)
    with pytest.raises(
        NotFoundError, match=r"cannot import 'cwd_pkg_laya_absent.nets'.*\(looked in the current directory"
    ):
        load_model("python:cwd_pkg_laya_absent.nets:build", random_init=True)


@pytest.mark.slow  # extract on digits through the installed command, in a fresh process
def test_the_readme_python_example_runs_from_the_repository_root(tmp_path):
    # The console script, not `python -m`, which would put the current folder on sys.path itself.
    command = Path(sys.executable).parent / "laya-inspect"
    if not command.is_file():
        pytest.skip("the laya-inspect console script is not installed beside this interpreter")
    line = next(ln for ln in (ROOT / "README.md").read_text().splitlines() if "--model python:" in ln)
    argv = shlex.split(line.split("#", 1)[0])[1:]  # without "laya-inspect" and the comment
    files = {"--weights": tmp_path / "digits_convnet.pt", "--out": tmp_path / "f.h5"}
    argv = [str(files.get(argv[i - 1], a)) if i else a for i, a in enumerate(argv)]
    module, factory = argv[argv.index("--model") + 1].removeprefix("python:").split(":")
    with pytest.MonkeyPatch.context() as m:
        m.syspath_prepend(str(ROOT))
        torch.save(getattr(importlib.import_module(module), factory)().state_dict(), files["--weights"])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    res = subprocess.run(
        [str(command), *argv, "--device", "cpu"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert files["--out"].is_file()


def test_python_module_and_factory_failures_are_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad_syntax_laya.py").write_text("def build(:\n")
    (tmp_path / "raising_laya.py").write_text(
        "def build():\n    raise ValueError('no such width')\ndef odd():\n"
        "    from torch import nn\n    m = nn.Linear(2, 2)\n    m.input_spec = {'colour': 3}\n    return m\n"
    )
    with pytest.raises(InputError, match=r"importing 'bad_syntax_laya'.*failed at .*bad_syntax_laya.py:1: SyntaxError"):
        load_model("python:bad_syntax_laya:build", random_init=True)
    with pytest.raises(InputError, match=r"build\(\) failed at .*raising_laya.py:2: ValueError: no such width"):
        load_model("python:raising_laya:build", random_init=True)
    with pytest.raises(InputError, match="input_spec .* is not valid"):
        load_model("python:raising_laya:odd", random_init=True)


# ---------------------------------------------------------------------------------------------
# unreadable weights files


@pytest.fixture(scope="module")
def real_checkpoint(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("ckpt") / "mlp.pt"
    save_zoo_checkpoint(path, build_zoo("mlp"))
    return path.read_bytes()


def torch_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _npy() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(6.0))
    return buffer.getvalue()


def _zip_without_end(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.pt", lambda real: b"", r"is empty \(0 bytes\)"),
        ("random.pt", lambda real: np.random.default_rng(0).bytes(4096), "not a readable PyTorch checkpoint"),
        ("random.pth", lambda real: np.random.default_rng(1).bytes(64), "not a readable PyTorch checkpoint"),
        ("cut.pt", _zip_without_end, "not a readable PyTorch checkpoint"),
        ("zeros.pt", lambda real: bytes(1000), "not a readable PyTorch checkpoint"),
        ("random.safetensors", lambda real: np.random.default_rng(2).bytes(256), "not a readable .safetensors"),
        ("empty.safetensors", lambda real: b"", r"is empty \(0 bytes\)"),
        ("header.safetensors", lambda real: (10**9).to_bytes(8, "little") + b"{}", "not a readable .safetensors"),
        ("list.pt", lambda real: torch_bytes([1, 2]), "holds a list, not a state dict"),
        ("tensor.pt", lambda real: torch_bytes(torch.zeros(3)), "holds a Tensor, not a state dict"),
        ("pickle.pt", lambda real: pickle.dumps({"a": 1}, protocol=2), "not a readable PyTorch checkpoint"),
        ("text.pt", lambda real: b"print('hello')\n", "not a readable PyTorch checkpoint"),
        # QA: "arr.npy is not a readable PyTorch checkpoint: Unsupported operand 147", torch's unpickler's words
        ("arr.npy", lambda real: _npy(), r"is a NumPy array \(\.npy\), not a PyTorch checkpoint: --weights takes"),
        ("model.h5", lambda real: b"\x89HDF\r\n\x1a\n" + bytes(64), r"is an HDF5 file .*, not a PyTorch checkpoint"),
    ],
)
def test_unreadable_weights_are_one_line_errors_naming_the_file(tmp_path, real_checkpoint, name, content, message):
    path = tmp_path / name
    path.write_bytes(content(real_checkpoint))
    with pytest.raises(InputError, match=message) as info:
        load_model("zoo:mlp", weights=path)
    assert str(path) in one_line(info)


def test_a_folder_as_weights_lists_what_it_holds(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "last.pt").write_bytes(b"x")
    with pytest.raises(InputError, match=r"weights '.*run' is a folder, not a weights file; .*: last.pt") as info:
        load_model("torchvision:resnet18", weights=tmp_path / "run")
    one_line(info)
    with pytest.raises(InputError, match="is a folder"):
        load_model(f"torchscript:{tmp_path / 'run'}")


@pytest.mark.parametrize("content", [b"", b"\x00" * 64, b"PK\x03\x04garbage", b"\x80\x02}q\x00."])
def test_unreadable_torchscript_files_are_one_line(tmp_path, content):
    path = tmp_path / "model.pt"
    path.write_bytes(content)
    with pytest.raises(InputError, match="is not a TorchScript archive") as info:
        load_model(f"torchscript:{path}")
    assert str(path) in one_line(info)


def test_state_dicts_that_do_not_fit_name_the_file(tmp_path):
    model = build_zoo("mlp")
    state = model.state_dict()
    cases = {
        "renamed.pt": {k.replace("blocks", "layers"): v for k, v in state.items()},
        "reshaped.pt": {**state, "head.weight": torch.zeros(3, 128)},
        "scalar_head.pt": {**state, "head.weight": torch.tensor(1.0)},
        "not_tensors.pt": {"head.weight": [1.0, 2.0]},
        "empty_dict.pt": {},
    }
    for name, obj in cases.items():
        torch.save(obj, tmp_path / name)
        with pytest.raises(InputError) as info:
            load_model("zoo:mlp", weights=tmp_path / name)
        assert str(tmp_path / name) in one_line(info), name
    # torchvision reads the class count from the classifier: a 0-d classifier is a mismatch, not a crash
    torch.save({"fc.weight": torch.tensor(1.0), "fc.bias": torch.zeros(3)}, tmp_path / "r18.pt")
    with pytest.raises(InputError, match="does not fit ResNet"):
        load_model("torchvision:resnet18", weights=tmp_path / "r18.pt")


class Boom:
    def __reduce__(self):
        return (os.mkdir, (str(Path(os.environ["LAYA_TEST_MARKER"])),))


def test_a_pickle_that_runs_code_is_never_unpickled_without_trust(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYA_TEST_MARKER", str(tmp_path / "pwned"))
    path = tmp_path / "evil.pt"
    torch.save({"state_dict": Boom()}, path)
    for spec in ("zoo:mlp", "torchvision:resnet18"):
        with pytest.raises(UnsafeCheckpointError, match="--trust-pickle") as info:
            load_model(spec, weights=path)
        assert str(path) in one_line(info)
    with pytest.raises(UnsafeCheckpointError):
        read_checkpoint(path)
    assert not (tmp_path / "pwned").exists()


def small() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=600), prefix=st.sampled_from([b"", b"\x80\x02", b"PK\x03\x04", b"\x08" + bytes(7)]))
def test_any_bytes_either_load_or_raise_a_laya_error(tmp_path, data, prefix):
    for suffix in (".pt", ".safetensors"):
        path = tmp_path / f"fuzz{suffix}"
        path.write_bytes(prefix + data)
        try:
            load_weights(small(), path)
        except LayaError as e:
            assert "\n" not in str(e)


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("ckpt") / "small.pt"
    torch.save({"state_dict": small().state_dict(), "epoch": 3}, path)
    return path.read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=1, max_value=10**6), flips=st.lists(st.integers(0, 10**6), max_size=4))
def test_damaged_real_checkpoints_either_load_or_raise_a_laya_error(tmp_path, small_checkpoint, cut, flips):
    data = bytearray(small_checkpoint[: cut % len(small_checkpoint) + 1])
    for i in flips:
        data[i % len(data)] ^= 0xFF
    path = tmp_path / "damaged.pt"
    path.write_bytes(bytes(data))
    try:
        digest = load_weights(small(), path)
        assert digest == sha(path)
    except LayaError as e:
        assert "\n" not in str(e)


def test_safetensors_with_the_wrong_shapes(tmp_path):
    save_file({"head.weight": torch.zeros(2, 2)}, tmp_path / "w.safetensors")
    with pytest.raises(InputError, match="does not fit MLP: missing"):
        load_model("zoo:mlp", weights=tmp_path / "w.safetensors")


# ---------------------------------------------------------------------------------------------
# inputs the model rejects


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> LoadedModel:
    path = save_zoo_checkpoint(tmp_path_factory.mktemp("mlp") / "mlp.pt", build_zoo("mlp"))
    return load_model("zoo:mlp", weights=path)


def test_npz_features_of_the_wrong_width_name_shape_and_expectation(mlp, tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "feat.npz", X=rng.random((30, 20)).astype("float32"), y=np.arange(30) % 3)
    bundle = load_data(f"npz:{tmp_path / 'feat.npz'}", splits=("test",), input_spec=mlp.input_spec)
    inputs, _, _ = next(iter(next(iter(bundle.splits.values())).batches(4)))
    with watch_hooks() as watch, pytest.raises(InputError) as info:
        mlp.run(inputs, mlp.default_layers)
    assert one_line(info) == (
        "zoo:mlp rejected its input float32 (4, 20): RuntimeError: mat1 and mat2 shapes cannot be multiplied "
        "(4x20 and 784x512); it expects images (N, 1, 28, 28)"
    )
    assert isinstance(info.value.__cause__, RuntimeError)
    assert watch.registered and watch.fired_after(mlp.module, torch.rand(2, 1, 28, 28)) == 0


def test_token_ids_beyond_the_vocabulary(tmp_path):
    path = save_zoo_checkpoint(tmp_path / "b.pt", build_zoo("bilstm", vocab_size=50, max_len=8))
    model = load_model("zoo:bilstm", weights=path)
    with pytest.raises(InputError, match=r"rejected its input int64 \(2, 5\): IndexError.*token ids \(N, T\) in 0..49"):
        model.run(torch.full((2, 5), 50), model.default_layers)


def test_torchscript_and_hf_rejections_are_input_errors(tmp_path, tiny_bert):
    path = tmp_path / "seq.pt"
    save_script(nn.Sequential(nn.Linear(2, 3), nn.ReLU()), path)
    ts = load_model(f"torchscript:{path}")
    for names in ([], ["0"]):  # the whole graph, and child by child
        with pytest.raises(InputError, match=r"torchscript:.*rejected its input float32 \(2, 5\)"):
            ts.run(torch.rand(2, 5), names)
    hf = load_model(f"hf:{tiny_bert}")
    with pytest.raises(InputError, match=r"rejected its input input_ids int64 \(1, 40\).*tokenised text"):
        hf.run({"input_ids": torch.ones(1, 40, dtype=torch.long)}, ["hidden_states.1"])


def test_greyscale_images_for_a_model_that_does_not_state_its_channels_are_refused_with_the_fix(tmp_path):
    """QA: 1-channel npz images fed to a TorchScript model whose first convolution takes 3 channels
    failed with "The following operation failed in the TorchScript interpreter", naming neither the
    mismatch nor the fix. Such a model does not state its channels, so nothing repeats greyscale to
    RGB for it (a model that states them gets the images converted, as image folders do)."""
    path = save_script(nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten()), tmp_path / "c.pt")
    ts = load_model(f"torchscript:{path}")
    np.savez(tmp_path / "g.npz", X=np.zeros((8, 12, 12, 1), np.uint8), y=np.arange(8) % 2)
    bundle = load_data(f"npz:{tmp_path / 'g.npz'}", splits=("test",), input_spec=ts.input_spec)
    inputs, _, _ = next(iter(bundle.splits["test"].batches(4)))
    assert tuple(inputs.shape[1:]) == (1, 12, 12)
    with pytest.raises(InputError) as info:
        ts.run(inputs, [])
    said = one_line(info)
    assert "the images have 1 channel and its first convolution takes 3" in said, said
    assert "write the images with 3 channels" in said and "'channels': 3" in said
    fine = load_data(
        f"npz:{tmp_path / 'g.npz'}", splits=("test",), input_spec=InputSpec(kind="image", channels=3, size=12)
    )
    assert fine.transforms["channels"] == {"from": 1, "to": 3, "how": "replicate"}


class Greedy(nn.Module):
    """Asks for a petabyte in its forward: the allocator refuses at once, nothing is touched."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_empty(2**50, dtype=torch.uint8)


@pytest.mark.parametrize(
    "device",
    ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))],
)
def test_running_out_of_memory_says_to_lower_the_batch_size(device):
    model = LoadedModel(Greedy().to(device), "python:greedy:make", "python", InputSpec(), [], device=device)
    with pytest.raises(InputError) as info:
        model.run(torch.rand(2, 3), [])
    assert one_line(info) == (
        f"python:greedy:make ran out of memory on {device} with a batch of float32 (2, 3); "
        "pass a smaller --batch-size" + (" (or --device cpu)" if device == "cuda" else "")
    )


def test_running_out_of_memory_on_a_torch_without_its_device_generic_error(monkeypatch):
    """torch.OutOfMemoryError came in torch 2.3: on 2.2 every model error once ended in an AttributeError."""
    monkeypatch.delattr(torch, "OutOfMemoryError", raising=False)
    model = LoadedModel(Greedy(), "python:greedy:make", "python", InputSpec(), [], device="cpu")
    with pytest.raises(InputError, match="ran out of memory on cpu"):
        model.run(torch.rand(2, 3), [])


def test_errors_of_laya_inspects_own_code_stay_visible(mlp):
    x, calls = torch.rand(2, 1, 28, 28), []

    def broken_hook(name, module, out):
        calls.append(name)
        raise ZeroDivisionError("a bug in a hook")

    with pytest.raises(ZeroDivisionError):
        mlp.forward(x, ["blocks.0"], broken_hook, False)
    with torch.no_grad():
        mlp.module(x)  # the hook, were it left on, would raise again
    assert calls == ["blocks.0"]

    class BrokenAdapter(Adapter):
        def call(self, module, inputs, want_virtual):
            return module(inputs.no_such_attribute)  # fails before the model is called

    broken = LoadedModel(mlp.module, "zoo:mlp", "zoo", mlp.input_spec, mlp.default_layers, adapter=BrokenAdapter())
    with watch_hooks() as watch, pytest.raises(AttributeError):
        broken.run(x, ["blocks.0"])
    assert watch.registered == 1 and watch.fired_after(mlp.module, x) == 0


def test_list_layers_on_a_dummy_batch_the_model_rejects_lists_names_only(mlp):
    odd = LoadedModel(mlp.module, "zoo:mlp", "zoo", InputSpec(kind="image", channels=3, size=5), mlp.default_layers)
    infos = list_layers(odd)
    assert [i.name for i in infos][:2] == ["flatten", "blocks"] and all(i.shape is None for i in infos)
    with pytest.raises(InputError, match="rejected its input"):
        list_layers(odd, torch.rand(2, 3, 5, 5))


# ---------------------------------------------------------------------------------------------
# empty layer selections


def test_torchscript_without_readable_layers_refuses_the_default_selection(tmp_path):
    class Plain(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x)

    path = save_script(Plain(), tmp_path / "plain.pt")
    loaded = load_model(f"torchscript:{path}")
    assert loaded.default_layers == [] and loaded.candidate_layers() == []
    with pytest.raises(InputError) as info:
        loaded.resolve_layers("all")
    text = one_line(info)
    assert "--layers 'all' picks from the model's default layers, and this model has none" in text
    assert "TorchScript takes no Python hooks" in text and "--list-layers" in text
    with pytest.raises(InputError, match="has none; run with --list-layers"):
        resolve_layers("all", loaded.candidate_layers(), loaded.default_layers)  # the plain function says it too
    assert list_layers(loaded, torch.rand(2, 4)) == []


def test_input_spec_says_how_the_models_own_preprocessing_resizes():
    """torchvision and timm presets centre-crop; an HF processor stretches when its size is a height and
    width (ViT, DeiT before its crop) and crops when it is a shortest edge (ConvNeXt below 384)."""
    transformers = pytest.importorskip("transformers")
    from laya_inspect.models.hf import _image_spec

    assert load_model("torchvision:squeezenet1_1", random_init=True).input_spec.resize == "crop"
    need_timm_model("test_vit")
    assert load_model("timm:test_vit", random_init=True).input_spec.resize == "crop"  # crop_mode "center"
    config = transformers.ViTConfig(image_size=224)
    vit = _image_spec(config, transformers.ViTImageProcessor(size={"height": 224, "width": 224}))
    convnext = _image_spec(config, transformers.ConvNextImageProcessor(size={"shortest_edge": 224}))
    assert (vit.resize, vit.size, convnext.resize, convnext.size) == ("stretch", 224, "crop", 224)
    deit = transformers.DeiTImageProcessor(size={"height": 256, "width": 256}, crop_size={"height": 224, "width": 224})
    assert (_image_spec(config, deit).resize, _image_spec(config, deit).size) == ("stretch", 224)  # squashed, then cut
    big = _image_spec(config, transformers.ConvNextImageProcessor(size={"shortest_edge": 384}))
    assert (big.resize, big.size) == ("stretch", 384)  # ConvNeXt's processor squashes from 384 up
    assert _image_spec(config, None).resize is None


@pytest.mark.parametrize("mean_pooled", [True, False])
def test_an_hf_image_model_whose_pooler_averages_its_patches_is_pooled_by_the_mean(tmp_path, mean_pooled):
    """BEiT with use_mean_pooling reads its patches' mean after its class token, not the class token:
    so does --pool auto (its pooler is a LayerNorm of that mean)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BeitConfig(
        image_size=32,
        patch_size=8,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        use_mean_pooling=mean_pooled,
    )
    torch.manual_seed(0)
    beit = transformers.BeitModel(config).eval()
    beit.save_pretrained(tmp_path)
    loaded = load_model(f"hf:{tmp_path}")
    assert loaded.sequence_pool == ("mean[1:]" if mean_pooled else "cls")
    # the embeddings' token 0 is the class token's embedding alone, the same for every image
    assert loaded.sequence_for("hidden_states.0") == ("mean[1:]" if mean_pooled else "mean")
    with torch.no_grad():
        out = beit(torch.randn(2, 3, 32, 32), output_hidden_states=True)
    rows, _ = pool(out.hidden_states[-1], "auto", sequence=loaded.sequence_pool, image_hw=(32, 32))
    if mean_pooled:
        torch.testing.assert_close(beit.pooler.layernorm(rows), out.pooler_output)


def test_a_python_model_whose_input_spec_gives_height_and_width_gets_images_of_that_size(tmp_path, monkeypatch):
    """A python: model's ``input_spec = {"size": [H, W]}`` resized the images to H × W; reading the
    size as a square side (InputSpec.hw) refused it with "got ([16, 12], [16, 12])"."""
    (tmp_path / "rect_laya.py").write_text(
        "from torch import nn\ndef build():\n"
        "    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))\n"
        "    m.input_spec = {'kind': 'image', 'channels': 3, 'size': [16, 12]}\n    return m\n"
    )
    monkeypatch.chdir(tmp_path)
    loaded = load_model("python:rect_laya:build", random_init=True)
    assert loaded.input_spec.hw == (16, 12)
    assert loaded.expects() == "images (N, 3, 16, 12)"
    np.savez(tmp_path / "r.npz", X=np.zeros((8, 20, 20, 3), np.uint8), y=np.arange(8) % 2)
    bundle = load_data(f"npz:{tmp_path / 'r.npz'}", splits=("test",), input_spec=loaded.input_spec)
    inputs, _, _ = next(iter(bundle.splits["test"].batches(4)))
    assert tuple(inputs.shape[1:]) == (3, 16, 12)
    assert tuple(loaded.example_inputs(1).shape) == (1, 3, 16, 12)
