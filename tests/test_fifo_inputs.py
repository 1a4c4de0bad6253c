"""A FIFO given where an input file belongs (a cache, a weights file, a data file) is refused by what
it is, at once. Before, fit-head and compare opened a FIFO cache and hung until a writer came, and a
FIFO weights or CSV file was refused as missing or as "a folder"; a link to a FIFO still hung."""

from __future__ import annotations

import os

import pytest
from test_force_attack_fifo import answer

from laya_inspect import FeatureStore
from laya_inspect.data import load_data
from laya_inspect.errors import LayaError
from laya_inspect.models.weights import read_checkpoint


@pytest.mark.parametrize(
    "name, read, what",
    [
        ("cache.h5", FeatureStore, "is a FIFO (named pipe), not a feature cache"),
        ("w.pt", read_checkpoint, "weights 'w.pt' is a FIFO (named pipe), not a weights file"),
        ("d.csv", lambda p: load_data(f"csv:{p}"), "the csv file 'd.csv' is a FIFO (named pipe), not a file"),
    ],
)
@pytest.mark.parametrize("linked", [False, True])
def test_a_fifo_input_is_refused_by_what_it_is(tmp_path, monkeypatch, name, read, what, linked) -> None:
    """Also through a symbolic link to the FIFO: an input is read through its link."""
    monkeypatch.chdir(tmp_path)
    os.mkfifo("pipe" if linked else name)
    if linked:
        os.symlink("pipe", name)
    hung, out = answer(lambda: read(name), tmp_path / name)
    assert not hung, f"{name}: the read blocked on a FIFO"
    assert isinstance(out, LayaError) and what in str(out), out


def test_extract_refuses_a_fifo_out_before_its_work(tmp_path, monkeypatch) -> None:
    """Without --overwrite extract read an existing --out to tell whether it was an older layout's
    incomplete cache, and hung there on a FIFO after loading the model and the data."""
    from laya_inspect import ExtractConfig, extract_features

    monkeypatch.chdir(tmp_path)
    os.mkfifo("ff.h5")
    config = ExtractConfig(model="zoo:mlp", random_init=True, data="digits", out="ff.h5", device="cpu")
    hung, out = answer(lambda: extract_features(config), tmp_path / "ff.h5")
    assert not hung, "extract blocked on a FIFO --out"
    assert isinstance(out, LayaError) and "--out ff.h5 is a FIFO (named pipe), not a cache" in str(out), out
