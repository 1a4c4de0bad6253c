"""The data fingerprint a resumed extract must match covers the files the rows are read from, not
everything beside them: an extract whose --out lies in the data's folder (the CSV's, the image
folder's) leaves its own <out>.partial, lock and shards there, and a user may save notes there, and
neither may stop the resume. A changed listed image still does, and an interrupted extraction started
by a laya-inspect that hashed every file of the folder resumes where those files are unchanged.
Real data: CIFAR-10 JPEGs from ../shared/data (skipped where absent) through a zoo CNN."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from helpers import stopped_after_first_batch

from laya_inspect import ExtractConfig, extract_features
from laya_inspect.cache.partial import partial_path
from laya_inspect.cache.rows import data_fingerprint
from laya_inspect.data import load_data
from laya_inspect.errors import CacheError


def _data(cifar_cnn: Path, tmp_path: Path, kind: str) -> tuple[str, Path]:
    """The spec and folder of a copy of the images: as an image folder, or listed in folder/labels.csv."""
    folder = tmp_path / "cifar"
    shutil.copytree(cifar_cnn / "source", folder)
    if kind == "imagefolder":
        return f"imagefolder:{folder}", folder
    rows = [f"{c.name}/{f.name},{c.name}" for c in sorted(folder.iterdir()) for f in sorted(c.iterdir())]
    (folder / "labels.csv").write_text("path,label\n" + "\n".join(rows) + "\n")
    return f"imagecsv:{folder / 'labels.csv'}", folder


def _config(cifar_cnn: Path, spec: str, out: Path) -> ExtractConfig:
    return ExtractConfig(
        model="zoo:cnn",
        weights=str(cifar_cnn / "cnn.pt"),
        data=spec,
        out=str(out),
        splits=("test",),
        batch_size=4,
        device="cpu",
    )


@pytest.mark.parametrize("kind", ["imagecsv", "imagefolder"])
def test_an_extract_stopped_resumes_past_files_no_row_reads(cifar_cnn, tmp_path, kind):
    """QA: `extract --data imagecsv:cifar/labels.csv --out cifar/inside.h5` killed, then rerun, was refused
    as "the files behind --data changed": its own cifar/inside.h5.partial had grown since it was started.
    So was any resume once a user saved notes in the data's folder (an image folder's --out is refused
    inside it before any work)."""
    spec, folder = _data(cifar_cnn, tmp_path, kind)
    config = _config(cifar_cnn, spec, (folder if kind == "imagecsv" else tmp_path) / "inside.h5")
    stopped_after_first_batch(config)
    (folder / "notes.txt").write_text("a user's notes, saved beside the data meanwhile\n")
    (folder / "airplane" / "README").write_text("not an image: no row reads it\n")
    result = extract_features(config)
    assert 0 < result.resumed_from["test"] < result.rows["test"]


def test_the_fingerprint_leaves_out_what_extract_writes_beside_its_out(cifar_cnn, tmp_path):
    """<out>.partial, the hidden lock, a torchrun run's <out>.shards and a temporary file of --out, in the
    CSV's folder, are no data; a listed image touched is."""
    spec, folder = _data(cifar_cnn, tmp_path, "imagecsv")
    before = data_fingerprint(load_data(spec, splits="test", seed=0))
    (folder / "inside.h5.partial").write_bytes(b"rows")
    (folder / ".inside.h5.lock").write_text("pid 1\n")
    (folder / "inside.h5.shards").mkdir()
    (folder / "inside.h5.shards" / "rank-00000-of-00002.h5.partial").write_bytes(b"rows")
    (folder / "inside.h5.tmp-123-ab").write_bytes(b"half")
    assert data_fingerprint(load_data(spec, splits="test", seed=0)) == before
    one = next((folder / "automobile").iterdir())
    os.utime(one, ns=(1, 1))
    assert data_fingerprint(load_data(spec, splits="test", seed=0)) != before


