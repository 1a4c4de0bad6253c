"""The reliability catalogue (docs/RELIABILITY.md) as data: each mistake a user can make, the command
that makes it, the one line laya-inspect must answer with, the exit code, and what must be left on disk.

tests/test_reliability.py runs every row through the real `laya-inspect` in a subprocess;
tests/test_reliability_doc.py checks that docs/RELIABILITY.md is exactly what :func:`render_doc`
writes. After changing a row, regenerate the page from the repository root:

    python -m tests.reliability_cases --write-doc

A row's ``setup`` is a list of steps ``"NAME ARG …"`` that tests/test_reliability.py (``SETUPS``)
carries out in a fresh copy of the shared inputs (:data:`BASE`) before the command runs. ``message``
holds alternatives: the row passes when any one of them appears in stderr (case-insensitive).
This module imports nothing heavy, so the page is written in a blink.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "RELIABILITY.md"
COMMANDS = (
    "extract", "fit-head", "train", "export-head", "compare", "report", "demo", "prune", "early-exit", "diagnose",
    "explain",
)  # fmt: skip


@dataclass(frozen=True)
class Case:
    id: str
    wrong: str  # what the user got wrong, in words
    argv: str  # laya-inspect's arguments, run in the case's folder
    message: tuple[str, ...]  # any one of these appears in stderr
    exit: int  # 1: the project's own error (LayaError); 2: a usage error from click
    left: str  # what is left on disk, in words
    setup: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()  # wrong advice: none of these may appear in stderr
    not_root: bool = False  # a permission case: root ignores permissions, so it is skipped as root
    fsize: int | None = None  # bytes: the largest file the command may write (ulimit -f), a full disk

    @property
    def command(self) -> str:
        return self.argv.split()[0]


def case(
    id: str,
    wrong: str,
    argv: str,
    message: str | Sequence[str],
    left: str,
    *,
    exit: int = 1,
    setup: Sequence[str] = (),
    absent: Sequence[str] = (),
    not_root: bool = False,
    fsize: int | None = None,
) -> Case:
    return Case(
        id=id,
        wrong=wrong,
        argv=argv,
        message=(message,) if isinstance(message, str) else tuple(message),
        exit=exit,
        left=left,
        setup=tuple(setup),
        absent=tuple(absent),
        not_root=not_root,
        fsize=fsize,
    )


# The shared inputs, built once per test session (in this order) and copied into each case's folder:
# (what it is, the laya-inspect arguments that build it, or None for a file the test writes itself).
BASE: tuple[tuple[str, str | None], ...] = (
    ("ckpt.pt", "train --model zoo:mlp --data digits --limit 300 --epochs 1 --out ckpt.pt"),
    ("digits.npz", None),
    ("cache.h5", "extract --model zoo:mlp --weights ckpt.pt --data digits --limit 100 --out cache.h5"),
    ("npzcache.h5", "extract --model zoo:mlp --weights ckpt.pt --data npz:digits.npz --out npzcache.h5"),
    ("heads/", "fit-head cache.h5 --head laya --head last --seeds 1 --epochs 1 --out heads"),
    ("cmp/", "compare heads/laya/seed_0 --cache cache.h5 -m alpha -m random --bootstrap 10 --no-plots --out cmp"),
)
NPZ_NOTE = "written by the test: 60 + 60 real digits as X_train, y_train, X_test, y_test; X (N, 8, 8) floats in [0, 1]"
EXTRACT = "extract --model zoo:mlp --weights ckpt.pt --data digits --limit 100 --out cache.h5"
EXTRACT_NPZ = "extract --model zoo:mlp --weights ckpt.pt --data npz:digits.npz --out npzcache.h5"
NONFINITE = ("non-finite", "nan")
FOLDER = ("folder", "directory")
EMPTY = ("empty", "no rows", "0 rows")
COMPARE = "compare badhead --cache cache.h5 --method alpha --bootstrap 10 --no-plots --out c2"
FIT = "--seeds 1 --epochs 1 --out fh"
MINE = ("user_files mine",)  # mine/notes.txt and mine/sub/x.txt: a user's own files
USERS = "mine/ as it was: the user's notes.txt and sub/x.txt, byte for byte"
FOREIGN = "did not write"
HEAD = "heads/laya/seed_0 --cache cache.h5"

# fmt: off
CASES: tuple[Case, ...] = (
    # ---- extract: weights files ---------------------------------------------------------------
    case("extract-weights-random-bytes", "--weights is 4 KB of random bytes",
         "extract --model zoo:mlp --weights bad.pt --data digits --out f.h5", "bad.pt",
         "nothing: no f.h5", setup=["random_bytes bad.pt"]),
    case("extract-weights-truncated", "--weights is the first half of a real checkpoint (a copy cut short)",
         "extract --model zoo:mlp --weights half.pt --data digits --out f.h5", "half.pt",
         "nothing: no f.h5", setup=["truncate ckpt.pt half.pt"]),
    case("extract-weights-missing", "--weights names a file that does not exist",
         "extract --model zoo:mlp --weights nope.pt --data digits --out f.h5", "nope.pt", "nothing: no f.h5"),
    case("extract-weights-pickled-module", "--weights is a whole pickled nn.Module (loading it runs code)",
         "extract --model zoo:mlp --weights model.pt --data digits --out f.h5", "--trust-pickle",
         "nothing: no f.h5; the pickle was never unpickled", setup=["pickled_module model.pt"]),
    case("extract-weights-do-not-fit", "--weights is a state dict of another network",
         "extract --model zoo:mlp --weights state.pt --data digits --out f.h5", "state.pt",
         "nothing: no f.h5", setup=["plain_state state.pt"]),
    case("extract-no-weights-torchvision", "no --weights for a torchvision model (it would be randomly initialised)",
         "extract --model torchvision:resnet18 --data digits --out f.h5", "--random-init", "nothing: no f.h5"),
    case("extract-no-weights-python", "no --weights for a python: model, found in the current folder",
         "extract --model python:tinynet:build --data digits --out f.h5", "--random-init", "nothing: no f.h5",
         setup=["python_module tinynet.py"]),
    case("extract-hf-custom-code", "an hf: folder whose config names its own Python code (auto_map)",
         "extract --model hf:hfdir --data digits --out f.h5", "--trust-remote-code",
         "nothing: no f.h5, and the folder's code never ran (it would have written CUSTOM_CODE_RAN)",
         setup=["hf_custom hfdir"]),
    case("extract-torchscript-no-layers", "a TorchScript model with no hookable blocks, default --layers all",
         "extract --model torchscript:net.ts --data digits --out f.h5", "--layers",
         "nothing: no f.h5 (no cache with zero layers)", setup=["torchscript_opaque net.ts"]),
    case("extract-torchscript-traced-training", "a TorchScript convnet traced in training mode (before model.eval())",
         "extract --model torchscript:net.ts --layers -1 --data digits --out f.h5", "model.eval()",
         "nothing: no f.h5 (no features that depend on the batch)", setup=["torchscript_traced_train net.ts"]),
    # ---- extract: data ------------------------------------------------------------------------
    case("extract-npz-nan", "the npz inputs hold NaN",
         "extract --model zoo:mlp --weights ckpt.pt --data npz:x.npz --out f.h5", NONFINITE,
         "nothing: no f.h5", setup=["npz nan x.npz"]),
    case("extract-jpeg-damaged", "an image file is a photo's JPEG with 32 bytes in its middle overwritten "
         "(PIL decodes it without a word into wrong pixels)",
         "extract --model zoo:mlp --weights ckpt.pt --data imagefolder:photos --out f.h5",
         "its JPEG data is damaged", "nothing: no f.h5", setup=["image_folder damaged_jpeg photos"]),
    case("extract-image-beyond-pixel-limit", "an image file of 182 million pixels, beyond twice PIL's limit "
         "(its guard against decompression bombs)",
         "extract --model zoo:mlp --weights ckpt.pt --data imagefolder:photos --out f.h5",
         "twice PIL.Image.MAX_IMAGE_PIXELS", "nothing: no f.h5", setup=["image_folder huge photos"]),
    case("extract-npz-label-negative", "a label is −3",
         "extract --model zoo:mlp --weights ckpt.pt --data npz:x.npz --out f.h5", "-3",
         "nothing: no f.h5", setup=["npz label_negative x.npz"]),
    case("extract-npz-label-1000", "a label is 1000 for a 10-class model (no class_names in the file)",
         "extract --model zoo:mlp --weights ckpt.pt --data npz:x.npz --out f.h5", "1000",
         "nothing: no f.h5 (no 1001-class cache)", setup=["npz label_1000 x.npz"]),
    case("extract-npz-wrong-width", "the npz holds (N, 50) vectors; the model takes 8×8 images (64 values)",
         "extract --model zoo:mlp --weights ckpt.pt --data npz:x.npz --out f.h5", "50",
         "nothing: no f.h5", setup=["npz wide x.npz"]),
    # ---- extract: the output ------------------------------------------------------------------
    case("extract-complete-no-overwrite", "the same extract again, onto its complete cache",
         EXTRACT, "--overwrite", "cache.h5 unchanged"),
    case("extract-out-is-folder", "--out is an existing folder",
         "extract --model zoo:mlp --weights ckpt.pt --data digits --out outdir", FOLDER,
         "outdir/ unchanged (empty)", setup=["mkdir outdir"], absent=["--overwrite"]),
    case("extract-out-unwritable", "--out is inside a folder without write permission",
         "extract --model zoo:mlp --weights ckpt.pt --data digits --out ro/f.h5", "errno",
         "nothing: no ro/f.h5", setup=["readonly ro"], not_root=True),
    case("extract-full-disk", "the disk fills up while the cache is written (ulimit -f 64 KB)",
         "extract --model zoo:mlp --weights ckpt.pt --data digits --out f.h5", "errno",
         "nothing: no f.h5, no temporary file", fsize=64 * 1024),
    case("extract-resume-weights-changed",
         "an interrupted extract rerun after the checkpoint at --weights was replaced",
         EXTRACT, ("sha256", "hash"), "cache.h5.partial unchanged (resumable with the old weights); no cache.h5",
         setup=["interrupted cache.h5", "perturb ckpt.pt ckpt.pt"]),
    case("extract-resume-data-changed", "an interrupted extract rerun after the npz behind --data was replaced",
         EXTRACT_NPZ, "data", "npzcache.h5.partial unchanged (resumable with the old data); no npzcache.h5",
         setup=["interrupted npzcache.h5", "npz shifted digits.npz"]),
    case("extract-resume-model-code-changed",
         "an interrupted extract of python:mynet.py:build rerun after mynet_blocks.py, which mynet.py imports, "
         "was edited",
         "extract --model python:mynet.py:build --random-init --data digits --limit 100 --out pycache.h5",
         "mynet_blocks.py (edited)", "pycache.h5.partial unchanged (resumable with the old code); no pycache.h5",
         setup=["python_split mynet.py pycache.h5", "interrupted pycache.h5", "edit mynet_blocks.py ReLU GELU"]),
    case("extract-overwrite-edited", "--overwrite onto a cache extract wrote, a note added to it by hand since",
         EXTRACT + " --overwrite", "changed since it was written", "cache.h5 unchanged",
         setup=["cache note_attribute cache.h5 cache.h5"]),
    case("extract-locked", "--overwrite while another laya-inspect process holds the cache's lock",
         EXTRACT + " --overwrite", "PID", "cache.h5 unchanged; the other process's lock file untouched",
         setup=["lock_held cache.h5"]),
    case("extract-no-model", "--model left out",
         "extract --data digits --out f.h5", "--model", "nothing: no f.h5", exit=2),
    # ---- fit-head: the cache ------------------------------------------------------------------
    case("fit-head-cache-missing", "the cache path does not exist",
         f"fit-head nope.h5 {FIT}", "nope.h5", "nothing: no fh/"),
    case("fit-head-cache-random-bytes", "the cache is 4 KB of random bytes",
         f"fit-head bad.h5 {FIT}", "bad.h5", "nothing: no fh/", setup=["random_bytes bad.h5"]),
    case("fit-head-cache-incomplete", "the cache is marked incomplete (complete = false; a copied partial file)",
         f"fit-head bad.h5 {FIT}", "incomplete", "nothing: no fh/", setup=["cache incomplete cache.h5 bad.h5"]),
    case("fit-head-cache-no-layer-names", "the cache lacks its layer_names attribute",
         f"fit-head bad.h5 {FIT}", "layer_names", "nothing: no fh/",
         setup=["cache drop_layer_names cache.h5 bad.h5"]),
    case("fit-head-cache-no-labels", "the cache's test split lacks its labels dataset",
         f"fit-head bad.h5 {FIT}", "labels", "nothing: no fh/", setup=["cache drop_labels cache.h5 bad.h5"]),
    case("fit-head-cache-zero-rows", "the cache's train split has zero rows",
         f"fit-head bad.h5 {FIT}", EMPTY, "nothing: no fh/", setup=["cache zero_rows cache.h5 bad.h5"]),
    case("fit-head-cache-width-mismatch", "layer 0 is 512 wide in train but 300 wide in test",
         f"fit-head bad.h5 {FIT}", "width", "nothing: no fh/", setup=["cache width_mismatch cache.h5 bad.h5"]),
    case("fit-head-single-class", "every label in the cache is class 0",
         f"fit-head bad.h5 {FIT}", "class", "nothing: no fh/", setup=["cache single_class cache.h5 bad.h5"]),
    case("fit-head-label-negative", "a train label in the cache is −3",
         f"fit-head bad.h5 {FIT}", "-3", "nothing: no fh/", setup=["cache label_negative cache.h5 bad.h5"]),
    case("fit-head-label-1000", "a train label is 1000 in a 10-class cache",
         f"fit-head bad.h5 {FIT}", "1000", "nothing: no fh/", setup=["cache label_1000 cache.h5 bad.h5"]),
    case("fit-head-nan-features", "a row of layer 0 in the train split is NaN",
         f"fit-head bad.h5 {FIT}", NONFINITE, "nothing: no fh/", setup=["cache nan cache.h5 bad.h5"]),
    # ---- fit-head: options and the output -----------------------------------------------------
    case("fit-head-seeds-negative", "--seeds -2",
         "fit-head cache.h5 --seeds -2 --epochs 1 --out fh", "-2", "nothing: no fh/"),
    case("fit-head-lr-inf", "--lr inf",
         "fit-head cache.h5 --lr inf --seeds 1 --epochs 1 --out fh", "--lr", "nothing: no fh/"),
    case("fit-head-out-not-empty", "--out is the earlier run's non-empty folder, no --force",
         "fit-head cache.h5 --head last --seeds 1 --epochs 1 --out heads", "--force", "heads/ unchanged"),
    case("fit-head-out-is-file", "--out is an existing file",
         "fit-head cache.h5 --seeds 1 --epochs 1 --out notes.txt", "file", "notes.txt unchanged",
         setup=["file notes.txt"]),
    case("fit-head-out-unwritable", "--out is inside a folder without write permission",
         "fit-head cache.h5 --seeds 1 --epochs 1 --out ro/fh", "errno", "nothing: no ro/fh/",
         setup=["readonly ro"], not_root=True),
    case("fit-head-full-disk", "the disk fills up while the LAYA head is saved (ulimit -f 64 KB)",
         "fit-head cache.h5 --head laya --seeds 1 --epochs 1 --out fh", "errno",
         "nothing: no fh/, no temporary folder", fsize=64 * 1024),
    # ---- train --------------------------------------------------------------------------------
    case("train-lr-inf", "--lr inf",
         "train --model zoo:mlp --data digits --limit 200 --epochs 1 --lr inf --out t.pt", "--lr",
         "nothing: no t.pt"),
    case("train-npz-nan", "the npz inputs hold NaN",
         "train --model zoo:mlp --data npz:x.npz --epochs 1 --out t.pt", NONFINITE, "nothing: no t.pt",
         setup=["npz nan x.npz"]),
    case("train-label-negative", "a label in the npz is −3",
         "train --model zoo:mlp --data npz:x.npz --epochs 1 --out t.pt", "-3", "nothing: no t.pt",
         setup=["npz label_negative x.npz"]),
    case("train-single-class", "every label in the npz is class 0",
         "train --model zoo:mlp --data npz:x.npz --epochs 1 --out t.pt", "class", "nothing: no t.pt",
         setup=["npz single_class x.npz"]),
    case("train-out-exists", "--out is an existing checkpoint, no --force",
         "train --model zoo:mlp --data digits --limit 200 --epochs 1 --out ckpt.pt", "--force",
         "ckpt.pt unchanged"),
    case("train-out-edited", "--out is a checkpoint train wrote, saved again by hand since, with --force",
         "train --model zoo:mlp --data digits --limit 200 --epochs 1 --out ckpt.pt --force",
         "changed since it was written", "ckpt.pt unchanged", setup=["perturb ckpt.pt ckpt.pt"]),
    case("train-out-is-folder", "--out is an existing folder",
         "train --model zoo:mlp --data digits --limit 200 --epochs 1 --out heads", FOLDER, "heads/ unchanged"),
    case("train-out-unwritable", "--out is inside a folder without write permission",
         "train --model zoo:mlp --data digits --limit 200 --epochs 1 --out ro/t.pt", "errno",
         "nothing: no ro/t.pt", setup=["readonly ro"], not_root=True),
    case("train-full-disk", "the disk fills up while the checkpoint is saved (ulimit -f 64 KB)",
         "train --model zoo:mlp --data digits --limit 200 --epochs 1 --out t.pt", "errno",
         "nothing: no t.pt, no t.metrics.json, no temporary file", fsize=64 * 1024),
    # ---- export-head --------------------------------------------------------------------------
    case("export-head-random-bytes", "the checkpoint is 4 KB of random bytes",
         "export-head junk.pt --cache cache.h5 --out xh", "junk.pt", "nothing: no xh/",
         setup=["random_bytes junk.pt"]),
    case("export-head-not-zoo", "the checkpoint is a plain state dict, not one `train` wrote",
         "export-head state.pt --cache cache.h5 --out xh", "laya-inspect train", "nothing: no xh/",
         setup=["plain_state state.pt"]),
    case("export-head-pickled", "the checkpoint is a whole pickled nn.Module",
         "export-head model.pt --cache cache.h5 --out xh", "pickle",
         "nothing: no xh/; never unpickled, and no advice to pass a --trust-pickle export-head does not have",
         setup=["pickled_module model.pt"], absent=["--trust-pickle"]),
    case("export-head-other-checkpoint", "the cache was extracted from another checkpoint",
         "export-head other.pt --cache cache.h5 --out xh", "weights", "nothing: no xh/",
         setup=["perturb ckpt.pt other.pt"]),
    case("export-head-cache-missing", "--cache names a file that does not exist",
         "export-head ckpt.pt --cache nope.h5 --out xh", "nope.h5", "nothing: no xh/"),
    case("export-head-layer-mismatch", "the cache holds other layers than the head reads",
         "export-head ckpt.pt --cache bad.h5 --out xh", "layer", "nothing: no xh/",
         setup=["cache other_layer_names cache.h5 bad.h5"]),
    case("export-head-out-not-empty", "--out is a non-empty folder",
         "export-head ckpt.pt --cache cache.h5 --out heads", ("not empty", "non-empty"), "heads/ unchanged"),
    # ---- compare: head directories ------------------------------------------------------------
    case("compare-not-a-head-dir", "the head directory is an empty folder",
         "compare nohead --cache cache.h5 --method alpha --bootstrap 10 --no-plots --out c2", "config.json",
         "nothing: no c2/", setup=["mkdir nohead"]),
    case("compare-head-invalid-json", "the head's config.json is not JSON",
         COMPARE, "json", "nothing: no c2/", setup=["head invalid_json"]),
    case("compare-head-no-kind", "the head's config.json lacks `kind`",
         COMPARE, "kind", "nothing: no c2/", setup=["head drop_kind"]),
    case("compare-head-unknown-kwargs", "the head's config.json has an unknown constructor argument `foo`",
         COMPARE, "foo", "nothing: no c2/", setup=["head unknown_kwargs"]),
    case("compare-head-weights-do-not-fit", "the head's config.json says d_star 32; its weights.pt has 96",
         COMPARE, "weights.pt", "nothing: no c2/", setup=["head misfit_kwargs"]),
    case("compare-head-weights-truncated", "the head's weights.pt is cut to half",
         COMPARE, "weights.pt", "nothing: no c2/", setup=["head truncate_weights"]),
    case("compare-head-weights-missing", "the head's weights.pt is missing",
         COMPARE, "weights.pt", "nothing: no c2/", setup=["head drop_weights"]),
    case("compare-head-other-cache", "the head was trained on another cache (other data_spec)",
         "compare heads/laya/seed_0 --cache other.h5 --method alpha --bootstrap 10 --no-plots --out c2",
         "--allow-other-cache", "nothing: no c2/", setup=["cache other_data_spec cache.h5 other.h5"]),
    case("compare-nan-cache", "a row of layer 0 in the test split is NaN",
         "compare heads/laya/seed_0 --cache bad.h5 --method alpha --bootstrap 10 --no-plots --out c2", NONFINITE,
         "nothing: no c2/", setup=["cache nan_test cache.h5 bad.h5"]),
    # ---- compare: the output ------------------------------------------------------------------
    case("compare-out-not-empty", "--out is the earlier run's folder, no --force",
         "compare heads/laya/seed_0 --cache cache.h5 --method alpha --bootstrap 10 --no-plots --out cmp", "--force",
         "cmp/ unchanged"),
    case("compare-out-is-file", "--out is an existing file",
         "compare heads/laya/seed_0 --cache cache.h5 --method alpha --bootstrap 10 --no-plots --out notes.txt",
         "file", "notes.txt unchanged", setup=["file notes.txt"]),
    case("compare-out-unwritable", "--out is inside a folder without write permission",
         "compare heads/laya/seed_0 --cache cache.h5 --method alpha --bootstrap 10 --no-plots --out ro/c2", "errno",
         "nothing: no ro/c2/", setup=["readonly ro"], not_root=True),
    case("compare-full-disk", "the disk fills up while attributions.h5 is written (ulimit -f 64 KB)",
         "compare heads/laya/seed_0 --cache cache.h5 --method alpha --bootstrap 10 --no-plots --out c2", "errno",
         "nothing: no c2/, no temporary folder", fsize=64 * 1024),
    # ---- report -------------------------------------------------------------------------------
    case("report-missing", "the folder holds no summary.json",
         "report nothere", "summary.json", "nothing"),
    case("report-invalid-json", "summary.json is not JSON",
         "report cmp", "json", "cmp/ unchanged", setup=["summary invalid_json"]),
    case("report-wrong-kind", "summary.json is another tool's JSON",
         "report cmp", "compare", "cmp/ unchanged", setup=["summary wrong_kind"]),
    case("report-no-heads", "summary.json lacks its `heads` list",
         "report cmp", "summary.json", "cmp/ unchanged", setup=["summary drop_heads"]),
    case("report-wrong-types", "summary.json's heads are strings, not objects",
         "report cmp", "summary.json", "cmp/ unchanged", setup=["summary wrong_types"]),
    # ---- demo ---------------------------------------------------------------------------------
    case("demo-unknown-dataset", "--dataset names a dataset the demo does not have",
         "demo --dataset cifar --out d", "digits", "nothing: no d/"),
    case("demo-fashion-missing", "--dataset fashion-mnist with a --data-root that does not exist",
         "demo --dataset fashion-mnist --data-root nope --out d", "nope", "nothing: no d/"),
    case("demo-out-not-empty", "--out is a non-empty folder, no --force",
         "demo --quick --out heads", "--force", "heads/ unchanged"),
    case("demo-seeds-negative", "--seeds -2",
         "demo --quick --seeds -2 --out d", "-2", "nothing: no d/"),
    # ---- --force and what is not laya-inspect's to replace ------------------------------------
    case("fit-head-force-foreign", "--out holds the user's own files, with --force",
         "fit-head cache.h5 --head last --seeds 1 --epochs 1 --out mine --force", FOREIGN, USERS, setup=MINE),
    case("fit-head-force-out-dot", "--out . (the current folder) with --force",
         "fit-head cache.h5 --head last --seeds 1 --epochs 1 --out . --force", "current folder",
         "everything as it was"),
    case("fit-head-force-out-root", "--out / with --force",
         "fit-head cache.h5 --head last --seeds 1 --epochs 1 --out / --force", "above", "everything as it was"),
    case("fit-head-force-out-holds-cache", "--out is the folder that holds the cache, with --force",
         "fit-head d/cache.h5 --head last --seeds 1 --epochs 1 --out d --force", "input",
         "d/ as it was (the cache, and the user's notes.txt, byte for byte)",
         setup=["user_files d", "nest cache.h5 d"]),
    case("fit-head-force-other-command", "--out is compare's earlier output, with --force",
         "fit-head cache.h5 --head last --seeds 1 --epochs 1 --out cmp --force", "laya-inspect compare",
         "cmp/ unchanged"),
    case("compare-force-foreign", "--out holds the user's own files, with --force",
         f"compare {HEAD} --method alpha --bootstrap 10 --no-plots --out mine --force", FOREIGN, USERS,
         setup=MINE),
    case("compare-force-file-added", "the user added notes.txt to compare's earlier output, then --force",
         f"compare {HEAD} --method alpha --bootstrap 10 --no-plots --out cmp --force", ("notes.txt", FOREIGN),
         "cmp/ as it was, cmp/notes.txt byte for byte", setup=["user_files cmp"]),
    case("compare-force-out-holds-heads", "--out is the folder of the compared head directories, with --force",
         f"compare {HEAD} --method alpha --bootstrap 10 --no-plots --out heads --force", "input",
         "heads/ unchanged"),
    case("compare-force-out-dot", "--out . (the current folder) with --force",
         f"compare {HEAD} --method alpha --bootstrap 10 --no-plots --out . --force", "current folder",
         "everything as it was"),
    case("compare-force-out-symlink", "--out is a symlink to a folder elsewhere, with --force",
         f"compare {HEAD} --method alpha --bootstrap 10 --no-plots --out link --force", "symlink",
         "link and elsewhere/ as they were", setup=["user_files elsewhere", "symlink link elsewhere"]),
    case("prune-force-foreign", "--out holds the user's own files, with --force",
         f"prune {HEAD} --out mine --force", FOREIGN, USERS, setup=MINE),
    case("prune-out-inside-head", "--out lies inside the head directory being pruned",
         f"prune {HEAD} --out heads/laya/seed_0/p", "inside", "heads/ unchanged"),
    case("early-exit-force-foreign", "--out holds the user's own files, with --force",
         f"early-exit {HEAD} --out mine --force", FOREIGN, USERS, setup=MINE),
    case("diagnose-force-foreign", "--out holds the user's own files, with --force",
         f"diagnose {HEAD} --out mine --force", FOREIGN, USERS, setup=MINE),
    case("diagnose-force-out-holds-cache", "--out is the folder that holds the cache, with --force",
         "diagnose heads/laya/seed_0 --cache d/cache.h5 --out d --force", "input", "d/ as it was",
         setup=["nest cache.h5 d"]),
    case("export-head-force-foreign", "--out holds the user's own files, with --force",
         "export-head ckpt.pt --cache cache.h5 --out mine --force", FOREIGN, USERS, setup=MINE),
    case("demo-force-foreign", "--out holds the user's own files, with --force",
         "demo --quick --out mine --force", FOREIGN, USERS, setup=MINE),
    case("demo-force-out-dot", "--out . (the current folder) with --force",
         "demo --quick --out . --force", "current folder", "everything as it was"),
    case("explain-out-is-cache", "--out names the cache the row is read from",
         f"explain {HEAD} --row 0 --out cache.h5", "input", "cache.h5 unchanged"),
    case("explain-out-inside-head", "--out is a file inside the head directory",
         f"explain {HEAD} --row 0 --out heads/laya/seed_0/row.png", "inside", "heads/ unchanged"),
    case("report-html-symlink", "DIR is a symlink to compare's output, with --html",
         "report link --html", "symlink", "cmp/ and link as they were", setup=["symlink link cmp"]),
    case("train-out-symlink", "--out is a symlink to another checkpoint, with --force",
         "train --model zoo:mlp --data digits --limit 200 --epochs 1 --out t.pt --force", "symlink",
         "ckpt.pt and t.pt as they were", setup=["symlink t.pt ckpt.pt"]),
    case("extract-out-is-weights", "--out names the --weights file, with --overwrite",
         "extract --model zoo:mlp --weights ckpt.pt --data digits --limit 100 --out ckpt.pt --overwrite", "input",
         "ckpt.pt unchanged"),
    # ---- an output that is an existing file or folder of another kind: refused by what it is ------------
    case("compare-out-is-checkpoint", "--out names the checkpoint train wrote, with --force",
         "compare heads/laya/seed_0 --cache cache.h5 --method alpha --bootstrap 10 --no-plots --out ckpt.pt --force",
         "ckpt.pt is a file (a checkpoint laya-inspect train wrote)", "ckpt.pt unchanged"),
    case("fit-head-out-is-copied-cache", "--out names a copy of a cache (no record beside it), with --force",
         "fit-head cache.h5 --seeds 1 --epochs 1 --out sub/cache.h5 --force", "sub/cache.h5 is a file (an HDF5 file)",
         "sub/cache.h5 unchanged", setup=["nest cache.h5 sub"]),
    case("explain-out-is-head", "--out names another head directory, with --force",
         f"explain {HEAD} --row 0 --out heads/last/seed_0 --force", "(a head directory laya-inspect wrote)",
         "heads/ unchanged"),
    case("report-html-page-is-folder", "DIR/report.html is a folder of the user's files, with --html",
         "report cmp --html", "cmp/report.html is a folder where a file is to be written",
         "cmp/ as it was, the user's report.html/ folder with its files", setup=["folder_over cmp/report.html"],
         absent=["give a file name"]),
)
# fmt: on


# ------------------------------------------------------------------------------------------------
# docs/RELIABILITY.md

INTRO = """\
# Reliability: nothing lost, nothing silently wrong

