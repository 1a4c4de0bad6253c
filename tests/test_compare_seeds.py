"""`compare` over every seed: a fit-head folder expands to its head directories, the across-seed mean
and t-interval of the headline scores (checked by hand), and seeds that disagree as a caveat in
summary.json, the terminal and report.html (docs/METHOD.md, "Across seeds")."""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
from pathlib import Path

import pytest
import torch
from rich.console import Console
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.compare.seeds import across_seeds, csv_rows, expand_head_dirs, t_estimate
from laya_inspect.errors import InputError
from laya_inspect.files import write_csv
from laya_inspect.report.across import seed_sections, seed_tables, verdict_line

runner = CliRunner()
ENV = {"COLUMNS": "80"}
T_975_2 = 4.302652729911275  # t(0.975, 2), from a table: the 95% two-sided quantile with 2 degrees of freedom


def test_t_interval_by_hand() -> None:
    est = t_estimate([0.9, 0.8, 0.95])
    # mean 2.65/3; deviations +1/60, −5/60, +4/60 → std² = (1 + 25 + 16)/3600/2 = 42/7200
    mean, std = 2.65 / 3, math.sqrt(42 / 7200)
    assert est["mean"] == pytest.approx(mean) and est["std"] == pytest.approx(std)
    half = T_975_2 * std / math.sqrt(3)
    assert (est["ci_low"], est["ci_high"]) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert est["n"] == 3 and est["values"] == [0.9, 0.8, 0.95]
    one = t_estimate([0.5, None])  # a seed without the score: kept as None, left out of the mean
    assert (one["mean"], one["std"], one["ci_low"], one["n"], one["values"]) == (0.5, None, None, 1, [0.5, None])


def _head_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


def test_fit_head_folder_expands_to_every_head_directory(tmp_path: Path) -> None:
    fit = tmp_path / "heads"
    dirs = {s: _head_dir(fit / h / f"seed_{s}") for h, s in (("last", 10), ("last", 2), ("laya", 0), ("concat", 1))}
    (fit / "profiles").mkdir()
    (fit / "summary.json").write_text(json.dumps({"heads": [{"head": "laya"}, {"head": "last"}]}))
    # the heads in summary.json's order, then the others by name; seeds by number, not by text
    assert expand_head_dirs([fit]) == [dirs[0], dirs[2], dirs[10], dirs[1]]
    assert expand_head_dirs([fit / "last"]) == [dirs[2], dirs[10]]  # one head's seeds
    assert expand_head_dirs([dirs[0], fit / "missing"]) == [dirs[0], fit / "missing"]  # left to read_head_config


def test_a_folder_that_is_neither_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain" / "sub").mkdir(parents=True)
    with pytest.raises(InputError, match="neither a head directory"):
        expand_head_dirs([tmp_path / "plain"])


