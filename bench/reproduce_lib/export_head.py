"""Turn the head of a jointly trained zoo checkpoint (``laya-inspect train``) into a head directory
that ``laya-inspect compare`` reads, bound to the cache ``laya-inspect extract`` wrote from that same
checkpoint. This is what lets the benchmark score the *jointly trained* LAYA α (the paper's setting)
and not only heads fitted on a frozen backbone: the CLI has no command for it (yet).

    python bench/reproduce_lib/export_head.py --checkpoint zoo-mlp-laya-seed0.pt --cache features.h5 --out DIR

Checks that the cache's layers are the head's layers, then writes DIR/config.json + weights.pt
(laya_inspect.headio.save_head) and DIR/export.json with the head's accuracy on the cache's test
split beside the accuracy ``train`` measured (they must agree: same rows, same features).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from laya_inspect.headio import cache_identity, save_head
from laya_inspect.joint import head_from_checkpoint
from laya_inspect.store import FeatureStore


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--split", default="test")
    a = p.parse_args()
    ckpt = torch.load(a.checkpoint, map_location="cpu", weights_only=True)
    head = head_from_checkpoint(ckpt)
    with FeatureStore(a.cache) as store:
        if list(ckpt["head"]["layer_names"]) != list(store.layer_names):
            raise SystemExit(f"the head reads {ckpt['head']['layer_names']}, the cache holds {store.layer_names}")
        metrics = {k: v for k, v in ckpt.get("metrics", {}).items() if k != "history"}
        meta = {**cache_identity(store), "seed": ckpt.get("seed"),
                "source": "jointly trained head exported from a laya-inspect zoo checkpoint",
                "checkpoint": str(a.checkpoint), "training": ckpt.get("training"), "metrics": metrics}
        save_head(a.out, head, meta=meta)
        hs = [torch.from_numpy(np.ascontiguousarray(x)) for x in store.layers(a.split)]
        labels = store.labels(a.split)
        with torch.no_grad():
            out = head(hs)
        preds = out.logits.argmax(1).numpy()
        acc = float((preds == labels).mean())
        weights = None if out.weights is None else out.weights.mean(0).tolist()
    export = {"checkpoint": str(a.checkpoint), "cache": str(a.cache), "kind": head.kind, "split": a.split,
              "n": int(len(labels)), "accuracy_on_cache": acc, "joint_test_acc": metrics.get("test_acc"),
              "mean_weights_on_cache": weights, "joint_test_mean_weights": metrics.get("test_mean_weights")}
    Path(a.out, "export.json").write_text(json.dumps(export, indent=2) + "\n")
    print(json.dumps(export, indent=2))
    if metrics.get("test_acc") is not None and abs(acc - metrics["test_acc"]) > 1e-6:
        raise SystemExit(f"the exported head scores {acc:.6f} on the cache, train measured {metrics['test_acc']:.6f}: "
                         "the cache does not hold the rows/features the joint run used")


if __name__ == "__main__":
    main()
