"""With one seed, a head under the single-layer probe by more than the margin was called "below the probe"
whatever its test rows allowed, and the warning spoke of "the head's seeds" (QA: 80 test rows, where ±0.1
is the rows' own reach and the margin is 0.03). One seed is now read beside its test rows' Wilson interval."""

from __future__ import annotations

from test_quality import PROBE, _run

from laya_inspect.training.quality import head_quality
from laya_inspect.training.stats import wilson


def test_one_seed_within_its_test_rows_of_the_probe_is_not_shown_below() -> None:
    q = head_quality("laya", [_run(0, test_acc=0.85, epochs_run=40)], test_acc=0.85, chance=0.4, probe=PROBE,
                     layer_names=["a", "b"], n_test=80, epochs=2000)  # fmt: skip
    low, high = wilson(0.85 * 80, 80)
    assert high >= 0.90
    assert not [w for w in q["warnings"] if "probe" in w], q["warnings"]  # before: "below the probe: …"
    assert q["probe_reference"]["reading"] == "not shown below the probe"
    assert q["probe_reference"]["test_rows"] == {"n": 80, "ci_low": low, "ci_high": high, "confidence": 0.95,
                                                 "method": "wilson"}  # fmt: skip
    assert f"[{low:.3f}, {high:.3f}] (95% Wilson), which holds the probe's" in q["gate_notes"][0]


def test_one_seed_clearly_below_says_so_by_its_test_rows_not_seeds() -> None:
    q = head_quality("laya", [_run(0, test_acc=0.60, epochs_run=40)], test_acc=0.60, chance=0.4, probe=PROBE,
                     layer_names=["a", "b"], n_test=400, epochs=2000)  # fmt: skip
    low, high = wilson(0.60 * 400, 400)
    (below,) = [w for w in q["warnings"] if w.startswith("below the probe")]
    assert f"Wilson interval over the 400 test rows, [{low:.3f}, {high:.3f}], lies below its accuracy" in below
    assert "seeds only" not in below, below  # before: "the interval covers the head's seeds only", of one seed
    assert q["probe_reference"]["reading"] == "below the probe" and q["probe_reference"]["test_rows"]["n"] == 400