def test_cli_refuses_a_folder_that_is_neither_in_one_line(digits_cache: Path, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a head")
    args = ["compare", str(tmp_path / "notes"), "--cache", str(digits_cache), "--out", str(tmp_path / "out")]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 1, result.output
    assert "is neither a head directory" in result.stderr and "fit-head output" in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


# -- constructed summaries: seeds that disagree ---------------------------------------------------


def _scores(agree: float, rho: float, verdict: str | None) -> dict:
    entry: dict = {"top_layer_agreement": agree, "deletion_at_1_over_oracle": 0.9, "faithfulness": {"mean": rho}}
    if verdict is not None:
        diff = {"mean": rho - 0.5, "ci_low": rho - 0.6, "ci_high": rho - 0.4}
        entry["vs_constant"] = {"verdict": verdict, "faithfulness": diff}
        entry["circular"] = None
    return entry


def _head(seed: int, verdict: str, best: list[str], run: str = "heads") -> dict:
    ablation = {
        "methods": {"alpha": _scores(0.9 + seed / 100, 0.7 + seed / 10, verdict)},
        "references": {"constant": _scores(0.8, 0.5, None)},
        "best": {"faithfulness": best} if best else {},
        "best_tests": {"faithfulness": {"leader": "alpha", "runner_up": "ig", "marked": bool(best)}},
        "caveats": [],
    }
    return {
        "name": f"laya-seed_{seed}",
        "dir": f"/x/{run}/laya/seed_{seed}",
        "kind": "laya",
        "ablations": {"mean": ablation},
    }


def test_seeds_of_one_head_are_the_seed_folders_of_one_fit_head_run() -> None:
    runs = [_head(s, "beats", [], run) for run in ("runA", "runB") for s in (0, 1)]
    again = {**runs[0], "name": "laya-seed_0-2"}  # seed_0 of runA given a second time: counted once
    across = across_seeds([*runs, again], [0, 1, 0, 1, 0])
    assert [(g["head"], g["seeds"]) for g in across["groups"]] == [("laya", [0, 1]), ("laya-2", [0, 1])]
    assert across["groups"][0]["members"] == ["laya-seed_0", "laya-seed_1"]


def _render(renderables: list) -> str:
    console = Console(file=io.StringIO(), width=80, color_system=None)
    for r in renderables:
        console.print(r)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_seeds_that_disagree_are_a_caveat_everywhere() -> None:
    heads = [_head(0, "beats", ["alpha"]), _head(1, "not shown", [])]
    across = across_seeds(heads, [0, 1])
    (group,) = across["groups"]
    assert (group["head"], group["seeds"], group["members"]) == ("laya", [0, 1], ["laya-seed_0", "laya-seed_1"])
    alpha = group["ablations"]["mean"]["methods"]["alpha"]
    assert alpha["faithfulness"]["values"] == pytest.approx([0.7, 0.8])
    assert alpha["faithfulness"]["mean"] == pytest.approx(0.75)
    assert alpha["faithfulness_minus_constant"]["values"] == [pytest.approx(0.2), pytest.approx(0.3)]
    assert alpha["verdicts"] == ["beats", "not shown"]
    verdict, best = across["caveats"]
    # the fixture's seed 0 beats the rule on ρ alone (it holds no other interval): the caveat says so
    beats = (
        "alpha beats the constant rule (on faithfulness ρ; not on top-layer agreement, Deletion@1 ÷ oracle) on seed 0"
    )
    assert beats in verdict and "alpha does not beat" in verdict
    assert "best method for faithfulness ρ differs" in best and "alpha on seed 0; none on seed 1" in best

    summary = {"across_seeds": across}
    text = _render(seed_tables(summary))
    assert "across seeds: laya (laya), seeds 0, 1" in text and "beats / does not" in text
    assert "caveat (seeds): laya (mean): the seeds disagree" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80, text
    (section,) = seed_sections(summary)
    page = section.html()
    assert section.notes == across["caveats"] and "the seeds disagree" in page
    assert "0.75 [" in page and "0.70 / 0.80" in page  # the mean, its interval, then each seed's value
    # one method read against the rule: its own 95% is the table's, no rate over the methods to say
    assert "verdict is tested on its own (95% for its three scores together)" in page
    assert "not over the methods" not in page

    agreeing = across_seeds([_head(0, "beats", ["alpha"]), _head(1, "beats", ["alpha"])], [0, 1])
    assert agreeing["caveats"] == [] and len(agreeing["groups"]) == 1
    (section,) = seed_sections({"across_seeds": agreeing})
    assert section.notes == [] and "beats the constant rule (every seed)" in section.html()
    assert across_seeds([_head(0, "beats", [])], [0])["groups"] == []  # one seed: nothing across seeds


def test_a_rho_interval_over_seeds_is_kept_inside_minus_one_to_one_and_said_so() -> None:
    """ρ 0.7, 0.8, 0.9 over 3 seeds has the t-interval [0.552, 1.048], past what a Spearman ρ can be; it
    was written so to summary.json and report.html, and the terminal showed ".80±.25". Now it is cut to
    [−1, 1] (``clipped``, the t bounds kept), the terminal shows the cut interval, and both say so once."""
    across = across_seeds([_head(s, "beats", ["alpha"]) for s in (0, 1, 2)], [0, 1, 2])
    (group,) = across["groups"]
    entry = group["ablations"]["mean"]
    rho = entry["methods"]["alpha"]["faithfulness"]
    assert (rho["ci_low"], rho["ci_high"]) == (pytest.approx(0.5516, abs=1e-4), 1.0) and rho["clipped"]
    assert rho["t_high"] == pytest.approx(1.0484, abs=1e-4)
    assert "clipped" not in entry["methods"]["alpha"]["top_layer_agreement"]  # [0.875, 0.945]: inside
    assert "clipped" not in entry["methods"]["alpha"]["faithfulness_minus_constant"]
    summary = {"across_seeds": across}
    text = " ".join(_render(seed_tables(summary)).split())
    assert ".80 [.55,1.00]" in text and ".80±.25" not in text, text
    note = "alpha faithfulness ρ [+0.55, +1.05]"
    assert text.count("cut to its score's range") == 1 and note in text and "over 3 seeds" in text
    (section,) = seed_sections(summary)
    (table,) = section.tables
    assert "cut to its score's range" in table.caption and note in table.caption
    assert "1.05" not in str(table.rows)


def test_a_most_relied_on_layer_that_differs_between_seeds_is_a_caveat() -> None:
    """The digits demo's LAYA heads: removing blocks.2 changed seed 0's predictions most, blocks.0 seeds 1
    and 2's; each seed's reading said "removing X changes the prediction most" and no caveat said the
    seeds disagree on it, as they do for a verdict or a best mark. The caveat names each seed's layer of
    the largest mean effect, not "the layer whose removal changes the prediction most": the reading says
    that only of a layer whose lead over the runner-up has an interval above 0 (docs/METHOD.md)."""

    def relied(head: dict, *layers: str) -> dict:
        effects = [{"layer": name, "mean_effect": 3.0 - i} for i, name in enumerate(layers)]
        head["ablations"]["mean"]["lolo"] = {"most_relied_on": effects}
        return head

    orders = [("b2", "b0"), ("b0", "b2"), ("b0", "b2")]
    heads = [relied(_head(s, "beats", []), *order) for s, order in enumerate(orders)]
    across = across_seeds(heads, [0, 1, 2])
    (caveat,) = across["caveats"]
    assert caveat == (
        "laya (mean): the layer of the largest mean LOLO effect differs between seeds: b2 on seed 0; b0 on seeds 1, 2"
    )
    same = [relied(_head(s, "beats", []), "b2", "b0") for s in (0, 1)]
    assert across_seeds(same, [0, 1])["caveats"] == []
    assert across_seeds([_head(0, "beats", []), _head(1, "beats", [])], [0, 1])["caveats"] == []  # no lolo: none


# -- end to end: two LAYA seeds of the digits cache -----------------------------------------------


@pytest.fixture(scope="module")
def two_seeds(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("seeds") / "heads"
    fast = ["--epochs", "3", "--lr", "1e-2", "--batch-size", "32", "--no-probe"]
    args = ["fit-head", str(digits_cache), "--head", "laya", "--seeds", "2", *fast, "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_compare_of_a_fit_head_folder_scores_every_seed(two_seeds: Path, digits_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = ["compare", str(two_seeds), "--cache", str(digits_cache), "--limit", "80", "--n-steps", "8"]
    result = runner.invoke(
        app, [*args, "--bootstrap", "100", "--no-plots", "--device", "cpu", "--out", str(out)], env=ENV
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["head_dirs"] == [str((two_seeds / "laya" / f"seed_{s}").resolve()) for s in (0, 1)]
    heads = {h["name"]: h for h in summary["heads"]}
    assert list(heads) == ["laya-seed_0", "laya-seed_1"]
    (group,) = summary["across_seeds"]["groups"]
    assert (group["head"], group["kind"], group["seeds"]) == ("laya", "laya", [0, 1])
    rows, refs = (group["ablations"][summary["ablation"]][k] for k in ("methods", "references"))
    assert {"alpha", "alpha-contrib", "ig", "gradcam"} <= set(rows) and "constant" in refs
    for m in ("alpha", "ig", "constant"):
        for key in ("top_layer_agreement", "deletion_at_1_over_oracle", "faithfulness"):
            side = "methods" if m != "constant" else "references"
            est = (rows if side == "methods" else refs)[m][key]
            per_seed = [heads[n][side][m][key] for n in group["members"]]
            per_seed = [v["mean"] if isinstance(v, dict) else v for v in per_seed]
            assert est["values"] == pytest.approx(per_seed) and est["mean"] == pytest.approx(sum(per_seed) / 2)
            if est["std"]:  # two seeds: t(0.975, 1) = 12.706
                half = 12.7062047361747 * est["std"] / math.sqrt(2)
                assert est.get("t_high", est["ci_high"]) - est["mean"] == pytest.approx(half)
                high = {"top_layer_agreement": 1.0, "faithfulness": 1.0}.get(key, math.inf)
                assert est["ci_high"] == pytest.approx(min(high, est["mean"] + half))  # cut to ρ's range
    diff = rows["alpha"]["faithfulness_minus_constant"]["values"]
    assert diff == pytest.approx(
        [heads[n]["methods"]["alpha"]["vs_constant"]["faithfulness"]["mean"] for n in group["members"]]
    )
    assert rows["alpha"]["verdicts"] == [
        heads[n]["methods"]["alpha"]["vs_constant"]["verdict"] for n in group["members"]
    ]
    assert summary["across_seeds"]["caveats"] == [c for c in summary.get("caveats", []) if c.startswith("laya (")]

    text = result.stdout
    assert "across seeds: laya (laya), seeds 0, 1" in text
    start = text.index("across seeds: laya")
    table = text[start:]
    agree = rows["alpha"]["top_layer_agreement"]["values"]
    alpha_line = next(i for i, line in enumerate(table.splitlines()) if line.split()[:1] == ["alpha"])
    seeds_line = table.splitlines()[alpha_line + 1].split()
    assert [float(v) for v in seeds_line[:2]] == pytest.approx(agree, abs=0.006)  # each seed's value, below the mean
    for c in summary["across_seeds"]["caveats"]:
        assert c[:40] in " ".join(text.split())
    block = table[: table.index("* best of")].splitlines()  # the table and its caveats, at 80 columns
    assert max(len(line) for line in block) <= 80 and "…" not in "\n".join(block), table

    with (out / "summary.csv").open() as f:
        csv_rows = [r for r in csv.DictReader(f) if r["scope"] in ("seeds", "seed:0", "seed:1")]
    means = {r["method"]: float(r["value"]) for r in csv_rows if r["metric"] == "faithfulness_mean"}
    assert means["alpha"] == pytest.approx(rows["alpha"]["faithfulness"]["mean"])
    assert {r["scope"] for r in csv_rows if r["metric"] == "faithfulness"} == {"seed:0", "seed:1"}
    assert "Across seeds: laya (laya), seeds 0, 1" in (out / "report.html").read_text()
    # the headline over both seeds leads the terminal and report.html alike, seed 0's sentence after it
    from laya_inspect.report.reading import compare_headline

    over, seed_0, *_ = (" ".join(line.split()) for line in compare_headline(summary))
    assert over.startswith("Over laya's 2 seeds") and seed_0.startswith("On seed 0 of 2 (the tables below)")
    said = " ".join(text.split())
    assert said.index(over) < said.index(seed_0) < said.index("compare: 80 test rows"), said[:2000]
    page = " ".join(html.unescape(re.sub("<[^>]+>", " ", (out / "report.html").read_text())).split())
    assert over in page and seed_0 in page

    again = runner.invoke(app, ["report", str(out)], env=ENV)  # report reprints the table from summary.json
    assert again.exit_code == 0 and "across seeds: laya (laya), seeds 0, 1" in again.stdout
    summary["across_seeds"]["groups"][0]["ablations"][summary["ablation"]]["methods"]["alpha"]["faithfulness"][
        "mean"
    ] = "x"
    (out / "summary.json").write_text(json.dumps(summary))
    damaged = runner.invoke(app, ["report", str(out)], env=ENV)
    assert damaged.exit_code == 1 and "across_seeds.groups[0]" in damaged.stderr, damaged.output
    assert damaged.stderr.strip().count("\n") == 0 and "Traceback" not in damaged.output


def test_summary_csv_reads_as_one_numeric_value_column_with_one_row_per_key(tmp_path: Path) -> None:
    """QA: each seed's verdict and each caveat stood in `value` among the numbers, so a reader
    (pandas) took the whole column for text, and the caveats of one head shared one key."""
    across = across_seeds([_head(0, "beats", ["alpha"]), _head(1, "not shown", [])], [0, 1])
    assert len(across["caveats"]) == 2
    path = write_csv(tmp_path / "summary.csv", csv_rows({"across_seeds": across, "directions": {}}))
    rows = list(csv.DictReader(path.open()))
    assert [r["value"] for r in rows if r["value"] and not _is_number(r["value"])] == []
    keys = [(r["head"], r["ablation"], r["method"], r["scope"], r["metric"]) for r in rows]
    assert len(keys) == len(set(keys))
    assert [r["text"] for r in rows if r["metric"].startswith("caveat_")] == across["caveats"]
    verdicts = [r["text"] for r in rows if r["metric"] == "verdict_vs_constant"]
    assert verdicts == ["beats", "not shown"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _compared(heads: list[dict], seeds: list[int]) -> dict:
    """A compare summary of ``heads`` (built by :func:`_head`) as compare_reading reads it."""
    for h in heads:
        (entry,) = h["ablations"].values()
        h.update(methods=entry["methods"], references=entry["references"], caveats=[], ablations_run=["mean"], n=100)
        h["references"]["constant"]["profile"] = {"what": "the mean of α"}
    return {"heads": heads, "split": "test", "across_seeds": across_seeds(heads, seeds)}


def test_the_reading_says_when_the_seeds_disagree_with_the_verdict_it_leads_with() -> None:
    from laya_inspect.report.reading import compare_reading

    summary = _compared([_head(0, "beats", ["alpha"]), _head(1, "not shown", [])], [0, 1])
    lead = " ".join(compare_reading(summary).lead)
    # the lead reads seed 0 alone ("α ... beats it"); seed 1 does not beat the rule, and the lead says so
    assert "laya-seed_0" in lead and "α beats it" in lead
    beats = (
        "alpha beats the constant rule (on faithfulness ρ; not on top-layer agreement, Deletion@1 ÷ oracle) on seed 0"
    )
    assert beats in lead and "alpha does not beat" in lead
    assert "seed 0 of 2" in lead

    agreeing = _compared([_head(0, "beats", ["alpha"]), _head(1, "beats", ["alpha"])], [0, 1])
    lead = " ".join(compare_reading(agreeing).lead)
    assert "the seeds disagree" not in lead and "each of the 2 seeds gives the same verdicts" in lead


def test_the_reading_of_one_seed_says_it_is_one() -> None:
    """A verdict that changes with the seed a head was fitted with is not a verdict: where compare was
    given one seed of a head, the reading says so beside it, and how to read every seed."""
    from laya_inspect.report.reading import compare_reading

    reading = compare_reading(_compared([_head(0, "beats", ["alpha"])], [0]))
    assert "α beats it" in " ".join(reading.lead)
    said = reading.lead[-1]  # right after the verdicts, not in the list under them
    assert "one fitted seed of laya-seed_0" in said and "the fit-head folder" in said
    # a fit-head folder of one seed (fit-head --seeds 1, check planted's heads/) is what compare was given:
    # the reading says how to get more seeds, not only to give it the folder it already read
    assert "fit-head --seeds 3 or more" in said


def test_the_demo_reading_box_holds_compares_verdicts_and_names_what_its_caveat_covers() -> None:
    """QA: the demo's reading box showed compare's first sentence only: "Against the constant rule …, α
    beats it" sat in the list under the box, while the box's caveat on the seeds began "These sentences",
    above which stood fit-head's headline over every seed. The box now holds compare's verdict sentences,
    as compare's own page does, and its caveat names them."""
    from laya_inspect.report.reading import compare_reading, demo_reading

    fit = {"heads": [{"head": "laya", "n": 2, "test_acc": {"mean": 0.9, "ci_low": 0.85, "ci_high": 0.95}}]}
    # over several seeds the first sentence reads them all, and the caveat names seed 0's sentences after it
    seed_0 = "Seed 0's sentences read one of the 2 seeds of laya"
    for seeds, own_caveat, box_caveat in (
        ([0, 1], seed_0, seed_0),
        (
            [0],
            *(
                f"{w} read one fitted seed of laya-seed_0"
                for w in ("These sentences", "The compare step's sentences above")
            ),
        ),
    ):
        summary = _compared([_head(s, "beats", ["alpha"]) for s in seeds], seeds)
        own = compare_reading(summary).lead
        box = demo_reading(fit, summary).lead
        assert box[0].startswith("LAYA reaches a test accuracy of 0.900 over 2 seeds")
        (against,) = [line for line in own if line.startswith("Against the constant rule")]
        assert against in box and "α beats it" in against
        assert box[1:-1] == own[:-1]  # compare's sentences, in its order
        assert own[-1].startswith(own_caveat)
        assert box[-1].startswith(box_caveat)
        assert not any(line.startswith("These sentences") for line in demo_reading(fit, summary).details)


def test_a_caveat_of_every_seed_is_printed_once_naming_the_seeds(
    two_seeds: Path, digits_cache: Path, tmp_path: Path
) -> None:
    """On too few rows each seed's summary holds the same caveat; the terminal says it once, under the
    first seed, naming both, while summary.json keeps it for each head."""
    out, n = tmp_path / "few", 12
    args = ["compare", str(two_seeds), "--cache", str(digits_cache), "--limit", str(n), "--method", "alpha"]
    args += ["--bootstrap", "10", "--no-plots", "--no-sanity", "--device", "cpu", "--out", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    said = [c for h in summary["heads"] for c in h["caveats"]]
    assert len(said) == 2 and said[0] == said[1] and f"only {n} rows scored" in said[0]  # kept per head
    # the headline quotes it after its sentence, as report.html's reading does; the caveat lines say it once
    lines = [line for line in result.output.splitlines() if said[0] in line and "No method is ranked" not in line]
    assert len(lines) == 1, result.output
    assert lines[0].strip().startswith("caveat (laya-seed_0, seed_1):"), lines[0]
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [r["value"] for r in rows if r["value"] and not _is_number(r["value"])] == []
    assert [r["text"] for r in rows if r["metric"] == "caveat_1" and r["scope"] == "all"] == said


def test_the_terminal_says_when_verdicts_read_one_fitted_seed(
    two_seeds: Path, digits_cache: Path, tmp_path: Path
) -> None:
    """QA (MobileNetV2): compare given seed 0 alone printed "alpha beats" the constant rule with no word
    that it read one fitted seed (seeds 1 and 2: "worse", "does not"); report.html's reading said so."""
    common = ["--cache", str(digits_cache), "--limit", "40", "--method", "alpha", "--bootstrap", "10"]
    common += ["--no-plots", "--no-sanity", "--device", "cpu"]
    said = {}
    for name, heads in (("one", two_seeds / "laya" / "seed_0"), ("both", two_seeds)):
        result = runner.invoke(app, ["compare", str(heads), *common, "--out", str(tmp_path / name)], env=ENV)
        assert result.exit_code == 0, result.output
        said[name] = " ".join(result.output.split())
    assert "note: the verdicts above read one fitted seed of laya-seed_0:" in said["one"]
    assert "give compare the fit-head folder" in said["one"]
    assert "read one fitted seed" not in said["both"]  # every seed compared: the table across seeds reads them


@pytest.mark.slow
def test_the_random_method_and_the_random_reference_are_both_read_across_seeds(
    two_seeds: Path, digits_cache: Path, tmp_path: Path
) -> None:
    """The method "random" (seeded noise) and the reference "random" (a random ordering) share a name:
    across seeds each keeps its own per-seed values, in summary.json, summary.csv (the reference's rows
    named `random_ordering` there), the terminal and report.html."""
    out = tmp_path / "rnd"
    args = ["compare", str(two_seeds), "--cache", str(digits_cache), "--limit", "40", "--method", "alpha,random"]
    args += ["--bootstrap", "10", "--no-plots", "--no-sanity", "--device", "cpu", "--out", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    heads = {h["name"]: h for h in summary["heads"]}
    (group,) = summary["across_seeds"]["groups"]
    entry = group["ablations"][summary["ablation"]]
    for side in ("methods", "references"):
        per_seed = [heads[n][side]["random"]["faithfulness"]["mean"] for n in group["members"]]
        assert entry[side]["random"]["faithfulness"]["values"] == pytest.approx(per_seed), side
    assert set(entry["methods"]) == {"alpha", "random"}
    noise, ordering = (entry[side]["random"]["faithfulness"]["values"] for side in ("methods", "references"))
    assert noise != ordering

    with (out / "summary.csv").open() as f:
        across = [r for r in csv.DictReader(f) if r["head"] == group["head"] and not r["metric"].startswith("caveat")]
    keys = [(r["ablation"], r["method"], r["scope"], r["metric"]) for r in across]
    assert len(keys) == len(set(keys))  # QA: the random reference's rows were also method "random"
    means = {
        r["method"]: float(r["value"]) for r in across if r["scope"] == "seeds" and r["metric"] == "faithfulness_mean"
    }
    assert means["random"] == pytest.approx(entry["methods"]["random"]["faithfulness"]["mean"])
    assert means["random_ordering"] == pytest.approx(entry["references"]["random"]["faithfulness"]["mean"])

    table = result.stdout[result.stdout.index("across seeds: laya") :]
    rows = [line.split() for line in table.splitlines() if line.split()[:1] in (["random"], ["constant"])]
    assert [w[0] for w in rows if len(w) > 1 and w[1][:1] in ".-0123456789"] == [
        "random",
        "constant",
    ]
    html = (out / "report.html").read_text()
    start = html.index("Across seeds: laya")
    section = html[start : html.index("</table>", start)]
    assert "random reference" in section and '<td class="text">random</td>' in section

    # a summary written before the two were kept apart (references among methods) is still reported
    for abl in group["ablations"].values():
        abl["methods"].update({m: {**row, "reference": True} for m, row in abl.pop("references").items()})
    (out / "summary.json").write_text(json.dumps(summary))
    old = runner.invoke(app, ["report", str(out)], env={"COLUMNS": "120"})
    assert old.exit_code == 0, old.output
    assert "constant" in old.stdout[old.stdout.index("across seeds: laya") :]


def _carried_by(seed: int, above: tuple[str, ...]) -> dict:
    """A head of ``_head`` whose alpha beats the rule with these scores' intervals above 0, the others'
    including 0."""
    head = _head(seed, "beats", [])
    keys = ("top_layer_agreement", "deletion_at_1_over_oracle", "faithfulness")
    vs = {k: {"mean": 0.1, "ci_low": 0.05 if k in above else -0.05, "ci_high": 0.2} for k in keys}
    head["ablations"]["mean"]["methods"]["alpha"]["vs_constant"] = {"verdict": "beats", **vs}
    return head


def test_an_across_seed_verdict_names_the_scores_that_carry_it() -> None:
    """One interval above 0 is enough to beat the constant rule; the per-seed tables named the scores
    that carry a verdict, but the across-seed table said "beats (all)" / "beats the constant rule (every
    seed)", read as beating it on every score, and seeds that beat it on different scores read as agreeing."""
    agree_d1 = ("top_layer_agreement", "deletion_at_1_over_oracle")
    across = across_seeds([_carried_by(0, agree_d1), _carried_by(1, agree_d1)], [0, 1])
    alpha = across["groups"][0]["ablations"]["mean"]["methods"]["alpha"]
    which = "on top-layer agreement, Deletion@1 ÷ oracle; not on faithfulness ρ"
    assert alpha["carried"] == [which, which] and across["caveats"] == []
    text = " ".join(_render(seed_tables({"across_seeds": across})).split())
    assert f"alpha: beats (all): {which}" in text, text
    (section,) = seed_sections({"across_seeds": across})
    assert f"beats the constant rule (every seed): {which}" in section.html()
    rows = csv_rows({"directions": {}, "across_seeds": across})
    said = [(r["scope"], r["text"]) for r in rows if r["metric"] == "verdict_carried_by"]
    assert said == [("seed:0", which), ("seed:1", which)]
    # a seed whose verdict all three scores carry has no row saying so (docs/FORMATS.md: an empty one said nothing)
    every = ("top_layer_agreement", "deletion_at_1_over_oracle", "faithfulness")
    rows = csv_rows(
        {"directions": {}, "across_seeds": across_seeds([_carried_by(0, every), _carried_by(1, agree_d1)], [0, 1])}
    )
    said = [(r["scope"], r["text"]) for r in rows if r["metric"] == "verdict_carried_by"]
    assert said == [("seed:1", which)], said

    # the same word carried by other scores is another verdict: a caveat, and said seed by seed
    across = across_seeds([_carried_by(0, agree_d1), _carried_by(1, ("faithfulness",))], [0, 1])
    (caveat,) = across["caveats"]
    other = "on faithfulness ρ; not on top-layer agreement, Deletion@1 ÷ oracle"
    assert f"alpha beats the constant rule ({which}) on seed 0; alpha beats the constant rule ({other}) on seed 1" in (
        caveat
    )
    text = " ".join(_render(seed_tables({"across_seeds": across})).split())
    assert f"alpha: beats ({which}) on seed 0; beats ({other}) on seed 1" in text, text
    assert max(len(line) for line in _render(seed_tables({"across_seeds": across})).splitlines()) <= 80


def test_seeds_that_give_one_verdict_on_other_scores_are_not_said_to_disagree() -> None:
    """QA (all-MiniLM-L6-v2, 3 seeds): IG beat the constant rule on every seed, on other scores on one,
    and both the caveat and report.html's lead said "the seeds disagree" of it (the lead twice over,
    "the seeds disagree, so read …: the seeds disagree: ig beats … on seeds 0, 2; ig beats … on seed 1")."""
    from laya_inspect.report.reading import compare_reading

    agree_d1 = ("top_layer_agreement", "deletion_at_1_over_oracle")
    across = across_seeds([_carried_by(0, agree_d1), _carried_by(1, ("faithfulness",))], [0, 1])
    (caveat,) = across["caveats"]
    # the readings differ in the scores that carry the verdict: said so, not "one verdict" of two readings
    said = "the same verdict on every seed, carried by different scores: alpha beats"
    assert "disagree" not in caveat and said in caveat and "one verdict" not in caveat
    summary = _compared([_carried_by(0, agree_d1), _carried_by(1, ("faithfulness",))], [0, 1])
    lead = " ".join(compare_reading(summary).lead)
    assert "disagree" not in lead and "seed 0 of 2" in lead and said in lead
    # a verdict that differs between the seeds is still said to
    differing = across_seeds([_head(0, "beats", ["alpha"]), _head(1, "not shown", [])], [0, 1])
    assert any("the seeds disagree: alpha beats" in c for c in differing["caveats"])


def _with_top1_only(summary: dict, rho: float, every_row: bool) -> dict:
    """``summary`` (:func:`_compared`) with IG beside α and top-1 only among the references, as compare
    writes them on a head of 3 layers."""
    for h in summary["heads"]:
        h["n_layers"] = 3
        h["methods"]["ig"] = {"top_layer_agreement": 0.94, "faithfulness": {"mean": 0.78}}
        spread = 0.0 if every_row else 0.02
        top = {"mean": rho, "ci_low": rho - spread, "ci_high": rho + spread}
        h["references"]["top1_only"] = {"top_layer_agreement": 1.0, "faithfulness": top}
    return summary


def test_the_reading_says_what_a_rho_below_top1_only_means_and_why_top1_only_is_fixed() -> None:
    """The digits demo's reading gave "faithfulness ρ 0.62 vs 0.78; top-1 only 0.87, …" and left the
    reader to see that α orders the layers worse than naming the top one alone, and that at 3 layers
    top-1 only scores √3/2 on every row (docs/METHOD.md, "Scores")."""
    from laya_inspect.report.reading import compare_reading

    root3 = math.sqrt(3) / 2
    summary = _with_top1_only(_compared([_head(0, "beats", ["alpha"])], [0]), root3, True)
    summary["heads"][0]["methods"]["alpha"]["faithfulness"] |= {"ci_low": 0.66, "ci_high": 0.74}
    lead = " ".join(compare_reading(summary).lead)
    said = (
        "faithfulness ρ 0.70 vs 0.78; top-1 only 0.87 on every row (what a one-hot scores against 3 untied effects), "
        "above α's: naming the top layer alone orders the layers better; the constant rule 0.50"
    )
    assert said in lead, lead
    # α above top-1 only, whose ρ varies by row (tied effects): neither clause
    lead = " ".join(compare_reading(_with_top1_only(_compared([_head(0, "beats", ["alpha"])], [0]), 0.6, False)).lead)
    assert "top-1 only 0.60, the constant rule 0.50" in lead, lead
    # the same on every row but not by the layer count (the last-layer head: two effects tied at 0)
    summary = _with_top1_only(_compared([_head(0, "beats", ["alpha"])], [0]), 1.0, True)
    summary["heads"][0]["methods"]["alpha"]["faithfulness"] |= {"ci_low": 0.66, "ci_high": 0.74}
    lead = " ".join(compare_reading(summary).lead)
    assert "top-1 only 1.00 on every row, above α's: naming the top layer alone orders" in lead, lead
    # α's mean a hair below top-1 only's, its interval reaching past it: no "orders better" from the means
    summary = _with_top1_only(_compared([_head(0, "beats", ["alpha"])], [0]), 0.72, True)
    summary["heads"][0]["methods"]["alpha"]["faithfulness"] |= {"ci_low": 0.66, "ci_high": 0.74}
    lead = " ".join(compare_reading(summary).lead)
    assert "top-1 only 0.72 on every row, above α's mean but not its 95% interval: not shown to order" in lead, lead
    assert "orders the layers better" not in lead, lead
    # top-1 only's mean past α's interval, its own interval reaching into α's: it is above that interval
    summary = _with_top1_only(_compared([_head(0, "beats", ["alpha"])], [0]), 0.755, False)
    summary["heads"][0]["methods"]["alpha"]["faithfulness"] |= {"ci_low": 0.66, "ci_high": 0.74}
    lead = " ".join(compare_reading(summary).lead)
    assert "above α's 95% interval but its own reaching into it: not shown to order the layers better" in lead, lead
    assert "not its 95% interval" not in lead and "orders the layers better" not in lead, lead


def test_the_terminal_across_seed_table_reads_each_method_beside_top1_only() -> None:
    """The terminal's across-seed table left top-1 only out (report.html's holds it): α's ρ .69 over the
    digits demo's seeds stood beside the constant rule alone, not beside the .87 that naming the top
    layer alone earns. Random is scored as a method there, so its reference row stays out."""
    summary = _with_top1_only(_compared([_head(s, "beats", ["alpha"]) for s in (0, 1)], [0, 1]), 0.866, True)
    noise = {"top_layer_agreement": 0.3, "faithfulness": {"mean": 0.01}}
    for h in summary["heads"]:
        h["ablations"]["mean"]["references"]["random"] = noise
    summary["across_seeds"] = across_seeds(summary["heads"], [0, 1])
    lines = _render(seed_tables(summary)).splitlines()
    (top,) = [line.split() for line in lines if line.lstrip().startswith("top-1 only")]
    assert top[:3] == ["top-1", "only", "1.00±.00"] and top[-1] == ".87±.00", lines
    assert any(line.lstrip().startswith("random ref") for line in lines), lines  # the null of a run without random
    for h in summary["heads"]:
        h["methods"]["random"] = {**noise, "vs_constant": {"verdict": "worse"}}
    summary["across_seeds"] = across_seeds(summary["heads"], [0, 1])
    lines = _render(seed_tables(summary)).splitlines()
    assert not any("random ref" in line for line in lines) and any(line.startswith(" random ") for line in lines)


def test_the_across_seed_table_names_the_scores_as_docs_method_does() -> None:
    """The across-seed table and the scores that carry a verdict said "agree" and "D@1÷orc"; they now
    use docs/METHOD.md's names, as report.html does."""
    agree_d1 = ("top_layer_agreement", "deletion_at_1_over_oracle")
    across = across_seeds([_carried_by(0, agree_d1), _carried_by(1, ("faithfulness",))], [0, 1])
    text = _render(seed_tables({"across_seeds": across}))
    lines = text.splitlines()
    (top,) = [i for i, line in enumerate(lines) if line.split() == ["top-layer", "Deletion@1"]]
    assert lines[top + 1].split() == ["method", "agreement", "÷", "oracle", "ρ", "verdicts"], lines
    assert "agree " not in text and "D@1÷orc" not in text
    # the one line a head gets in the demo's brief view names the scores that carry its verdict
    (head,) = _compared([_carried_by(0, ("faithfulness",))], [0])["heads"]
    said = str(verdict_line(head))
    assert said == "laya-seed_0 − constant rule: alpha beats (on ρ; not on top-layer agreement, Deletion@1 ÷ oracle)"


def test_a_cut_reference_interval_is_named_by_its_label_not_its_key() -> None:
    """The notes under the across-seed tables named a cut interval of a reference by its summary key
    ("constant faithfulness ρ", "top1_only ρ"), not as every table labels it ("constant rule",
    "top-1 only"); and the random reference's estimates replaced the random method's of the same name."""
    from laya_inspect.compare.seeds import named_estimates, ranged_note
    from laya_inspect.report.across import cut_short

    heads = [_head(s, "beats", ["alpha"]) for s in (0, 1, 2)]
    for s, h in enumerate(heads):
        refs = h["ablations"]["mean"]["references"]
        refs["constant"]["faithfulness"] = {"mean": 0.7 + s / 10}  # 0.7, 0.8, 0.9: t-interval past 1
        refs["top1_only"] = {"top_layer_agreement": 1.0, "faithfulness": {"mean": 0.75 + s / 10}}
        refs["random"] = {"top_layer_agreement": 0.3, "faithfulness": {"mean": 0.0}}
        h["ablations"]["mean"]["methods"]["random"] = _scores(0.3, 0.01 * s, "worse")
    (group,) = across_seeds(heads, [0, 1, 2])["groups"]
    entry = group["ablations"]["mean"]
    assert entry["references"]["constant"]["faithfulness"]["clipped"]
    short = cut_short(entry) or ""
    assert "constant rule ρ" in short and "top-1 only ρ" in short, short
    assert "constant ρ" not in short and "top1_only" not in short, short
    note = ranged_note(entry) or ""
    assert "constant rule faithfulness ρ [" in note and "top-1 only faithfulness ρ [" in note, note
    named = named_estimates(entry)
    assert named["random faithfulness ρ"]["values"] == pytest.approx([0.0, 0.01, 0.02])  # the method's
    assert named["random reference faithfulness ρ"]["values"] == [0.0, 0.0, 0.0]


def test_a_seed_that_does_not_beat_the_rule_is_said_in_words_not_cut_short() -> None:
    """`report` on a compare folder read "alpha: mixed (…) on seed 0; worse (…) on seed 1; does not on
    seed 2": the table cell's short word ran into the sentence under it, cut short."""
    from laya_inspect.report.across import LINE_WORDS, verdict_text

    row = {"verdicts": ["beats", "not shown"], "carried": ["on ρ", ""]}
    said = verdict_text(row, [0, 1], LINE_WORDS, "all")
    assert "does not beat the rule on seed 1" in said and "does not on" not in said, said
    (head,) = _compared([_head(0, "not shown", ["alpha"])], [0])["heads"]
    assert "alpha does not beat the rule" in str(verdict_line(head)), verdict_line(head)


def _with_ig(head: dict, low: float, high: float) -> dict:
    """``head`` (:func:`_head`) with IG beside α and α − IG's paired faithfulness difference in [low, high]."""
    methods = head["ablations"]["mean"]["methods"]
    methods["ig"] = _scores(0.95, 0.9, "beats")
    methods["alpha"]["vs_methods"] = {"ig": {"mean": (low + high) / 2, "ci_low": low, "ci_high": high, "n": 100}}
    return head


def test_the_reading_reads_the_headlines_rival_on_every_seed() -> None:
    """The headline's "it orders the layers worse than IG (… paired difference …)" read seed 0's interval
    alone, and the seed sentence after it, "each of the 2 seeds gives the same verdicts and best marks",
    was said where seed 1 showed no difference from IG: each seed's paired difference is read now."""
    from laya_inspect.report.reading import compare_reading

    heads = [_with_ig(_head(0, "beats", []), -0.2, -0.1), _with_ig(_head(1, "beats", []), -0.1, 0.05)]
    lead = " ".join(compare_reading(_compared(heads, [0, 1])).lead)
    assert "it orders the layers worse than IG" in lead  # seed 0's own reading, as before
    assert "same verdicts" not in lead and "read no one seed's verdict alone" in lead, lead
    said = "α against IG differs between seeds: orders the layers worse on seed 0; is not shown to order the layers"
    assert said in lead, lead
    heads = [_with_ig(_head(0, "beats", []), -0.2, -0.1), _with_ig(_head(1, "beats", []), -0.3, -0.05)]
    lead = " ".join(compare_reading(_compared(heads, [0, 1])).lead)
    assert (
        "each of the 2 seeds gives the same verdicts and best marks, and α orders the layers worse than IG on" in lead
    )


def test_a_seed_with_a_caveat_reads_its_pairs_withheld_as_the_pairs_over_the_seeds() -> None:
    """A summary that keeps a per-seed α − IG pair of a seed whose head is near chance: the reading took its
    "worse" as a ranking ("α orders the layers worse than IG on each of the 2 seeds"), where the caveat
    withholds every ranking of that seed, as it does the pair over the seeds."""
    from laya_inspect.report.reading import compare_reading

    near = "head laya-seed_1 is near chance: its attributions explain a head that learnt nothing"
    heads = [_with_ig(_head(s, "beats", []), -0.3, -0.1) for s in (0, 1)]
    heads[1]["ablations"]["mean"]["caveats"] = [near]
    summary = _compared(heads, [0, 1])
    heads[1]["caveats"] = [near]
    lead = " ".join(compare_reading(summary).lead)
    assert "on each of the 2 seeds" not in lead, lead
    said = (
        "α against IG differs between seeds: orders the layers worse on seed 0; is not read (a caveat withholds "
        "every ranking) on seed 1"
    )
    assert said in lead, lead
    assert summary["across_seeds"]["groups"][0]["ablations"]["mean"]["vs_methods"]["alpha"]["ig"]["verdict"] == (
        "withheld"
    )


def test_seeds_that_all_find_no_difference_from_the_rule_are_not_said_to_disagree() -> None:
    """The demo's 'last' head: Grad-CAM identical to the constant rule on seed 0 and "does not beat" it on
    seeds 1 and 2 read "the seeds disagree", where no seed found a difference from the rule."""
    (caveat,) = across_seeds([_head(0, "identical", []), _head(1, "not shown", [])], [0, 1])["caveats"]
    assert "disagree" not in caveat and "no seed shows a difference from the constant rule: alpha identical" in caveat
    (caveat,) = across_seeds([_head(0, "beats", []), _head(1, "not shown", [])], [0, 1])["caveats"]
    assert "the seeds disagree: alpha beats" in caveat


def test_a_head_that_reads_one_layer_is_not_read_against_the_constant_rule(digits_cache: Path, tmp_path: Path) -> None:
    """A 'last' head reads one layer: Grad-CAM's and IG's attributions and the constant rule's profile are 0
    on every other layer, so each method is "identical to the rule" or within float noise of it by
    construction (the demo's "= rule / does not / does not"). Every verdict reads "not applicable (the head
    reads one layer)", as the sanity checks do, on every seed, in summary.json, the terminal and report.html,
    with or without --sanity; a LAYA head beside it is read as before."""
    from helpers import fit_quickly

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.compare.run import CompareConfig, compare_heads
    from laya_inspect.head_dir import cache_identity, save_head

    with FeatureStore(digits_cache) as store:
        meta = cache_identity(store) | {"trained_by": "test"}
        dirs = [
            save_head(tmp_path / k / f"seed_{s}", fit_quickly(k, store, 40, seed=s), meta=meta | {"seed": s})
            for k in ("last", "laya")
            for s in (0, 1)
        ]
        config = CompareConfig(
            limit=80, n_boot=50, device="cpu", plots=False, sanity=False, methods=("gradcam", "ig"), workers=1
        )
        summary = compare_heads(dirs, store, config, out_dir=tmp_path / "out").summary
    said = "not applicable (the head reads one layer)"
    heads = {h["name"]: h for h in summary["heads"]}
    for name, h in heads.items():
        verdicts = {m: s["vs_constant"]["verdict"] for m, s in h["methods"].items()}
        if name.startswith("last"):
            assert set(verdicts.values()) == {"not applicable"} and h.get("layers_read") == [2], verdicts
            assert all("the one layer the head reads" in s["vs_constant"]["note"] for s in h["methods"].values())
        else:
            assert h.get("layers_read") == [0, 1, 2] and "not applicable" not in verdicts.values(), verdicts
    groups = {g["head"]: g for g in summary["across_seeds"]["groups"]}
    rows = groups["last"]["ablations"][summary["ablation"]]["methods"]
    assert all(r["verdicts"] == ["not applicable"] * 2 for r in rows.values()), rows
    assert not any(c.startswith("last (") for c in summary["across_seeds"]["caveats"])

    last_only = {"across_seeds": {"groups": [groups["last"]], "caveats": []}}
    text = " ".join(_render(seed_tables(last_only)).split())
    assert said in text and "= rule" not in text and "does not" not in text, text
    line = " ".join(_render([verdict_line(heads["last-seed_0"])]).split())
    assert said in line and "identical" not in line and "does not beat" not in line, line
    from laya_inspect.report.reading import head_sentences
    from laya_inspect.report.terminal import versus_table

    table = " ".join(_render([versus_table(heads["last-seed_0"])]).split())
    assert f"every verdict {said}" in table and "= rule" not in table and "does not" not in table, table
    assert any(said in t for t in head_sentences(summary, heads["last-seed_0"]))
    (section,) = seed_sections(last_only)
    cells = [c.text if hasattr(c, "text") else str(c) for t in section.tables for r in t.rows for c in r]
    assert any(said in c for c in cells) and not any("identical to" in c or "does not beat" in c for c in cells)


def _compare(digits_cache: Path, tmp_path: Path, kinds: tuple[str, ...], methods: tuple[str, ...], **kw) -> dict:
    """compare on real digits over heads fitted in a second (``kinds``: "kind" or "kind:seed"); a head
    named "zero" is a 'last' head with every weight zeroed (its biases set to its seed), so its logits move with
    no layer."""
    from helpers import fit_quickly

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.compare.run import CompareConfig, compare_heads
    from laya_inspect.head_dir import cache_identity, save_head

    with FeatureStore(digits_cache) as store:
        meta = cache_identity(store) | {"trained_by": "test"}
        dirs = []
        for spec in kinds:
            kind, seed = (spec.split(":") + ["0"])[:2]
            head = fit_quickly("last" if kind == "zero" else kind, store, 40, seed=int(seed))
            if kind == "zero":
                with torch.no_grad():
                    for name, p in head.named_parameters():  # every weight 0; a bias per seed keeps heads apart
                        p.fill_(int(seed) if name.endswith("bias") else 0)
            dirs.append(save_head(tmp_path / kind / f"seed_{seed}", head, meta=meta | {"seed": int(seed)}))
        config = CompareConfig(limit=80, n_boot=50, device="cpu", plots=False, methods=methods, workers=1, **kw)
        return compare_heads(dirs, store, config, out_dir=tmp_path / "out").summary


def test_a_head_that_reads_one_layer_compares_no_method_with_another(digits_cache: Path, tmp_path: Path) -> None:
    """On a 'last' head Grad-CAM and IG are 0 outside the one layer it reads, so their top-layer agreement
    and the paired difference between them read one sign per row (the demo: "IG picks the same top layer
    … 99%", "not shown to order the layers better or worse than Grad-CAM (ρ 0.99 vs 0.99 …)"). No
    method is compared with another there, the reading leads with a head that reads several layers, and
    the random reference is not applicable against the constant rule either: the rule picks the one layer
    read, the oracle, so random read "worse" by construction (before: "worse (all)")."""
    from laya_inspect.report.reading import compare_headline, compare_reading, head_sentences, versus_constant
    from laya_inspect.report.terminal import versus_table

    summary = _compare(digits_cache, tmp_path, ("last:0", "last:1", "concat"), ("gradcam", "ig", "random"))
    heads = {h["name"]: h for h in summary["heads"]}
    last = heads["last-seed_0"]
    assert last["layers_read"] == [2] and heads["concat-seed_0"]["layers_read"] == [0, 1, 2]
    assert all(s["vs_methods"] == {} for s in last["methods"].values()), last["methods"]
    assert last["best"] == {} and any(n.startswith("no method is marked best") for n in last["notes"]), last["best"]
    assert heads["concat-seed_0"]["methods"]["ig"]["vs_methods"]  # a head that reads several is compared as before
    verdicts = {m: s["vs_constant"]["verdict"] for m, s in last["methods"].items()}
    assert verdicts == dict.fromkeys(("gradcam", "ig", "random"), "not applicable"), verdicts

    assert "concat" in compare_headline(summary)[0]  # led by the head that reads several layers
    said = "not applicable (the head reads one layer)"
    for text in [*head_sentences(summary, last), *compare_reading(summary).details]:
        assert "picks the same top layer" not in text or "last-seed" not in text, text
        assert "order the layers" not in text or "last-seed" not in text, text
    assert any(said in t and "last-seed_0" in t for t in head_sentences(summary, last))
    only_last = summary | {"heads": [last, heads["last-seed_1"]]}
    (first,) = compare_headline(only_last)
    assert said in first and "picks the same top layer" not in first, first
    ig = versus_constant("ig", last["methods"]["ig"], last["references"]["constant"])
    assert ig is not None and ig.split(": ")[0].count("against") == 1 and said in ig, ig

    table = " ".join(_render([versus_table(last)]).split())
    assert f"every verdict {said}" in table, table  # random's among them: the rule is the oracle there
    line = " ".join(_render([verdict_line(last)]).split())
    assert "worse" not in line and "every verdict not applicable" in line, line
    page = " ".join(html.unescape(re.sub("<[^>]+>", " ", (tmp_path / "out" / "report.html").read_text())).split())
    about_last = re.findall(r"[^.]*last-seed_\d[^.]*\.", page)
    assert any(t.startswith(" No method is read on last-seed_0") for t in about_last), about_last
    assert not any("picks the same top layer" in t or "order the layers" in t for t in about_last), about_last


def test_a_head_that_reads_no_layer_is_said_to(digits_cache: Path, tmp_path: Path) -> None:
    """A head whose logits do not move with any layer (a 'last' head with its weights zeroed) was said to
    "read one layer": every score, check and verdict on it is meaningless, and it is said to read none,
    in summary.json, the sanity checks, the terminal and the reading."""
    from laya_inspect.report.reading import compare_headline
    from laya_inspect.report.sanity import terminal_block
    from laya_inspect.report.terminal import versus_table

    summary = _compare(digits_cache, tmp_path, ("zero:0", "zero:1"), ("gradcam", "ig", "random"), sanity=True)
    head = summary["heads"][0]
    assert head["layers_read"] == []
    for m, s in head["methods"].items():  # random too: every LOLO effect is 0, so nothing is measured
        assert s["vs_constant"]["verdict"] == "not applicable", m
        assert "logits move with no layer" in s["vs_constant"]["note"], s["vs_constant"]["note"]
        assert s["vs_methods"] == {}, m
    checks = [c for step in summary["sanity"]["heads"][head["name"]]["model"] for c in step["methods"].values()]
    assert checks and all(c["verdict"] == "not applicable" and "with no layer" in c["note"] for c in checks)
    said = "not applicable (the head reads no layer)"
    assert said in compare_headline(summary)[0], compare_headline(summary)
    assert f"every verdict {said}" in " ".join(_render([versus_table(head)]).split())
    text = " ".join(_render(terminal_block(summary, False) + seed_tables(summary)).split())
    assert said in text and "reads one layer" not in text, text
    (section,) = seed_sections(summary)
    cells = [c.text if hasattr(c, "text") else str(c) for t in section.tables for r in t.rows for c in r]
    assert any(said in c for c in cells) and not any("reads one layer" in c for c in cells), cells
    # report.html's per-head table of each method against the constant rule says the same
    from laya_inspect.report.sections import versus_table as page_table

    table = page_table(head)
    assert table is not None
    words = [c.text for r in table.rows for c in r if hasattr(c, "text")]
    assert any(said in w for w in words) and not any("reads one layer" in w for w in words), words


def _beats_by(seed: int, rho_minus_rule: float) -> dict:
    """A seed whose α beats the constant rule on ρ alone, by ``rho_minus_rule`` (its own interval ±0.01)."""
    head = _head(seed, "beats", [])
    alpha = head["ablations"]["mean"]["methods"]["alpha"]
    alpha["faithfulness"]["mean"] = 0.5 + rho_minus_rule
    d = rho_minus_rule
    alpha["vs_constant"]["faithfulness"] = {"mean": d, "ci_low": d - 0.01, "ci_high": d + 0.01}
    return head


def test_beating_the_rule_on_each_seed_is_not_said_over_the_seeds_when_their_interval_holds_0() -> None:
    """The digits demo's concat heads: Grad-CAM beat the constant rule on each of 3 seeds (each seed's
    paired interval above 0), and the across-seed table said "beats (all)" in green, while the mean
    difference over the seeds, ρ +0.33 [−0.04, +0.70], held 0 on every score: a seed not run could lose
    to the rule. The table and report.html now say that the verdict holds seed by seed only."""
    spread = across_seeds([_beats_by(s, d) for s, d in enumerate((0.05, 0.45, 0.02))], [0, 1, 2])
    alpha = spread["groups"][0]["ablations"]["mean"]["methods"]["alpha"]
    assert alpha["verdicts"] == ["beats"] * 3 and alpha["faithfulness_minus_constant"]["ci_low"] < 0
    assert alpha["verdict_over_seeds"] == "not shown"  # summary.json says it, not only the text
    said = "no score's mean difference over the seeds lies above 0"
    text = " ".join(_render(seed_tables({"across_seeds": spread})).split())
    assert f"alpha: beats the constant rule on each of the 3 seeds, but {said}" in text, text
    (section,) = seed_sections({"across_seeds": spread})
    carried = "on faithfulness ρ; not on top-layer agreement, Deletion@1 ÷ oracle"
    page = " ".join(html.unescape(section.html()).split())
    assert (
        f"beats the constant rule (every seed): {carried}; beats the constant rule on each of the 3 seeds, but {said}"
        in page
    )
    # the same verdict with differences that agree over the seeds ([+0.13, +0.57] at 98.3%): no such line
    steady = across_seeds([_beats_by(s, d) for s, d in enumerate((0.3, 0.35, 0.4))], [0, 1, 2])
    assert steady["groups"][0]["ablations"]["mean"]["methods"]["alpha"]["verdict_over_seeds"] == "beats"
    assert said not in _render(seed_tables({"across_seeds": steady}))
    (section,) = seed_sections({"across_seeds": steady})
    assert said not in section.html()


def test_a_rival_read_alike_on_each_seed_says_its_difference_over_the_seeds() -> None:
    """ "α orders the layers worse than IG on each of the 3 seeds (each seed's paired difference)" read
    each seed's interval, which holds that seed's head fixed, and no interval over the seeds was computed:
    α − IG −0.15, −0.45, −0.02 (each seed's interval below 0) has a t-interval over the seeds that holds 0.
    The summary keeps that difference over the seeds, and the reading says when it holds 0."""
    from laya_inspect.report.reading import compare_reading

    def run(means: tuple[float, ...]) -> tuple[dict, str]:
        heads = [_with_ig(_head(s, "beats", []), d - 0.01, d + 0.01) for s, d in enumerate(means)]
        summary = _compared(heads, list(range(len(means))))
        return summary, " ".join(compare_reading(summary).lead)

    summary, lead = run((-0.15, -0.45, -0.02))
    (group,) = summary["across_seeds"]["groups"]
    over = group["ablations"]["mean"]["vs_methods"]["alpha"]["ig"]
    assert over["values"] == pytest.approx([-0.15, -0.45, -0.02]) and over["ci_low"] < 0 < over["ci_high"]
    assert "α orders the layers worse than IG on each of the 3 seeds (each seed's paired difference), but its" in lead
    assert "includes 0 (95% t-interval over the seeds): not shown for the head refitted with another seed" in lead
    assert over["verdict"] == "no different" and over["confidence"] == 0.95  # each seed's level: none recorded
    # differences that agree over the seeds: said, and lying below 0
    _, lead = run((-0.2, -0.3, -0.25))
    assert "not shown for the head refitted" not in lead and "over the seeds -0.25 [" in lead, lead
    assert "lies below 0 too" in lead, lead


def test_the_legend_counts_the_methods_the_run_read_against_the_rule() -> None:
    """The legends said "with 4 methods no different from the rule, some row reads beats, worse or mixed in
    17% of simulated runs" on every run, compare --method alpha's one method included: the count and the
    rate now come from the methods that run read against the constant rule."""
    from laya_inspect.report.sections import versus_table

    def legends(methods: list[str]) -> tuple[str, str]:
        heads = [_head(s, "beats", []) for s in (0, 1)]
        for h in heads:
            for m in methods[1:]:
                h["ablations"]["mean"]["methods"][m] = _scores(0.5, 0.5, "not shown")
        summary = _compared(heads, [0, 1])
        (section,) = seed_sections(summary)
        table = versus_table(summary["heads"][0])
        assert table is not None
        return section.legend, table.caption

    for said in legends(["alpha"]):
        assert "tested on its own" in said and "with 4 methods" not in said and "17%" not in said, said
    for said in legends(["alpha", "ig", "gradcam", "random"]):
        assert "with 4 methods no different from the rule, some row reads beats, worse or mixed in 17% of" in said
    for said in legends(["alpha", "ig"]):
        assert "with 2 methods no different from the rule" in said and "in about 9% of runs" in said, said


def test_the_tables_read_the_verdict_over_the_seeds_that_summary_json_records() -> None:
    """The line "beats the constant rule on each of the 3 seeds, but no score's mean difference over the
    seeds lies above 0" was worked out in the report from the intervals, so summary.json's row held only
    "beats" × 3. The row records it (``verdict_over_seeds``) and the terminal and report.html read it."""
    spread = across_seeds([_beats_by(s, d) for s, d in enumerate((0.05, 0.45, 0.02))], [0, 1, 2])
    alpha = spread["groups"][0]["ablations"]["mean"]["methods"]["alpha"]
    said = "no score's mean difference over the seeds lies above 0"
    assert said in " ".join(_render(seed_tables({"across_seeds": spread})).split())
    alpha["verdict_over_seeds"] = None  # as a summary written before it was kept: no line, not one worked out here
    assert said not in " ".join(_render(seed_tables({"across_seeds": spread})).split())
    (section,) = seed_sections({"across_seeds": spread})
    assert said not in " ".join(html.unescape(section.html()).split())


def test_the_across_seed_table_shows_each_methods_difference_in_rho_to_another(
    digits_cache: Path, tmp_path: Path
) -> None:
    """summary.json kept Grad-CAM − IG's paired difference in ρ over the seeds (``vs_methods``), and only the
    reading said it; the across-seed table in the terminal and report.html now show it, each pair once, on
    a real compare of two seeds of a concat head of digits. A method read against no other adds no row."""
    from laya_inspect.report.reading import with_ci

    summary = _compare(digits_cache, tmp_path, ("concat:0", "concat:1"), ("gradcam", "ig"))
    (group,) = summary["across_seeds"]["groups"]
    entry = group["ablations"][next(iter(group["ablations"]))]
    over = entry["vs_methods"]["gradcam"]["ig"]
    assert over["n"] == 2 and over["ci_low"] is not None, over
    lines = _render(seed_tables(summary, brief=True)).splitlines()
    rows = [line for line in lines if line.strip().startswith("− ig")]
    assert len(rows) == 1, lines  # gradcam − ig; ig − gradcam is the same pair mirrored
    mean, half = over["mean"], (over["ci_high"] - over["ci_low"]) / 2
    shown = f"{mean:+.2f}".replace("0.", ".", 1) + "±" + f"{half:.2f}".replace("0.", ".", 1)
    assert shown in rows[0] or over.get("clipped"), (shown, rows[0])
    assert not any(line.strip().startswith("− gradcam") for line in lines), lines
    assert "− <method>: the method above minus that method, paired difference in ρ over the seeds" in " ".join(
        " ".join(lines).split()
    )
    (section,) = seed_sections(summary)
    page = html.unescape(section.html())
    assert "faithfulness ρ − other method" in page and f"− ig: {with_ci(over)}" in page, page
    for m, row in entry["methods"].items():  # recorded on every row, one verdict over the seeds or none
        words = set(row["verdicts"])
        assert row["verdict_over_seeds"] in (
            {"beats", "not shown", "mixed"}
            if words == {"beats"}
            else {"worse", "not shown", "mixed"}
            if words == {"worse"}
            else {"beats", "worse", "not shown", "mixed"}
            if words == {"mixed"}
            else {None}
        ), (m, row)
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (
        "verdict_over_seeds"
        in saved["across_seeds"]["groups"][0]["ablations"][next(iter(group["ablations"]))]["methods"]["gradcam"]
    )

    # one method: no pair, no column, no row
    alone = _compare(digits_cache, tmp_path / "one", ("concat:0", "concat:1"), ("gradcam",))
    (section,) = seed_sections(alone)
    assert "other method" not in section.html()
    said = [line.strip() for line in _render(seed_tables(alone, brief=True)).splitlines()]
    assert [t for t in said if t.startswith("− ")] == [t for t in said if t.startswith("− constant")], said
    assert "<method>" not in " ".join(said)


def test_a_seed_with_no_difference_to_a_rival_gives_no_value_over_the_seeds() -> None:
    """A head's ``vs_methods`` holds None for a pair with no difference drawn; over the seeds that seed gives
    no value (None in ``values``), where reading it stopped compare with an AttributeError."""
    heads = [_with_ig(_head(s, "beats", []), -0.2, -0.1) for s in range(3)]
    heads[1]["ablations"]["mean"]["methods"]["alpha"]["vs_methods"]["ig"] = None
    over = across_seeds(heads, [0, 1, 2])["groups"][0]["ablations"]["mean"]["vs_methods"]["alpha"]["ig"]
    assert over["values"] == [pytest.approx(-0.15), None, pytest.approx(-0.15)] and over["n"] == 2


@pytest.mark.slow
def test_each_seed_of_a_head_draws_its_own_random_scores(two_seeds: Path, digits_cache: Path, tmp_path: Path) -> None:
    """The random method's noise and the random reference's are drawn per fit seed: the interval over
    the seeds then holds the draws' spread, where one draw scored against every seed looked like a
    steady "no-information" level (docs/METHOD.md, "random reference")."""
    import h5py

    out = tmp_path / "draws"
    args = ["compare", str(two_seeds), "--cache", str(digits_cache), "--limit", "40", "--method", "alpha,random"]
    args += ["--bootstrap", "10", "--no-plots", "--no-sanity", "--device", "cpu", "--out", str(out)]
    result = runner.invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    names = [h["name"] for h in summary["heads"]]
    assert [h["methods"]["random"]["params"]["fit_seed"] for h in summary["heads"]] == [0, 1]
    a = summary["ablation"]
    assert [h["ablations"][a]["lolo"]["params"]["fit_seed"] for h in summary["heads"]] == [0, 1]
    with h5py.File(out / "attributions.h5", "r") as f:
        noise = [f[f"heads/{n}/methods/random/scores"][()] for n in names]
        ref = [f[f"heads/{n}/ablations/{a}/references/random/scores"][()] for n in names]
    assert noise[0].shape == noise[1].shape and not (noise[0] == noise[1]).any()
    assert ref[0].shape == ref[1].shape and not (ref[0] == ref[1]).any()
