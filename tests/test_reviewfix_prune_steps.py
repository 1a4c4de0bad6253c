"""prune's step lines count the work before it starts; a step with nothing to do says nothing."""

from __future__ import annotations

import re

from test_prune import ENV, planted, runner  # noqa: F401  # planted: a fixture

from laya_inspect.cli import app


def test_a_coarse_search_with_no_finer_k_prints_no_empty_refit_step(planted, tmp_path):  # noqa: F811
    """The coarse k search refits every k up to 4, so over 3 layers no ranking has a k below its first
    grid k to add: prune printed "refits: 0 (layer set, seed) pairs, the k below each ranking's first k
    within --max-drop" and counted 0 of 0 done. It prints the first step's count alone now."""
    cache, head_dir = planted
    args = ["prune", str(head_dir), "--cache", str(cache), "--epochs", "1", "--patience", "1", "--lr", "1e-5"]
    args += ["--seeds", "1", "--costs", "shapes", "--no-plots", "--device", "cpu", "--out", str(tmp_path / "p")]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    counts = re.findall(r"refits: (\d+) \(layer set, seed\) pairs", said)
    assert len(counts) == 1 and int(counts[0]) > 0, said
    assert "the k below each ranking's first k" not in said, said