An interpretability tool is judged by the one time it hands back a confident answer computed from
garbage. This page is laya-inspect's promise about mistakes and accidents, and the catalogue that
proves it: every row below is run through the real `laya-inspect` in a subprocess by
`tests/test_reliability.py` (`python -m pytest -q tests/test_reliability.py`, marked `slow`).

Generated from `tests/reliability_cases.py` by `python -m tests.reliability_cases --write-doc`; do not
edit by hand (`tests/test_reliability_doc.py` fails when the two differ).

## The rules

- **A mistake is one line.** Every error a user can cause and fix is one red line on stderr that
  names the bad value and says what to do, and exit code 1. A usage error (an option missing or
  not a number) is click's message and exit code 2. Anything else — a traceback — is a bug.
- **Nothing partial is left.** A command that fails leaves its output as it was: absent when it did
  not exist, byte for byte unchanged when it did, and no temporary file or folder beside it.
- **Nothing silently wrong.** Inputs that would give a confident answer from garbage are refused
  by name: a missing `--weights` (a randomly initialised network needs `--random-init`), NaN or
  infinite inputs, activations and options, labels outside the class list, single-class data,
  a resumed cache whose checkpoint or data changed, a head exported against another checkpoint's
  cache, a folder's own Python code (needs `--trust-remote-code`), a pickled model (needs
  `--trust-pickle`), an empty layer selection.

