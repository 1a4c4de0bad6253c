"""What explain showed a user wrongly.

It starred one top LOLO layer where the draws could not tell it from others.

Null audit (all-MiniLM-L6-v2 on docstrings, row 5): `hidden_states.4 +0.647* [+0.486, +0.808]` with
hidden_states.0, .1 and .5's intervals overlapping it, and α starring hidden_states.4 too: a reader saw
"α matches LOLO on this row". Each draw removes every layer with the same donor, so the top is now read
on the paired difference over the draws, and every layer it does not tell apart is starred and named.
"""

from __future__ import annotations

import json

import numpy as np
from test_explain import digits  # noqa: F401  (a fixture)
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.explain import tied_with_top
from laya_inspect.training.stats import t_interval

runner = CliRunner()


def test_a_layer_is_tied_with_the_top_only_where_the_paired_difference_holds_0() -> None:
    rng = np.random.default_rng(0)
    donor = rng.normal(0, 1.0, size=32)  # what one draw's donor does to every layer alike
    own = rng.normal(0, 0.05, size=(32, 3))
    effects = donor[:, None] + own + np.array([1.0, 0.9, 1.0 + 1e-3])
    tied = tied_with_top(effects)
    # layer 0 and 2 differ by 0.001 against a noise of 0.05: a tie; layer 1 sits 0.1 below the top on every
    # draw: apart, although its own interval over the draws (±0.36) overlaps the top's
    assert tied.tolist() == [True, False, True]
    (_, high_1), (low_2, _) = t_interval(effects[:, 1]), t_interval(effects[:, 2])
    assert high_1 > low_2  # the overlap an unpaired reading would have called a tie
    assert tied_with_top(np.array([[1.0, 0.0], [1.1, 0.1], [0.9, -0.1]])).tolist() == [True, False]


def test_the_starred_lolo_layers_are_those_json_names_and_a_tie_is_said(digits: dict) -> None:  # noqa: F811
    shown = []
    for row in range(6):
        args = ["explain", str(digits["laya"]), "--cache", str(digits["cache"]), "--row", str(row), "--device", "cpu"]
        said = runner.invoke(app, [*args, "--json"], env={"COLUMNS": "200"})
        assert said.exit_code == 0, said.output
        e = json.loads(said.output)
        effects = {k: v["lolo_effect"] for k, v in e["layers"].items()}
        assert max(effects, key=effects.get) in e["lolo_top"]
        table = runner.invoke(app, args, env={"COLUMNS": "200", "NO_COLOR": "1"})
        assert table.exit_code == 0, table.output
        lines = table.output.splitlines()
        header = next(line.split() for line in lines if line.split()[:1] == ["layer"])
        lolo = header.index("LOLO") - 1  # the cells after the layer's name
        starred = [
            line.split()[0] for line in lines if line.strip()[:7] == "blocks." and line.split()[lolo + 1].endswith("*")
        ]
        assert sorted(starred) == sorted(e["lolo_top"]), table.output
        assert ("is not told apart from" in table.output) == (len(e["lolo_top"]) > 1), table.output
        shown.append(len(e["lolo_top"]))
    assert max(shown) > 1 and min(shown) == 1, shown  # rows with a tie and without: both are read


def test_an_image_input_is_framed_so_a_white_image_shows_as_a_panel(digits: dict) -> None:  # noqa: F811
    """QA: a fully transparent PNG composited on white was drawn white on the white page, no frame: the
    input panel looked missing."""
    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.explain import explain_figure, explain_row

    with FeatureStore(digits["cache"]) as store:
        e = explain_row(digits["laya"], store, row=0, n_steps=4, device="cpu", ablation="mean")
    assert e.input.kind == "image"
    e.input.image = np.ones_like(e.input.image)  # a white input
    panel = explain_figure(e).axes[0]
    assert panel.axison and len(panel.get_xticks()) == 0 and len(panel.get_yticks()) == 0
    assert all(spine.get_visible() for spine in panel.spines.values())
