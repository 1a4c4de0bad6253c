"""A python:FILE.py model's code files are read to hash them: one that cannot be read is the project's
error naming it, not a raw OSError."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from laya_inspect.errors import InputError
from laya_inspect.models import load_model
from laya_inspect.models.local import code_files


def test_a_code_file_that_is_a_directory_or_a_dangling_link_is_named(tmp_path):
    (tmp_path / "adir.py").mkdir()
    with pytest.raises(InputError, match=r"cannot read .*adir\.py, part of the model's code"):
        code_files(tmp_path / "adir.py")
    os.symlink(tmp_path / "gone.py", tmp_path / "link.py")
    with pytest.raises(InputError, match=r"cannot read .*link\.py, part of the model's code.*No such file"):
        code_files(tmp_path / "link.py")


UNREAD = Path("/proc/self/mem")  # a regular file to stat() whose first bytes cannot be read (EIO)


@pytest.mark.skipif(not UNREAD.is_file(), reason="needs Linux's /proc/self/mem")
def test_an_imported_module_that_cannot_be_read_is_named_with_its_importer(tmp_path, monkeypatch):
    """The import of blocks.py is in a function never called, so Python never reads it; the hash of the
    model's code does, and load_model raised a raw "OSError: [Errno 5] Input/output error"."""
    (tmp_path / "mynet.py").write_text(
        "from torch import nn\n\n\ndef build():\n    return nn.Sequential(nn.Linear(4, 3))\n\n\n"
        "def unused():\n    import blocks  # noqa: F401\n"
    )
    os.symlink(UNREAD, tmp_path / "blocks.py")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"cannot read .*blocks\.py \(imported by .*mynet\.py\), part of"):
        load_model("python:mynet.py:build", random_init=True)