## Crash safety: how outputs are written

- **Atomic files.** Every file is written as `<name>.tmp-<pid>-<check>` beside its target, flushed and
  fsynced, then renamed over the target in one step (`laya_inspect/files.py`: `write_json`,
  `write_csv`, `write_text`, `write_bytes`, `write_with`, `atomic_path`). A reader, or a run killed
  at any point, sees the old file or the new one, never half of one. Files that belong together
  (`train`'s checkpoint and its metrics) are renamed in an order that never leaves a new one beside
  an old one (`atomic_paths`), and the next run on an output removes the temporary files a killed
  run left there, when their PID is no running process. The check value in the name (8 hex digits of
  the SHA-256 of the name and the PID) is what makes such a file the tool's, as its bytes are the
  writer's: a user's `summary.json.tmp-123` or `features.h5.tmp-123` is never removed, even where 123
  is no running process, and the run names it in a warning.
- **Atomic folders.** A head directory, `fit-head --out`, `compare --out` and `export-head --out`
  are built whole under a hidden temporary name (`.<name>.tmp-<pid>`) and renamed over the target
  at the end (`atomic_dir`). A non-empty output folder is refused without `--force`; with
  `--force` it is replaced whole, so no earlier run's heads or plots survive beside the new ones.
  A run killed between the two renames is repaired by the next run on that output (the previous
  output put back, then refused without `--force` as any non-empty output is; `report` on the missing
  output names the `.<name>.old-<pid>/` that holds it). A temporary folder carries the mark
  `.laya-inspect.tmp` from the moment it is made, and the next run removes a `.<name>.tmp-<pid>/`
  only when it is empty or carries that mark (or its own marker lists all it holds), and puts back
  or removes a `.<name>.old-<pid>/` only when it is empty or holds only what its marker lists: a
  folder of the user's under such a name is left as it is and named in a warning (also among the
  new output's summary.json `warnings`); the swap's own `.<name>.old-<pid>/` is checked again before
  it is removed, and kept, named in a warning, when a file was saved into the output just before the
  rename; one under the very
  name the run would use (its own PID, as every run in a container may be PID 1) is refused before
  any work. A previous output
  that cannot be removed (a read-only folder inside it) is left whole and named in a warning, with
  why, by each run that meets it. `demo --force` builds
  the new demo the same way beside the previous one, whose files name the demo's folder, not the
  temporary one: a run stopped at any step leaves the previous demo whole. A `demo` without
  `--force` writes into its new folder step by step, and one stopped part-way keeps the steps it
  finished (its `demo.json` says which).
- **`--force` replaces only what laya-inspect wrote.** Every output folder carries a marker,
  `.laya-inspect.json`, naming the command, the version, the time and every file the command wrote
  (docs/FORMATS.md). `--force` replaces a folder only when it is empty, or when its marker names the
  same command and every file in it is one the marker lists (a marked sub-folder, such as a head
  directory or a demo's `heads/`, answers for its own files). A folder of the user's own files, a
  file added to an earlier output, or another command's output is refused in one line naming the
  first foreign files; no flag deletes them. The check runs before any work and again just before
  the swap, so a file added while the command runs is not lost either, nor an output that appeared
  there meanwhile without `--force`; `train`, `extract` and `explain --out` check their one file
  again just before it is renamed into place, for a file saved there during the run. A listed file
  the user edited, or replaced with a file of their own under its name, is refused by name too:
  one of at most 64 MiB by the SHA-256 the marker records, a larger one (compare's attributions.h5,
  a head's weights) by the size and mtime it records instead of a digest (a stat, however large
  the file: nothing is read again), so `cp -r` without `-p` makes a copied output's large files
  the user's. `report --html` rebuilds no page edited since it was written either, even one copied
  out without the folder's marker (the page's own SHA-256 seal, docs/FORMATS.md). A marker
  written before sizes and times were recorded leaves its larger files
  unchecked, as before; one written before `files_digest` vouches only for files that have not
  changed since it was written. A link under a listed name is the user's (laya-inspect writes
  none), and so is a listed file a current marker records nothing of (a file saved where a listed
  folder was). A FIFO, socket or device under an output's name (`train --out`, its metrics file,
  `extract --out` or its `NAME.partial`, `explain --out`, `report.html`) is refused by what it is,
  before anything opens it (a FIFO would block the run for ever). `train --out model.pth` beside
  `model.pt` is refused, `--force` or not, as both write `model.metrics.json` and model.pt's would be
  lost. What a run
  killed with SIGKILL left for an output inside this one (`compare --out heads/cmp`: its lock holding
  the dead PID, beside that PID's temporary name) is laya-inspect's; a name that only looks like one
  is refused, with the output it belongs to, whose next run clears it. A temporary name of a listed
  folder (`.plots.tmp-123/`) is the tool's only while it holds nothing the tool did not write.
- **Never the inputs, never the wrong folder.** Before any work, every command with an output
  (`extract`, `train`, `fit-head`, `export-head`, `compare`, `prune`, `early-exit`, `diagnose`,
  `demo`, `explain --out`, `report --html`) refuses an output that is a symlink, that is `.`, `/`,
  the home folder or a folder above the current or the home folder, or that is, holds, or lies
  inside one of the run's inputs (the cache, a head directory, the weights, a data folder), or that
  lies in a folder this user may not write in (errno 13, before the work, not at its end); a
  folder output is written where it was checked, `link/../x` beside the link's target. A
  fit-head output given to compare, diagnose, prune or early-exit stands for its head directories:
  an output beside them in it (`diagnose heads --out heads/diag`) is never read as a head, and
  `fit-head --force` refuses to delete it, so it is allowed; one that is or holds it is refused.
- **One writer per output.** Each output is guarded by a lock file `.<name>.lock` beside it,
  holding one line, "laya-inspect lock pid=PID host=HOST boot=BOOT" (`output_lock`, an `flock` the
  kernel releases when the process dies, so a killed run's lock is taken over by the next run). A
  second writer is refused at once, with the holder's PID; it touches nothing. A file under the
  lock's name that does not hold that line (empty, only digits, a user's notes) is refused and left
  as it is. A lock written under this kernel (its boot id: any container on it, whatever its host
  name) is judged by its flock; one of another host and boot id is never taken for a killed run's
  (its live holder's flock may not be seen over a network file system): it is refused, naming the
  lock to delete if no run there writes the output (the rule relies on machines having different host
  names; where there is no boot id, as outside Linux, a host renamed since a killed run is taken for
  another machine and its lock is refused the same way). A run killed while it made the lock leaves a
  temporary file that neither blocks a later run of its PID nor outlives the next sweep.
- **An output that cannot be replaced is refused before the work.** An existing output that is
  immutable or append-only (`chattr +i` / `+a`), or holds such a file or folder, is refused with the
  `chattr` that frees it, not found at the final rename once the work is done. So is extract's
  `NAME.partial` (which a resume appends to) and its `NAME.shards/` folder of a torchrun run.
- **Ctrl-C and SIGTERM end a command cleanly.** Ctrl-C, and SIGTERM (`kill PID`, `docker stop`, a
  scheduler's preemption), stop the command where it is and run its cleanup: the temporary files
  and folders above are removed, extract's rows are kept in `NAME.partial`, and the worker processes
  it forked are ended with it. One yellow line says what is left on disk ("interrupted: …" or
  "terminated: …"), with the shell's exit code for the signal, 130 or 143. Only the command line
  handles SIGTERM so (a Python caller's own handling is left as it is); SIGKILL leaves the
  temporary names, which the next run on that output removes. A signal once the command has
  finished, while the process exits, says its results are complete (exit 130 or 143 still).
- **A reader that leaves the pipe stops nothing.** `laya-inspect demo | head`: once stdout's (or
  stderr's) reader is gone the command writes nothing more there, quietly, finishes its work and its
  files, and exits 141 (128 + SIGPIPE) instead of 0; an error keeps exit 1.
- **A cache is complete or absent.** `extract --out NAME` writes its rows into `NAME.partial`,
  batch by batch, and renames it to `NAME` only when every split is full, so the final name never
  holds half a cache. A killed run leaves `NAME.partial`; the same command resumes it, but only when
  the command, the layers (in their order), the checkpoint (its sha256) and the data (a fingerprint
  of the files behind `--data`) are the ones its rows came from; otherwise it refuses, names what
  changed (the options: old → new), and leaves the partial file as it was. Before it goes on it
  computes the last rows on disk again (at most 4 a split) and refuses when the model no longer gives
  them (its code edited while the weights file stayed the same). A `NAME.partial` that
  laya-inspect did not write (a symlink, a folder, any file that is not its cache) is neither
  resumed nor removed, with or without `--overwrite`: it is refused by name and left as it is.
- **`extract --overwrite` never truncates in place.** It takes the lock first, builds the new cache
  beside the old one and renames it over the old one at the end, so the old cache stays readable
  (by a running `compare`, say) until the new one is complete, and a failed `--overwrite` leaves
  it intact. It replaces only a cache holding nothing but what extract writes: one the user saved
  a dataset of their own into (`/notes`, `/train/my_labels`) is refused by name. And only one still
  as extract wrote it, by the record beside it (`.cache.h5.laya-inspect.json`: its SHA-256, or its
  size and mtime over 64 MiB): a note added or a label changed in place is refused by name too. A cache
  an earlier version wrote has no record: it is replaced with a warning that such edits cannot be seen.
- **OS errors are one line.** A full disk or a missing permission ends as one line naming the path
  and the errno, with the temporary file removed; a folder output's line adds that `--out` was left
  as it was.

## The shared inputs

Each case runs in a fresh folder holding a copy of these, built once per test session:

| input | built by |
|---|---|
"""

CASE_HEAD = """
## The catalogue

Exit 1: the project's own error; 2: a usage error. *Message* is a fragment of the one line the
command must print (any of the alternatives, case-insensitive); the row fails on a traceback, on
another exit code, on wrong advice it must not give, and when anything in its folder was added,
changed or removed. Rows marked "(not as root)" are skipped when the tests run as root, which
ignores permissions. Files named in *setup* are made by the test (`tests/test_reliability.py`,
`SETUPS`).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def render_doc(cases: Sequence[Case] = CASES) -> str:
    lines = [INTRO.rstrip("\n")]
    for name, how in BASE:
        lines.append(f"| `{name}` | {_cell(NPZ_NOTE) if how is None else _code('laya-inspect ' + how)} |")
    lines.append(CASE_HEAD.rstrip("\n"))
    n = 0
    for command in COMMANDS:
        rows = [c for c in cases if c.command == command]
        lines += ["", f"### {command} ({len(rows)} cases)", ""]
        lines.append("| # | input: what the user got wrong | command | message | exit | left on disk |")
        lines.append("|---|---|---|---|---|---|")
        for c in rows:
            n += 1
            wrong = _cell(c.wrong)
            if c.setup:
                wrong += " <br>setup: " + ", ".join(_code(s) for s in c.setup)
            if c.fsize:
                wrong += f" <br>(files capped at {c.fsize // 1024} KB)"
            if c.not_root:
                wrong += " <br>(not as root)"
            message = " or ".join(_code(m) for m in c.message)
            if c.absent:
                message += "; never " + ", ".join(_code(a) for a in c.absent)
            lines.append(
                f"| {n} | {wrong} | {_code('laya-inspect ' + c.argv)} | {message} | {c.exit} | {_cell(c.left)} |"
            )
    lines += ["", f"{n} cases in all.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="print or write docs/RELIABILITY.md from the catalogue")
    parser.add_argument("--write-doc", action="store_true", help=f"write {DOC}")
    args = parser.parse_args(argv)
    text = render_doc()
    if args.write_doc:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC} ({len(CASES)} cases)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
