"""A python:pkg.module:factory model's code joins what a resume checks. Where the module is the user's own
(here: a package in tmp_path put on sys.path, as PYTHONPATH does), the cache records the sha256 of it and
of the modules of that package it imports (model_code), and a resume after one was edited is refused
naming it; where it lies in an installed package, the package's version is recorded, and a resume over
an upgrade is refused naming it. Before, neither was recorded: an edited module resumed into a cache of
two models. A cache started before the record resumes as it did, saying the code cannot be compared."""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import pytest
from test_model_code_files import stopped_digits

from laya_inspect import extract_features
from laya_inspect.cache.partial import resume_problem
from laya_inspect.cache.schema import decode_attr, encode_attr
from laya_inspect.cache.shards import _check_shard
from laya_inspect.errors import CacheError
from laya_inspect.models.weights import sha256_file

CONVNET = Path(__file__).resolve().parents[1] / "fixtures" / "digits_convnet.py"
EDIT = (b"nn.ReLU()", b"nn.GELU()", 1)


def _forget(name: str) -> None:
    """Drop the package ``name`` from the imported modules: each test imports its own copy."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


@pytest.fixture
def own_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """src/walkpkg: nets.build comes from blocks.py (a relative import) and reads util.py (through the
    package's name); unused.py is imported by nothing. src is on sys.path, outside the installed packages."""
    pkg = tmp_path / "src" / "walkpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A user\'s own package."""\n')
    shutil.copy(CONVNET, pkg / "blocks.py")
    (pkg / "util.py").write_text("CLASSES = 10\n")
    (pkg / "unused.py").write_text("X = 1\n")
    (pkg / "nets.py").write_text(
        "from walkpkg import util\n\nfrom .blocks import build as _build\n\n\n"
        "def build():\n    return _build(util.CLASSES)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    _forget("walkpkg")
    yield pkg
    _forget("walkpkg")


def _installed(site: Path, version: str) -> None:
    """fakenet, installed into ``site`` (a site-packages folder) at ``version``, with its metadata."""
    for old in site.glob("fakenet-*.dist-info"):
        shutil.rmtree(old)
    info = site / f"fakenet-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakenet\nVersion: {version}\n")
    (info / "top_level.txt").write_text("fakenet\n")
    importlib.invalidate_caches()


@pytest.fixture
def installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "fakenet").mkdir(parents=True)
    (site / "fakenet" / "__init__.py").write_text("")
    shutil.copy(CONVNET, site / "fakenet" / "nets.py")
    _installed(site, "1.0")
    monkeypatch.syspath_prepend(str(site))
    _forget("fakenet")
    yield site
    _forget("fakenet")


def _recorded(path: Path | str) -> Any:
    with h5py.File(path, "r") as f:
        return decode_attr(f.attrs["model_code"])


def test_a_package_module_of_the_users_own_is_recorded_with_the_modules_it_imports(own_package, tmp_path):
    config = stopped_digits(tmp_path, "python:walkpkg.nets:build")
    files = ["walkpkg/nets.py", "walkpkg/__init__.py", "walkpkg/blocks.py", "walkpkg/util.py"]
    root = own_package.parent
    assert _recorded(str(config.out) + ".partial") == {f: sha256_file(root / f) for f in files}


def test_a_resume_after_a_module_of_the_package_was_edited_is_refused_naming_it(own_package, tmp_path):
    config = stopped_digits(tmp_path, "python:walkpkg.nets:build")
    kept = (own_package / "blocks.py").read_bytes()
    (own_package / "unused.py").write_text("X = 2\n")  # imported by nothing: not the model's code
    (own_package / "blocks.py").write_bytes(kept.replace(*EDIT))
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert "other model code" in said and "walkpkg/blocks.py (edited)" in said and "put the code back" in said, said
    (own_package / "blocks.py").write_bytes(kept)  # put back: resumes
    result = extract_features(config)
    assert result.resumed_from.get("test") and not [w for w in result.warnings if "cannot be compared" in w]


def test_a_resume_over_an_upgraded_installed_package_is_refused_naming_it(installed_package, tmp_path):
    config = stopped_digits(tmp_path, "python:fakenet.nets:build")
    assert _recorded(str(config.out) + ".partial") == {"fakenet (installed package)": "1.0"}
    _installed(installed_package, "1.1")
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert "other model code" in said and "fakenet (installed package) 1.0 → 1.1" in said, said
    _installed(installed_package, "1.0")  # the version it was started with: resumes
    assert extract_features(config).resumed_from.get("test")


@pytest.mark.parametrize("older", ["{}", None])
def test_an_extraction_started_before_the_record_resumes_saying_the_code_cannot_be_compared(
    own_package, tmp_path, older
):
    """A laya-inspect that recorded model_code {} for such a model, or none at all: resumed as before."""
    config = stopped_digits(tmp_path, "python:walkpkg.nets:build")
    with h5py.File(str(config.out) + ".partial", "r+") as f:
        if older is None:
            del f.attrs["model_code"]
        else:
            f.attrs["model_code"] = older
    result = extract_features(config)
    assert result.resumed_from.get("test")
    said = [w for w in result.warnings if "cannot be compared" in w]
    assert len(said) == 1 and "walkpkg/blocks.py" in said[0], result.warnings


def test_a_shard_over_an_upgraded_package_is_refused_as_one_process_is(tmp_path):
    started: dict[str, Any] = {
        "command": {"model": "python:fakenet.nets:build", "weights": None, "data": "digits"},
        "shard": {"rank": 1, "world_size": 2, "rows": {"test": [64, 128]}},
        "layer_names": ["conv1"],
        "weights_sha256": "",
        "data_fingerprint": "f" * 16,
        "layer_pooling": ["mean"],
        "transforms": {"kind": "image"},
        "model_code": {"fakenet (installed package)": "1.0"},
        "model_file": "",
    }
    path = tmp_path / "rank-00001-of-00002.h5.partial"
    with h5py.File(path, "w") as f:
        for key, value in started.items():
            f.attrs[key] = encode_attr(key, value)
    assert _check_shard(path, started) == {}  # the same version: resumed
    now = {**started, "model_code": {"fakenet (installed package)": "1.1"}}
    problem, remedy = resume_problem(started, now, ["conv1"]) or ("", "")
    assert "fakenet (installed package) 1.0 → 1.1" in problem and "put the code back" in remedy, problem
    with pytest.raises(CacheError) as e:
        _check_shard(path, now)
    assert str(e.value) == f"{path} {problem}; {remedy}"
