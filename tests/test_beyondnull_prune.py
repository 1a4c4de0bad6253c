"""prune's headline, α against a random ranking, is read in the same sentence beside the strongest
ranking that needs no α. A null audit: α put 0.63 on the last layer, so its ranking amounted to "keep
the deepest", and "the α ranking beats a random ranking: +0.0426, 99% CI [+0.0072, +0.0781]" led,
while α against keeping the deepest layers was −0.0063 [−0.0536, +0.0411], said only lines later."""

from __future__ import annotations

from test_prune import _planted_cache
from typer.testing import CliRunner

from laya_inspect.beyond.config import PruneConfig
from laya_inspect.beyond.prune import prune_layers, verdict_lines, versus_verdict
from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app

DEEPEST = "the strongest ranking that needs no α, deepest (keeping the deepest layers)"


def test_alpha_against_random_is_read_beside_the_strongest_ranking_without_alpha(tmp_path):
    cache, head_dir = _planted_cache(tmp_path, 400, seed=0, alpha=(0.0, 0.37, 0.63))  # α: the deepest first
    config = PruneConfig(refit=False, max_drop=0.05, costs="shapes", device="cpu", plots=False)
    with FeatureStore(cache) as store:
        s = prune_layers(head_dir, store, config, out_dir=tmp_path / "out").summary
    assert s["rankings"]["alpha"]["order"] == s["rankings"]["deepest"]["order"] == ["l3", "l2", "l1"]
    lead = s["verdict"][0]
    assert lead.startswith(s["alpha_vs"]["random"]["verdict"])
    assert f"; {DEEPEST}, keeps the same layer sets at each k tried: the α ranking amounts to it here (" in lead
    from laya_inspect.report.reading import strongest_without_alpha

    assert strongest_without_alpha(s) == "deepest"  # lolo keeps α's sets too: the one needing least is named
    report = CliRunner().invoke(app, ["report", str(tmp_path / "out")], env={"COLUMNS": "400"})
    assert report.exit_code == 0 and "the α ranking amounts to it here" in report.output, report.output
    from laya_inspect.report.reading import prune_reading

    # the page's reading names it too: its first verdict line is dropped there as already said
    said = " ".join(prune_reading(s).lead)
    assert "The strongest ranking that needs no α is keeping the deepest layers" in said, said

    # the audit's numbers, on this summary: α beats random, and is not shown to beat keeping the deepest layers
    def diff(mean: float, low: float, high: float) -> dict:
        return {"mean": mean, "ci_low": low, "ci_high": high, "confidence": 0.99, "n": 3}

    ks = s["ks"]
    for name, d in (("random", diff(0.0426, 0.0072, 0.0781)), ("deepest", diff(-0.0063, -0.0536, 0.0411))):
        said = versus_verdict(name, d, same_sets=False, ks=ks, n_seeds=3, n_layers=3)
        s["alpha_vs"][name] = {**s["alpha_vs"][name], "mean_test_acc_over_k_diff": d, "same_layer_sets": False}
        s["alpha_vs"][name]["verdict"] = said
    s["alpha_vs"]["lolo"]["mean_test_acc_over_k_diff"] = diff(0.01, -0.02, 0.04)
    s["alpha_vs"]["lolo"]["same_layer_sets"] = False
    lead = verdict_lines(s)[0]
    assert lead.startswith("the α ranking beats a random ranking (mean over random layer sets of each size k): +0.0426")
    assert (
        f"; but no detectable difference between the α ranking and {DEEPEST}: -0.0063, 99% CI [-0.0536, +0.0411]"
    ) in lead
