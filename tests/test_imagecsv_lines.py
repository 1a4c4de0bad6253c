"""An image list's rows are named by their line of the list file (list.jsonl), not by the folder of the
images: the cache's source_lines named the folder ("line 61 of cifar"), so fit-head's repeated-rows
warning pointed at no file. Real CIFAR-10 JPEGs through a zoo CNN."""

from __future__ import annotations

import json
from pathlib import Path

import h5py

from laya_inspect import ExtractConfig, extract_features


def test_an_image_list_names_its_lines_by_the_list_file(cifar_cnn: Path, tmp_path: Path) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    rows = [
        {"path": str(p.relative_to(cifar_cnn / "source")), "label": p.parent.name}
        for p in sorted((cifar_cnn / "source").glob("*/*.jpg"))
    ]
    for row in rows:
        target = folder / row["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((cifar_cnn / "source" / row["path"]).read_bytes())
    (folder / "list.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "c.h5"
    extract_features(
        ExtractConfig(
            model="zoo:cnn",
            weights=str(cifar_cnn / "cnn.pt"),
            data=f"imagecsv:{folder / 'list.jsonl'}",
            out=str(out),
            batch_size=8,
            device="cpu",
        )
    )
    with h5py.File(out, "r") as f:
        lines = json.loads(f.attrs["source_lines"])
    assert lines["file"] == "list.jsonl", lines  # before: "images", the folder
    assert lines["runs"][0] == [0, 1], lines
