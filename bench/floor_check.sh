#!/usr/bin/env bash
# The oldest releases pyproject.toml admits, checked end to end: a fresh venv on the oldest Python
# (3.10) with the floor of every declared range, then `laya-inspect demo --quick` and the test suite.
# It compares the demo's numbers with those of the current venv's run when DEMO_REFERENCE is given
# (a demo.json written by the same command with the pinned torch of constraints.txt).
#
#   bash bench/floor_check.sh [VENV_DIR]        # default /tmp/laya-floor; about 3 GB of downloads
#   PYTEST_ARGS='-m "not slow"' bash bench/floor_check.sh
#
# Where a floor is above the range's lower end, a dependency asks for it: transformers 4.40 needs
# safetensors 0.4.1 and tokenizers 0.19; scikit-image 0.24 (tests) needs pillow 9.1.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-/tmp/laya-floor}
PYTHON=${PYTHON:-python3.10}

FLOOR=(
  torch==2.2.0 torchvision==0.17.0 numpy==1.24.0 scipy==1.10.0 scikit-learn==1.3.0 h5py==3.9.0
  typer==0.18.0 rich==13.0.0 matplotlib==3.7.0 captum==0.7.0 safetensors==0.4.1 pillow==9.1.0
  timm==1.0.3 transformers==4.40.0 tokenizers==0.19.1 pandas==1.5.0
)
TEST_TOOLS=(scikit-image==0.24.0 pytest pytest-timeout hypothesis)

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
. "$VENV/bin/activate"
pip install -q "${FLOOR[@]}" "${TEST_TOOLS[@]}"
pip install -q --no-deps -e .
python - <<'EOF'
import importlib.metadata as md
names = "torch torchvision numpy scipy scikit-learn h5py typer click rich matplotlib captum safetensors pillow timm transformers pandas".split()
import sys
print("python", sys.version.split()[0], "·", ", ".join(f"{n} {md.version(n)}" for n in names))
EOF

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg OMP_NUM_THREADS=1
demo=$(mktemp -d)/demo
laya-inspect demo --quick --out "$demo" >"$demo.log" 2>&1 || { tail -30 "$demo.log"; echo "floor check: demo FAILED"; exit 1; }
echo "demo --quick: ok ($demo)"
if [ -n "${DEMO_REFERENCE:-}" ]; then
  python - "$DEMO_REFERENCE" "$demo/demo.json" <<'EOF'
import json, sys
def numbers(path):
    return {(s["name"], k): v for s in json.load(open(path))["steps"] for k, v in (s.get("numbers") or {}).items()}
ref, got = numbers(sys.argv[1]), numbers(sys.argv[2])
differ = [k for k in ref if ref[k] != got.get(k)]
print("demo numbers against the reference:", "the same" if not differ else f"differ in {differ}")
EOF
fi
eval "python -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-}"
