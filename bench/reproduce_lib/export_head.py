"""Turn the head of a jointly trained zoo checkpoint (``laya-inspect train``) into a head directory
that ``laya-inspect compare`` reads — what ``laya-inspect export-head`` does, kept under this name so
recorded benchmark steps stay valid. Fails when the head scores differently on the cache than
``train`` measured (the cache would not hold the rows/features of the joint run).

    python bench/reproduce_lib/export_head.py --checkpoint zoo-mlp-laya-seed0.pt --cache features.h5 --out DIR
"""

from __future__ import annotations

import argparse
import json

from laya_inspect.cache.store import FeatureStore
from laya_inspect.head_dir import export_head


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--split", default="test")
    a = p.parse_args()
    with FeatureStore(a.cache) as store:
        export = export_head(a.checkpoint, store, a.out, split=a.split)
    print(json.dumps(export, indent=2))
    acc, joint = export["accuracy_on_cache"], export["joint_test_acc"]
    if joint is not None and abs(acc - joint) > 1e-6:
        raise SystemExit(
            f"the exported head scores {acc:.6f} on the cache, train measured {joint:.6f}: "
            "the cache does not hold the rows/features the joint run used"
        )


if __name__ == "__main__":
    main()
