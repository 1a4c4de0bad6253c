"""The settings line of prune, early-exit and diagnose (report/settings.py) from a summary's own
fields: a setting the user gave is named even where it decides nothing in that run."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from laya_inspect.beyond.common import seeds_how
from laya_inspect.beyond.config import DiagnoseConfig, ExitConfig, PruneConfig
from laya_inspect.options import defaulted
from laya_inspect.report.settings import ONE_LINE, beyond_settings_line, seeds_text


def _summary(command: str, config: Any, **fields: Any) -> dict[str, Any]:
    """The fields of a summary.json the line is read from, for ``config`` as the command records it."""
    return {"command": command, "config": asdict(config), "config_defaults": defaulted(config), **fields}


def test_early_exit_with_only_a_seed_given_does_not_read_all_left_at_their_defaults() -> None:
    """`early-exit HEAD --cache C --seed 5` printed "settings, all left at their defaults": its --seed
    draws --train-limit's rows only, but the user gave it, so it is named and marked."""
    line = str(beyond_settings_line(_summary("early-exit", ExitConfig(seed=5)), ONE_LINE))
    assert line.startswith("settings given: --seed 5 (decides nothing here: no --train-limit); left at"), line


def test_several_heads_name_a_given_seeds_as_their_own() -> None:
    """Over several LAYA heads the refit seeds are the heads' own; a --seeds given (it must match their
    number) is named rather than dropped, and one left out stays unsaid."""
    heads = {"alpha_heads": [{"seed": 0}, {"seed": 1}]}
    given = str(beyond_settings_line(_summary("early-exit", ExitConfig(seeds=2), **heads), ONE_LINE))
    assert given.startswith("settings given: seeds 2 (one per fitted LAYA head); left at"), given
    left = str(beyond_settings_line(_summary("early-exit", ExitConfig(), **heads), ONE_LINE))
    assert left.startswith("settings, all left at their defaults:") and "seeds" not in left, left


def test_diagnose_names_a_given_seed_that_draws_nothing() -> None:
    """With --bootstrap 0 and no --against diagnose draws nothing at random: a --seed given is named and
    marked; left at its default it is not stated at all."""
    heads = {"heads": [{}, {}]}
    line = str(beyond_settings_line(_summary("diagnose", DiagnoseConfig(seed=3, n_boot=0), **heads), ONE_LINE))
    given = line.removeprefix("settings given: ").split("; left at their defaults: ")[0].split(" · ")
    assert given == [
        "bootstrap 0 (no head's own intervals: errors.csv holds points only; the intervals shown are t over heads)",
        "--seed 3 (decides nothing here: --bootstrap 0 and no --against)",
    ], line
    quiet = str(beyond_settings_line(_summary("diagnose", DiagnoseConfig(n_boot=0), **heads), ONE_LINE))
    assert "seed" not in quiet, quiet
    one = str(beyond_settings_line(_summary("diagnose", DiagnoseConfig(n_boot=0), heads=[{}]), ONE_LINE))
    assert "bootstrap 0 (no intervals drawn: AUROCs as points only)" in one, one


def test_the_settings_line_and_header_list_seeds_with_commas() -> None:
    """Seeds are listed with commas, as the rest of the tool lists them: the header of several LAYA heads
    read "(seeds 0 1)"."""
    assert seeds_how([0, 1], 2) == "over 2 fitted LAYA heads (seeds 0, 1), each α with its seed's refits"
    assert seeds_text([0, 3, 7]) == "seeds 0, 3, 7" and seeds_text([3]) == "seed 3"


def test_settings_that_decide_the_numbers_read_in_words_as_fit_heads_do() -> None:
    """prune's, early-exit's and diagnose's lines wrote "--device cpu", "--max-drop 0.005" where extract,
    fit-head and compare write "device cpu": a setting that decides the numbers reads in words on every
    line; only a setting that decides nothing keeps its flag, quoted as the user typed it."""
    prune = PruneConfig(refit=False, ks=[1, 2], max_drop=0.02, costs="shapes", device="cpu")
    line = str(beyond_settings_line(_summary("prune", prune, scalarmix_dir="smix"), ONE_LINE))
    given = line.removeprefix("settings given: ").split("; left at their defaults: ")[0].split(" · ")
    for said in ("max drop 0.02", "layer counts 1,2", "ScalarMix head smix", "costs shapes", "device cpu"):
        assert said in given, line
    diagnose = str(beyond_settings_line(_summary("diagnose", DiagnoseConfig(n_boot=50), heads=[{}]), ONE_LINE))
    assert "bootstrap 50" in diagnose and "train split train" in diagnose and "--" not in diagnose, diagnose
    early = str(beyond_settings_line(_summary("early-exit", ExitConfig(seeds=2, device="cpu")), ONE_LINE))
    assert "device cpu" in early and "--" not in early, early


def test_prune_and_early_exit_name_their_splits_costs_and_device_left_at_their_defaults() -> None:
    """The rows prune and early-exit fit and measure on, their compute model and the device decide their
    numbers: they are named when left at their defaults too, as diagnose names its splits."""
    for command, config in (("prune", PruneConfig()), ("early-exit", ExitConfig())):
        line = str(beyond_settings_line(_summary(command, config), ONE_LINE))
        assert line.startswith("settings, all left at their defaults:"), line
        for item in ("train split train", "test split test", "costs auto", "device auto"):
            assert item in line.split(" · ") or f" {item}" in line, (item, line)
    ran = str(beyond_settings_line(_summary("early-exit", ExitConfig(), device="cpu"), ONE_LINE))
    assert "device cpu (auto)" in ran.split(" · "), ran  # the device auto chose, where the summary records it
    given = str(beyond_settings_line(_summary("prune", PruneConfig(costs="shapes")), ONE_LINE))
    assert given.startswith("settings given: costs shapes; left at"), given


def test_prune_and_early_exit_say_what_costs_auto_chose() -> None:
    """`--costs auto` read "costs auto" and never which count it used: the line says "costs model (auto)"
    (or "costs shapes (auto)") as "device cpu (auto)" says the device, from the summary's `costs.source`."""
    for command, config in (("prune", PruneConfig()), ("early-exit", ExitConfig())):
        for source in ("model", "shapes"):
            s = _summary(command, config, costs={"source": source, "asked": "auto"})
            items = str(beyond_settings_line(s, ONE_LINE)).split(" · ")
            assert f"costs {source} (auto)" in items and "costs auto" not in items, items
    given = _summary("prune", PruneConfig(costs="model"), costs={"source": "model", "asked": "model"})
    assert "costs model" in str(beyond_settings_line(given, ONE_LINE)).removeprefix("settings given: ").split(";")[0]