def _every_file_digest(folder: Path, data) -> str:
    """The data fingerprint laya-inspect recorded before it hashed only the files the rows are read
    from: names, sizes and times of every file under the data's folder (written out here as it was)."""
    entries = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            entries.append(f"{p.relative_to(folder)}\t{st.st_size}\t{st.st_mtime_ns}")
    h = hashlib.sha256()
    h.update(hashlib.sha256("\n".join(entries).encode()).hexdigest().encode())
    for name, split in data.splits.items():
        h.update(name.encode())
        h.update(np.ascontiguousarray(split.labels, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(split.index, dtype=np.int64).tobytes())
        inputs, _, _ = next(iter(split.batches(min(8, split.n))))
        h.update(np.ascontiguousarray(torch.as_tensor(inputs).float().numpy()).tobytes())
    return h.hexdigest()[:16]


def test_an_extraction_started_under_the_older_fingerprint_resumes_on_the_same_files_only(cifar_cnn, tmp_path):
    """A <out>.partial left by a laya-inspect that hashed every file of the data's folder is neither
    refused for the new rule nor taken as matching other files (an image folder: no older laya-inspect read
    imagecsv, whose folder is not walked for this)."""
    spec, folder = _data(cifar_cnn, tmp_path, "imagefolder")
    (folder / "airplane" / "README.txt").write_text("where these came from")  # hashed before, not now
    config = _config(cifar_cnn, spec, tmp_path / "outside.h5")
    stopped_after_first_batch(config)
    with h5py.File(partial_path(config.out), "r") as f:
        transforms = f.attrs["transforms"]
    size = json.loads(transforms)["output"][1:]
    data = load_data(spec, splits="test", seed=0, image_size=tuple(size), normalize="none")
    older = _every_file_digest(folder, data)
    assert older != data_fingerprint(data)  # the rule did change
    with h5py.File(partial_path(config.out), "r+") as f:
        f.attrs["data_fingerprint"] = older
        del f.attrs["data_content"]  # that laya-inspect recorded no sha256 of the files' bytes
    one = next((folder / "automobile").iterdir())
    kept = one.stat()
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns + 10**9))
    with pytest.raises(CacheError, match="other data"):  # other files: still refused
        extract_features(config)
    os.utime(one, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    result = extract_features(config)
    assert 0 < result.resumed_from["test"] < result.rows["test"]
    with h5py.File(config.out, "r") as f:
        assert f.attrs["data_fingerprint"] == older  # the rows' record as they were started


def test_images_listed_from_another_root_are_fingerprinted_without_a_false_warning(cifar_cnn, tmp_path):
    """Review: where the CSV and its images share no folder below the root (a CSV in /tmp listing images in
    /dev/shm by absolute path), the loader warned that a cache could not tell an image changed, a warning
    fit-head, compare and report.html repeat. The listed images are fingerprinted all the same."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.path.commonpath([shm, tmp_path]) != "/":
        pytest.skip("needs /dev/shm beside a temporary folder outside it")
    images = Path(shutil.copytree(cifar_cnn / "source", shm / f"laya-fp-{os.getpid()}"))
    try:
        rows = [f"{f},{c.name}" for c in sorted(images.iterdir()) for f in sorted(c.iterdir())]
        csv = tmp_path / "labels.csv"
        csv.write_text("path,label\n" + "\n".join(rows) + "\n")
        data = load_data(f"imagecsv:{csv}")
        assert not [w for w in data.warnings if "cannot tell" in w or "share no folder" in w], data.warnings
        before = data_fingerprint(data)
        last = sorted((images / "automobile").iterdir())[-1]  # a row no first batch reads
        os.utime(last, ns=(last.stat().st_atime_ns, last.stat().st_mtime_ns + 10**9))
        assert data_fingerprint(load_data(f"imagecsv:{csv}")) != before
    finally:
        shutil.rmtree(images)


def test_cifar_batches_meta_is_part_of_the_fingerprint(tmp_path):
    """Review: CIFAR-10's batches.meta names the classes, which a resume does not read again; the file
    list that replaced the folder's hash left it out."""
    from test_data import _write_cifar_batches

    folder = tmp_path / "cifar-10-batches-py"
    _write_cifar_batches(folder, np.random.default_rng(0))
    data = load_data(f"cifar10:{folder}")
    assert str(folder / "batches.meta") in (data.files or [])
