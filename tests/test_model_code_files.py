"""A python:FILE.py:factory model's code is FILE.py and the modules beside it that it imports (its folder
is searched first for imports): weights_sha256 covers them all, the cache records each one's sha256
(model_code), and a resume after one of them was edited is refused naming that file. Before, only FILE.py
was covered: an edited mynet_blocks.py resumed into a cache of two models."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import pytest
from helpers import digits_test_config, stopped_after_first_batch

from laya_inspect import ExtractConfig, extract_features
from laya_inspect.cache.schema import decode_attr
from laya_inspect.errors import CacheError
from laya_inspect.models import load_model
from laya_inspect.models.local import code_files
from laya_inspect.models.weights import sha256_file, sha256_files

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "digits_convnet.py"
EDIT = (b"nn.ReLU()", b"nn.GELU()", 1)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """mynet.py, whose build comes from mynet_blocks.py beside it, and a package that nothing imports."""
    shutil.copy(FIXTURE, tmp_path / "mynet_blocks.py")
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "__init__.py").write_text("from .sizes import WIDTH\n")
    (tmp_path / "parts" / "sizes.py").write_text("WIDTH = 8\n")
    (tmp_path / "parts" / "unused.py").write_text("X = 1\n")
    (tmp_path / "mynet.py").write_text(
        "import torch\nfrom parts import WIDTH\nfrom mynet_blocks import build as _build\n\n\n"
        "def build():\n    import json  # noqa: F401\n    return _build()\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_code_covers_the_modules_it_imports_from_its_folder_only(folder):
    found = [p.relative_to(folder).as_posix() for p in code_files(folder / "mynet.py")]
    assert found == ["mynet.py", "mynet_blocks.py", "parts/__init__.py", "parts/sizes.py"]
    # each file's sha256 of the bytes read to find its imports: not read again to hash it
    assert {p: sha256_file(folder / p) for p in found} == {
        p.relative_to(folder).as_posix(): d for p, d in code_files(folder / "mynet.py").items()
    }
    loaded = load_model("python:mynet.py:build", random_init=True)
    assert sorted(loaded.code_files) == sorted(found)
    before = loaded.weights_sha256
    (folder / "mynet_blocks.py").write_bytes(FIXTURE.read_bytes().replace(*EDIT))
    assert load_model("python:mynet.py:build", random_init=True).weights_sha256 != before
    (folder / "parts" / "unused.py").write_text("X = 2\n")  # imported by nothing: not the model's code
    edited = load_model("python:mynet.py:build", random_init=True).weights_sha256
    (folder / "parts" / "unused.py").write_text("X = 3\n")
    assert load_model("python:mynet.py:build", random_init=True).weights_sha256 == edited


def stopped_digits(tmp_path: Path, model: str = "python:mynet.py:build") -> ExtractConfig:
    """The extraction of ``model``'s rows of the digits (random weights) into tmp_path/c.h5, stopped after
    its first batch."""
    config = digits_test_config(model, tmp_path / "c.h5")
    stopped_after_first_batch(config)
    return config


def test_a_resume_after_an_imported_module_was_edited_is_refused_naming_it(folder, tmp_path):
    config = stopped_digits(tmp_path)
    kept = (folder / "mynet_blocks.py").read_bytes()
    (folder / "mynet_blocks.py").write_bytes(kept.replace(*EDIT))
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert "other weights" in said and "the model's code changed: mynet_blocks.py (edited)" in said, said
    (folder / "mynet_blocks.py").write_bytes(kept)  # put back: resumes
    assert extract_features(config).resumed_from.get("test")
    with h5py.File(config.out, "r") as f:
        code = decode_attr(f.attrs["model_code"])
    assert sorted(code) == ["mynet.py", "mynet_blocks.py", "parts/__init__.py", "parts/sizes.py"]


def test_a_resume_of_an_extraction_whose_digest_covered_the_model_file_alone_says_why_it_differs(folder, tmp_path):
    """Review: a partial cache started by a laya-inspect whose digest covered FILE.py alone (no model_code)
    was refused as "the model file mynet.py changed" where nothing was edited: the digest now covers the
    modules mynet.py imports too."""
    config = stopped_digits(tmp_path)
    with h5py.File(str(config.out) + ".partial", "r+") as f:
        del f.attrs["model_code"]  # as the laya-inspect before it wrote it
        f.attrs["weights_sha256"] = sha256_files([folder / "mynet.py"], [sha256_file(folder / "mynet.py")])
    with pytest.raises(CacheError) as e:
        extract_features(config)
    said = " ".join(str(e.value).split())
    assert "changed" not in said, said
    assert "mynet_blocks.py, parts/__init__.py, parts/sizes.py" in said and "--overwrite" in said, said
