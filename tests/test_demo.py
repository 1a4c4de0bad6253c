"""`laya-inspect demo --quick` end to end into tmp_path: every artifact, sane numbers read back from the
files, printed commands that rebuild each step's config (and rerun one step identically), and one
failing invocation per error class."""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from laya_inspect.cli import app
from laya_inspect.demo import DemoConfig, default_out_dir, plan_demo
from laya_inspect.errors import InputError
from laya_inspect.training.quality import EPOCH_ADVICE

runner = CliRunner()
ENV = {"COLUMNS": "200"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    out = tmp_path_factory.mktemp("demo") / "out"
    plan = plan_demo(DemoConfig(quick=True, device="cpu", out=str(out)))  # what the run will do (writes nothing)
    assert not out.exists()
    result = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    return out, result, plan


@pytest.mark.slow
def test_quick_demo_writes_every_artifact(demo) -> None:  # noqa: ANN001
    out, _, plan = demo
    for rel in (
        "backbone.pt",
        "backbone.metrics.json",
        "features.h5",
        "heads/summary.json",
        "heads/runs.csv",
        "heads/profiles/profiles.json",
        "heads/profiles/layer_weights.png",
        "compare/summary.json",
        "compare/summary.csv",
        "compare/attributions.h5",
        "compare/plots/laya-seed_0_profile.png",
        "compare/plots/scalarmix-seed_0_profile.png",
        "demo.json",
    ):
        assert (out / rel).is_file(), rel
    for head in ("laya", "last", "concat", "scalarmix"):
        for seed in plan.fit.seeds:
            assert (out / "heads" / head / f"seed_{seed}" / "weights.pt").is_file()
            assert (out / "heads" / head / f"seed_{seed}" / "config.json").is_file()


@pytest.mark.slow
def test_quick_demo_prints_commands_and_summary(demo) -> None:  # noqa: ANN001
    out, result, plan = demo
    text = result.output
    assert "Traceback" not in text
    for step in plan.steps():  # every step's command, exactly as planned, before it runs
        assert f"$ {step.command}" in text
    assert (
        text.index("$ laya-inspect train")
        < text.index("$ laya-inspect extract")
        < text.index("$ laya-inspect fit-head")
        < text.index("$ laya-inspect compare")
    )
    assert "--epochs 10" in text and "--n-steps 16" in text and "--bootstrap 200" in text
    for heading in ("Head accuracy on the test split", "α profile", "Faithfulness", f"Files in {out}"):
        assert heading in text
    for head in ("laya", "last", "concat", "scalarmix"):
        assert f" {head} " in text  # a row of the accuracy table
    assert "laya-seed_0 (laya)" in text and "blocks.2" in text  # compare's own table, via report.build_report
    assert "method − constant rule" in text  # each method read against the constant rule, under its table
    assert "(--quick)" in text
    flat = " ".join(text.split())  # rich wraps long lines
    assert "reference: chance" in flat  # the quality gate's references under the accuracy table
    fit = json.loads((out / "heads" / "summary.json").read_text())
    for h in fit["heads"]:  # and the text behind each "n warnings" cell, with the demo's own epoch advice
        for w in h.get("warnings") or []:
            w = w.replace(EPOCH_ADVICE, "run the demo again with more --epochs (now 30)")
            assert " ".join(f"warning {h['head']}: {w}".split()) in flat


@pytest.mark.slow
def test_numbers_read_back_from_the_files_are_sane(demo) -> None:  # noqa: ANN001
    out, _, _ = demo
    with h5py.File(out / "compare" / "attributions.h5") as f:
        alpha = f["heads/laya-seed_0/methods/alpha/scores"][()]
        weights = f["heads/laya-seed_0/weights"][()]
    assert alpha.shape == (360, 3)
    np.testing.assert_allclose(alpha.sum(axis=1), 1.0, atol=1e-5)
    assert (alpha >= 0).all()
    np.testing.assert_allclose(alpha, weights)

    fit = json.loads((out / "heads" / "summary.json").read_text())
    acc = {h["head"]: h["test_acc"]["mean"] for h in fit["heads"]}
    assert set(acc) == {"laya", "last", "concat", "scalarmix"}
    assert min(acc.values()) > 0.5  # digits: chance is 0.1
    backbone = json.loads((out / "backbone.metrics.json").read_text())
    assert backbone["test_acc"] > 0.8

    cmp = json.loads((out / "compare" / "summary.json").read_text())
    laya = next(h for h in cmp["heads"] if h["kind"] == "laya")
    faith = {m: s["faithfulness"]["mean"] for m, s in laya["methods"].items()}
    assert set(faith) >= {"alpha", "ig", "gradcam", "random"}
    assert faith["alpha"] > faith["random"] + 0.2
    scalarmix = next(h for h in cmp["heads"] if h["kind"] == "scalarmix")
    assert "static" in scalarmix["methods"]

    record = json.loads((out / "demo.json").read_text())
    assert record["complete"] and record["quick"]
    assert record["budget"] == {
        "limit": None,
        "train_epochs": 10,
        "fit_epochs": 30,
        "seeds": 1,
        "compare_limit": None,
        "n_steps": 16,
        "n_boot": 200,
    }
    assert [s["name"] for s in record["steps"]] == ["train", "extract", "fit-head", "compare"]
    assert all(s["seconds"] > 0 for s in record["steps"])
    assert record["numbers"]["faithfulness"]["laya-seed_0"]["alpha"] == pytest.approx(faith["alpha"])
    assert sum(record["numbers"]["alpha_mean"].values()) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_the_compare_step_reads_faithfulness_beside_the_constant_rule(demo) -> None:  # noqa: ANN001
    """The compare step's line printed each method's faithfulness ρ with random's beside it but not the
    constant rule's (one layer profile for every input), the null every verdict is read against: on the
    digits demo α's 0.625 read as high beside random's −0.03, the constant rule's 0.333 unsaid."""
    out, result, _ = demo
    cmp = json.loads((out / "compare" / "summary.json").read_text())
    laya = next(h for h in cmp["heads"] if h["kind"] == "laya")
    constant = laya["references"]["constant"]["faithfulness"]["mean"]
    record = json.loads((out / "demo.json").read_text())
    assert record["numbers"]["faithfulness_constant"][laya["name"]] == pytest.approx(constant)
    (line,) = [ln for ln in result.output.splitlines() if "faithfulness ρ on" in ln]
    assert line.endswith(f" · constant rule {constant:.3f}")


@pytest.mark.slow
def test_the_reading_box_holds_compares_verdict_against_the_constant_rule(demo) -> None:  # noqa: ANN001
    """QA: report.html's reading box held compare's first sentence only; its verdict against the constant
    rule sat in the list under the box, below a caveat that spoke of "these sentences"."""
    import html

    out, _, _ = demo
    page = (out / "report.html").read_text(encoding="utf-8")
    box = html.unescape(page.split('<div class="reading" id="reading">')[1].split("</div>")[0])
    said = re.findall(r"<p[^>]*>(.*?)</p>", box, re.S)
    assert said[0].startswith("LAYA reaches a test accuracy")  # fit-head's headline, then compare's verdicts
    (against,) = [i for i, line in enumerate(said) if line.startswith("Against the constant rule")]
    assert said[against - 1].startswith("α picks the same top layer")
    assert said[-1].startswith("The compare step's sentences above read ")  # the caveat names what it covers


def _short(v: float, sign: str = "") -> str:
    """Two decimals without the leading zero, as compare's across-seed cells print them."""
    return format(v, f"{sign}.2f").replace("0.", ".", 1)


def test_the_alpha_profile_reads_each_seeds_alpha_beside_its_own_lolo_effects(monkeypatch, capsys) -> None:  # noqa: ANN001
    """Heads fitted under 3 seeds: the α profile table put seed 0's LOLO effects (peak blocks.2) beside α
    pooled over the seeds (peak blocks.0), and the full demo stopped there with a traceback (the profile's
    arrays read as a truth value). Now compare scores every LAYA seed, and the table reads each layer's α
    and LOLO effect as the mean over the seeds ± the 95% t half-width, each seed's value below, and says
    which layer each seed's α and LOLO effects put first, in the cells of compare's across-seed table
    (".38±.08", two decimals: they read "0.369 ± 0.084", three, from a twin of that table's cell)."""
    import io
    from types import SimpleNamespace

    from rich.console import Console
    from scipy import stats

    from laya_inspect.cli import demo as cli_demo

    out = Console(file=io.StringIO(), width=80, color_system=None)
    monkeypatch.setattr(cli_demo, "console", out)
    seed_means = np.array([[0.369, 0.225, 0.406], [0.393, 0.350, 0.256], [0.545, 0.325, 0.131]])
    alpha = {"seeds": [0, 1, 2], "mean": seed_means.mean(0), "std": np.full(3, 0.35), "seed_means": seed_means}
    lolo = [[2.92, 1.79, 3.92], [4.11, 2.97, 2.22], [4.86, 2.47, 1.65]]
    heads = [{"kind": "laya", "dir": f"d/heads/laya/seed_{s}", "lolo": {"mean_effect": e}} for s, e in enumerate(lolo)]
    result = SimpleNamespace(
        profiles={"alpha": {"laya": alpha}},
        compare_summary={"heads": heads, "ablation": "mean", "effect": "logit"},
        numbers={"layers": ["b0", "b1", "b2"], "widths": [8, 8, 8]},
        plan=SimpleNamespace(fit=SimpleNamespace(seeds=(0, 1, 2))),
    )
    cli_demo._profile_table(result)
    text = out.file.getvalue()
    assert max(len(ln) for ln in text.splitlines()) <= 80
    lines = text.splitlines()
    half = stats.t.ppf(0.975, 2) / np.sqrt(3)
    for i, name in enumerate(["b0", "b1", "b2"]):
        k = next(n for n, ln in enumerate(lines) if ln.strip().startswith(name))
        a, e = seed_means[:, i], np.array([r[i] for r in lolo])
        if name != "b2":  # b2's α reaches below 0: shown cut to [0, 1] (the test below)
            assert f"{_short(a.mean())}±{_short(half * a.std(ddof=1))}" in lines[k]
        assert lines[k].rstrip().endswith(f"{_short(e.mean(), '+')}±{_short(half * e.std(ddof=1))}")
        below = lines[k + 1].split()  # each seed's α, then each seed's LOLO effect, in seed order
        assert [float(v) for v in below] == pytest.approx([*a, *e], abs=0.0051)  # two decimals
    note = " ".join(capsys.readouterr().out.split())  # the line under the table (app's console)
    assert "per seed (0, 1, 2), the top layer by mean α: b2, b0, b0; by LOLO effect: b2, b0, b0" in note
    alpha.update(seeds=[0], mean=seed_means[0], seed_means=seed_means[:1])
    result.compare_summary["heads"] = heads[:1]
    out.file = io.StringIO()
    cli_demo._profile_table(result)  # one seed: its α ± std over rows beside its LOLO effects, as before
    (row,) = [ln for ln in out.file.getvalue().splitlines() if ln.strip().startswith("b2")]
    assert row.split()[2:5] == ["0.406", "±", "0.350"] and row.split()[-1] == "+3.920"


def test_the_alpha_profile_shows_an_alpha_reaching_outside_0_1_cut_as_other_intervals_are(monkeypatch, capsys) -> None:  # noqa: ANN001
    """α lies in [0, 1], yet its mean over 3 seeds ± the 95% t half-width was printed "0.264 ± 0.342", down
    to −0.078. That layer's cell is now the interval cut to [0, 1], as the other cut intervals are shown,
    with one note line giving the t bounds; a layer whose interval lies inside keeps its ± half-width."""
    import io
    from types import SimpleNamespace

    from rich.console import Console
    from scipy import stats

    from laya_inspect.cli import demo as cli_demo

    out = Console(file=io.StringIO(), width=80, color_system=None)
    monkeypatch.setattr(cli_demo, "console", out)
    seed_means = np.array([[0.594, 0.406], [0.744, 0.256], [0.869, 0.131]])
    alpha = {"seeds": [0, 1, 2], "mean": seed_means.mean(0), "std": np.full(2, 0.3), "seed_means": seed_means}
    heads = [{"kind": "laya", "dir": f"d/heads/laya/seed_{s}", "lolo": {"mean_effect": [1.0, 2.0]}} for s in range(3)]
    result = SimpleNamespace(
        profiles={"alpha": {"laya": alpha}},
        compare_summary={"heads": heads, "ablation": "mean", "effect": "logit"},
        numbers={"layers": ["b0", "b1"], "widths": [8, 8]},
        plan=SimpleNamespace(fit=SimpleNamespace(seeds=(0, 1, 2))),
    )
    cli_demo._profile_table(result)
    rows = {ln.split()[0]: ln for ln in out.file.getvalue().splitlines() if ln.strip().startswith("b")}
    half = stats.t.ppf(0.975, 2) / np.sqrt(3) * seed_means.std(0, ddof=1)
    mean = seed_means.mean(0)
    assert mean[1] - half[1] < 0 < mean[0] - half[0] and mean[0] + half[0] > 1 > mean[1] + half[1]
    assert f"{_short(mean[1])} [.00,{_short(mean[1] + half[1])}]" in rows["b1"], rows
    assert f"{_short(mean[0])} [{_short(mean[0] - half[0])},1.00]" in rows["b0"], rows
    assert "±" not in rows["b0"].split("█")[0] and "±" not in rows["b1"].split("█")[0], rows
    note = " ".join(capsys.readouterr().out.split())
    t = ", ".join(f"b{i} [{mean[i] - half[i]:+.2f}, {mean[i] + half[i]:+.2f}]" for i in (0, 1))
    assert "mean α: an interval reaching outside [0, 1] is shown cut to [0, 1]" in note, note
    assert f"the t-interval over 3 seeds at 95% ({t}) is too wide" in note, note
    assert note.count("is shown cut to") == 1


def test_the_compare_step_scores_every_seed_of_every_head(tmp_path: Path) -> None:
    """The compare step scored LAYA on every seed but the baselines (scalarmix, last, concat) on seed 0
    alone, so their verdicts were one seed's. Now it gives compare the fit-head folder, as users are told
    to: every <head>/seed_<S>/ in it, each head's verdicts read across its seeds."""
    plan = plan_demo(DemoConfig(device="cpu", out=str(tmp_path / "o")))
    heads = plan.paths["heads"]
    step = plan.steps()[3]
    assert plan.budget.seeds == 3
    assert shlex.split(step.command)[1:3] == ["compare", str(heads)]  # then --cache …
    assert step.title.endswith("(every head, seeds 0 … 2)")
    quick = plan_demo(DemoConfig(device="cpu", quick=True, out=str(tmp_path / "q")))
    assert quick.steps()[3].title.endswith("(every head, seed 0)")
    assert shlex.split(quick.steps()[3].command)[1:3] == ["compare", str(quick.paths["heads"])]


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("demo2") / "out"
    result = runner.invoke(app, ["demo", "--quick", "--seeds", "2", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    return out, result


@pytest.mark.slow
def test_the_compare_step_reads_faithfulness_over_the_laya_seeds(two_seeds) -> None:  # noqa: ANN001
    """Heads fitted under 2 seeds: the compare step's line and demo.json read α's faithfulness ρ on the
    seed-0 head alone ("faithfulness ρ on laya-seed_0: alpha 0.625 …"). Now compare scored both seeds of
    every head, and the line and demo.json's `faithfulness_seeds` give each method's and the constant
    rule's ρ as the mean over the seeds with the t-interval compare's across-seed table has."""
    out, result = two_seeds
    cmp = json.loads((out / "compare" / "summary.json").read_text())
    names = [f"{h}-seed_{s}" for h in ("laya", "last", "concat", "scalarmix") for s in (0, 1)]
    assert [h["name"] for h in cmp["heads"]] == names
    groups = {g["head"]: g for g in cmp["across_seeds"]["groups"]}
    assert set(groups) == {"laya", "last", "concat", "scalarmix"}
    rows, refs = (groups["laya"]["ablations"][cmp["ablation"]][k] for k in ("methods", "references"))
    record = json.loads((out / "demo.json").read_text())
    laya = record["numbers"]["faithfulness_seeds"]["laya"]
    assert laya["heads"] == ["laya-seed_0", "laya-seed_1"]
    assert set(laya["faithfulness"]) == {"alpha", "alpha-contrib", "ig", "gradcam", "random"}
    for m, est in [*laya["faithfulness"].items(), ("constant", laya["constant"])]:
        across = (refs if m == "constant" else rows)[m]["faithfulness"]
        for key in ("mean", "ci_low", "ci_high", "values"):
            assert est[key] == pytest.approx(across[key]), (m, key)
    for m in ("alpha", "random"):
        per_seed = [h["methods"][m]["faithfulness"]["mean"] for h in cmp["heads"][:2]]
        assert laya["faithfulness"][m]["values"] == pytest.approx(per_seed)
        assert laya["faithfulness"][m]["mean"] == pytest.approx(sum(per_seed) / 2)
    for head in ("last", "concat", "scalarmix"):  # every baseline read across its seeds too
        assert record["numbers"]["faithfulness_seeds"][head]["heads"] == [f"{head}-seed_0", f"{head}-seed_1"]
    assert "read one fitted seed of" not in result.output  # compare's note on a head given one seed of

    def said(e: dict[str, Any]) -> str:
        return f"{e['mean']:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"

    flat = " ".join(result.output.split())  # rich wraps the line
    line = flat[flat.index("faithfulness ρ on") : flat.index(" ─")]  # the summary's rule follows it
    line, _, note = line.partition(" ρ: an interval reaching outside [−1, 1]")  # then the intervals it cut
    cut = [m for m, e in [*laya["faithfulness"].items(), ("constant rule", laya["constant"])] if e.get("clipped")]
    assert bool(note) == bool(cut) and all(f"{m} [" in note for m in cut), note
    assert line.startswith("faithfulness ρ on laya-seed_0, seed_1 (mean over 2 seeds [95% t-interval]): ")
    assert f": alpha {said(rows['alpha']['faithfulness'])} · " in line
    assert line.endswith(f" · constant rule {said(refs['constant']['faithfulness'])}")
    assert "α profile: LAYA per layer on the test split, seeds 0, 1" in result.output


def _full_report(summary: dict[str, Any]) -> list[str]:
    """compare's whole terminal report of ``summary`` at the width the demo ran at (ENV)."""
    from rich.console import Console

    from laya_inspect.report.terminal import build_report

    console = Console(width=int(ENV["COLUMNS"]), record=True, file=io.StringIO())
    for part in build_report(summary, 100):
        console.print(part)
    return console.export_text().splitlines()


@pytest.mark.slow
def test_the_demo_prints_one_seeds_tables_and_every_verdict(two_seeds) -> None:  # noqa: ANN001
    """The demo printed compare's whole report: on the digits, 800 lines, twelve per-seed tables and
    twelve sanity tables a first run cannot read. Now the whole demo is shorter than that report alone,
    and still says every head's verdict against the constant rule, the layer each head relies on, the
    across-seed tables, each head's sanity checks and every warning compare printed."""
    from laya_inspect.report.across import LINE_WORDS
    from laya_inspect.report.reading import relied_on, sanity_failed

    out, result = two_seeds
    cmp = json.loads((out / "compare" / "summary.json").read_text())
    full = _full_report(cmp)
    assert len(result.output.splitlines()) < len(full)
    from laya_inspect.report.terminal import tabled  # the brief view's heads with tables

    flat = " ".join(result.output.split())
    shown = tabled(cmp)
    assert shown == ["laya-seed_0"]  # one seed's tables; the across-seed tables give every seed's scores
    assert f"`laya-inspect report {out / 'compare'}`" in flat
    for head in cmp["heads"]:
        name = head["name"]
        assert (f"{name} ({head['kind']}) · accuracy" in flat) == (name in shown)
        if name not in shown:
            said = flat.split(f"{name} − constant rule: ")[1].split(f" {name}: ")[0]
            words = {s["vs_constant"]["verdict"] for s in head["methods"].values()}
            if words == {"not applicable"}:  # a head that reads one layer: said once for every method
                assert said.startswith("every verdict not applicable (the head reads one layer)"), (name, said)
            for m, s in head["methods"].items():
                word = s["vs_constant"]["verdict"]
                assert words == {"not applicable"} or f"{m} {LINE_WORDS.get(word, word)}" in said, (name, m, said)
        assert " ".join(relied_on(head, cmp["effect"]).split()) in flat
        assert re.search(rf"{re.escape(name)}(: sanity \(|: \d+ of \d+ low|: not applicable)", flat), name
    for g in cmp["across_seeds"]["groups"]:
        assert f"across seeds: {g['head']} ({g['kind']}), seeds 0, 1" in flat
    # fit-head's gate warnings compare carries over are printed above it, under the accuracy table
    # (test_the_demo_says_each_fit_head_warning_once)
    warned = [ln for ln in full if ln.startswith("warning") and not ln.startswith("warning head: fit-head said of")]
    for line in [*sanity_failed(cmp), *warned]:
        assert " ".join(line.split()) in flat


@pytest.mark.slow
def test_the_demo_says_each_fit_head_warning_once(two_seeds) -> None:  # noqa: ANN001
    """QA: the full demo printed each warning of fit-head's gate twice, under the accuracy table
    ("warning laya: seeds disagree: …") and again among compare's warnings, carried over ("warning
    head: fit-head said of laya (…): seeds disagree: …"); report.html said it at the top of the page
    and again in the gate's list. Now compare's part points to the lines above and the gate's list to
    the top of the page; compare's summary.json keeps every carried line and `report` prints them."""
    import html

    out, result = two_seeds
    fit = json.loads((out / "heads" / "summary.json").read_text())
    cmp = json.loads((out / "compare" / "summary.json").read_text())
    said = {" ".join(w.split()) for h in fit["heads"] for w in h.get("warnings") or []}
    assert said, "two quick seeds give gate warnings (seeds at chance, test sampling): nothing to test"
    flat = " ".join(result.output.split())
    # the demo prints an epoch-limit warning with its own advice (its --epochs), the file keeps fit-head's
    printed = {w.replace(EPOCH_ADVICE, "run the demo again with more --epochs (now 30)") for w in said}
    for w in printed:
        assert flat.count(w) == 1, (w, flat.count(w))
    assert "fit-head said of" not in flat
    pointer = r"warning head: fit-head's \d+ warnings? above \(.+\) (apply|applies) to these heads too"
    assert re.search(pointer, flat), flat
    # nothing lost: compare's summary.json keeps a carried line per head and warning; report prints each
    carried = [" ".join(w.split()) for w in cmp["head_warnings"] if w.startswith("fit-head said of ")]
    assert {(h["head"], " ".join(w.split())) for h in fit["heads"] for w in h.get("warnings") or []} == {
        (c.split(" ", 4)[3], c.split("): ", 1)[1]) for c in carried
    }
    report = runner.invoke(app, ["report", str(out / "compare")], env=ENV)
    assert report.exit_code == 0, report.output
    again = " ".join(report.output.split())
    assert all(w in again for w in said) and "warning head: fit-head said of" in again
    # `report DEMO_DIR` prints fit-head's report and then compare's: each said once there too
    whole = runner.invoke(app, ["report", str(out)], env=ENV)
    assert whole.exit_code == 0, whole.output
    both = " ".join(whole.output.split())
    for w in said:
        assert both.count(w) == 1, (w, both.count(w))
    assert re.search(pointer, both) and "fit-head said of" not in both
    # the page: each said once, at the top; the gate's list points there
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", (out / "report.html").read_text("utf-8"))).split())
    for w in said:
        assert page.count(w) == 1, (w, page.count(w))
    assert re.search(r"\d+ warnings? of this gate, said at the top of the page", page)


@pytest.mark.slow
def test_the_brief_sanity_view_keeps_the_table_of_a_head_that_fails_a_check(two_seeds) -> None:  # noqa: ANN001
    """The demo's sanity section: one line per head that failed no check; the whole table for one whose
    attributions kept a high correlation with the trained head's (planted here in the demo's record)."""
    import copy

    from rich.console import Console

    from laya_inspect.report.sanity import terminal_block

    out, _ = two_seeds
    summary = json.loads((out / "compare" / "summary.json").read_text())

    def text(s: dict[str, Any], brief: bool) -> str:
        console = Console(width=100, record=True, file=io.StringIO())
        for part in terminal_block(s, brief):
            console.print(part)
        return console.export_text()

    names = list(summary["sanity"]["heads"])
    full, brief = text(summary, False), text(summary, True)
    assert all(f"{n}: sanity (" in full for n in names)
    tabled = [n for n in names if f"{n}: sanity (" in brief]
    passed = [n for n in names if re.search(rf"\b{re.escape(n)}: \d+ of \d+ low", brief)]
    # a head that reads one layer: one line, every check not applicable (neither passed nor failed)
    one_layer = [
        n for n in names if re.search(rf"\b{re.escape(n)}: not applicable \(the head reads one layer\)", brief)
    ]
    assert sorted(tabled + passed + one_layer) == sorted(names) and len(passed) >= len(names) // 2, brief
    assert len(brief.splitlines()) < len(full.splitlines())
    failed = copy.deepcopy(summary)
    check = next(iter(failed["sanity"]["heads"][passed[0]]["data"]["methods"].values()))
    check.update(verdict="high", rank_correlation={"mean": 0.9, "ci_low": 0.85, "ci_high": 0.95})
    planted = text(failed, True)
    assert [n for n in names if f"{n}: sanity (" in planted] == sorted([passed[0], *tabled], key=names.index)


class _Captured(Exception):
    pass


@pytest.mark.slow
def test_printed_commands_build_the_same_configs(demo, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Each printed command, parsed by the real command, hands its library function the demo's own config."""
    import laya_inspect.cache.extract
    import laya_inspect.compare.run
    import laya_inspect.training.fit_head
    import laya_inspect.training.joint

    out, _, plan = demo
    seen: dict[str, Any] = {}

    def catch(name: str, pick):  # noqa: ANN001, ANN202
        def fake(*args: Any, **kwargs: Any) -> None:
            seen[name] = pick(*args, **kwargs)
            raise _Captured

        return fake

    monkeypatch.setattr(
        laya_inspect.training.joint,
        "train_joint",
        catch("train", lambda c, *, out, overwrite, **_: (c, Path(out), overwrite)),
    )
    monkeypatch.setattr(laya_inspect.cache.extract, "extract_features", catch("extract", lambda c, **_: (c, None)))
    monkeypatch.setattr(
        laya_inspect.training.fit_head,
        "fit_heads",
        catch("fit-head", lambda store, c, *, out_dir, overwrite, **_: (c, Path(out_dir), overwrite)),
    )
    monkeypatch.setattr(
        laya_inspect.compare.run,
        "compare_heads",
        catch("compare", lambda dirs, store, c, *, out_dir, **_: (c, Path(out_dir), [Path(d) for d in dirs])),
    )
    expected = {
        "train": (plan.train, plan.paths["backbone"], False),
        "extract": (plan.extract, None),
        "fit-head": (plan.fit, plan.paths["heads"], False),
        "compare": (plan.compare, plan.paths["compare"], [plan.paths["heads"]]),
    }
    for step in plan.steps():
        result = runner.invoke(app, shlex.split(step.command)[1:], env=ENV)
        assert isinstance(result.exception, _Captured), (step.command, result.output)
        assert seen[step.name] == expected[step.name], step.command


@pytest.mark.slow
def test_printed_train_command_reproduces_the_backbone(demo, tmp_path: Path) -> None:  # noqa: ANN001
    out, _, plan = demo
    argv = shlex.split(plan.steps()[0].command)[1:]
    assert argv[-2:] == ["--out", str(out / "backbone.pt")]
    again = tmp_path / "backbone.pt"
    result = runner.invoke(app, [*argv[:-1], str(again)], env=ENV)
    assert result.exit_code == 0, result.output
    first, second = (torch.load(p, weights_only=True) for p in (out / "backbone.pt", again))
    assert first["state_dict"].keys() == second["state_dict"].keys()
    for k, v in first["state_dict"].items():
        assert torch.equal(v, second["state_dict"][k]), k
    m1, m2 = (json.loads(p.with_name("backbone.metrics.json").read_text()) for p in (out / "backbone.pt", again))
    assert m1["test_acc"] == m2["test_acc"] and m1["best_epoch"] == m2["best_epoch"]


def test_missing_fashion_mnist_says_how_to_get_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["demo", "--dataset", "fashion-mnist", "--data-root", str(empty), "--out", str(out)], env=ENV
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "apt-get install -y dataset-fashion-mnist" in lines[0] and "--data-root" in lines[0]
    assert not out.exists()  # nothing written


def test_refuses_a_non_empty_out_without_force(tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = runner.invoke(app, ["demo", "--quick", "--out", str(out)], env=ENV)
    assert result.exit_code == 1
    assert "not empty" in result.output and "--force" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    with pytest.raises(Exception, match="is a file"):
        plan_demo(DemoConfig(out=str(out / "notes.txt")))
    with pytest.raises(Exception, match=r"did not write \(notes.txt\)"):  # --force never deletes the user's files
        plan_demo(DemoConfig(out=str(out), force=True, quick=True))
    (out / "notes.txt").unlink()
    forced = plan_demo(DemoConfig(out=str(out), force=True, quick=True))
    train, extract, fit, compare = (s.command for s in forced.steps())
    assert "--force" in train and "--overwrite" in extract and "--force" in fit and "--force" not in compare


def test_default_out_is_a_fresh_folder(tmp_path: Path) -> None:
    assert default_out_dir("digits", tmp_path) == tmp_path / "laya-demo-digits"
    (tmp_path / "laya-demo-digits").mkdir()
    assert default_out_dir("digits", tmp_path) == tmp_path / "laya-demo-digits"  # empty: fine
    (tmp_path / "laya-demo-digits" / "x").write_text("")
    (tmp_path / "laya-demo-digits-2").mkdir()
    (tmp_path / "laya-demo-digits-2" / "x").write_text("")
    assert default_out_dir("digits", tmp_path) == tmp_path / "laya-demo-digits-3"


def test_epochs_sets_the_backbones_and_the_heads_limit_and_is_recorded(tmp_path: Path) -> None:
    plan = plan_demo(DemoConfig(quick=True, epochs=7, device="cpu", out=str(tmp_path / "o")))
    assert (plan.train.epochs, plan.fit.epochs) == (7, 7)
    assert (plan.budget.train_epochs, plan.budget.fit_epochs) == (7, 7)
    assert "backbone ≤ 7 epochs, heads ≤ 7 epochs" in plan.budget_line()
    assert [s.argv[s.argv.index("--epochs") + 1] for s in plan.steps()[::2]] == ["7", "7"]  # train, fit-head


@pytest.mark.slow
def test_the_demo_gives_its_own_epoch_advice(demo) -> None:  # noqa: ANN001
    """The epoch-limit warnings of train and fit-head advise a higher --lr, which the demo does not
    take: the demo says them with its own --epochs, and demo.json records the budget it ran on."""
    out, result, _ = demo
    backbone = json.loads((out / "backbone.metrics.json").read_text())
    # the premise: the quick backbone (10 epochs) was still improving when its limit ended it
    assert [w for w in backbone["warnings"] if w.startswith("epoch limit: seed 0 (best epoch")]
    flat = " ".join(result.output.split())
    assert "epoch limit: seed 0 (best epoch" in flat and "run the demo again with more --epochs (now 10)" in flat
    assert "train again with" not in flat and "fit again with more --epochs" not in flat
    record = json.loads((out / "demo.json").read_text())
    assert record["budget"]["train_epochs"] == 10 and record["config"]["epochs"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--dataset", "digts"], "did you mean 'digits'"),
        (["--data-root", "/tmp"], "does not apply to 'digits'"),
        (["--seeds", "0"], "--seeds must be ≥ 1"),
        (["--epochs", "0"], "--epochs must be ≥ 1"),
        (["--device", "tpu"], "--device must be one of"),
    ],
)
def test_bad_options_exit_1_with_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", *args, "--out", str(tmp_path / "o")], env=ENV)
    assert result.exit_code == 1, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_command_line_refuses_what_a_command_cannot_say() -> None:
    from laya_inspect.options import command_line
    from laya_inspect.training.fit_head import FitConfig
    from laya_inspect.training.joint import JointConfig

    assert command_line("train", JointConfig(data="digits", epochs=7), out=Path("b.pt")) == [
        "laya-inspect",
        "train",
        "--model",
        "zoo:mlp",
        "--data",
        "digits",
        "--head",
        "last",
        "--seed",
        "0",
        "--epochs",
        "7",
        "--device",
        "auto",
        "--out",
        "b.pt",
    ]
    line = command_line("train", JointConfig(init="torch", ln_eps=1e-5, loss="probs"), out=Path("b.pt"))
    assert line[line.index("--init") : line.index("--init") + 6] == [
        "--init",
        "torch",
        "--ln-eps",
        "1e-05",
        "--loss",
        "probs",
    ]
    with pytest.raises(ValueError, match="no option for model_kwargs"):
        command_line("train", JointConfig(model_kwargs={"hidden": [64]}), out=Path("b.pt"))
    with pytest.raises(ValueError, match="seeds 0 … N−1"):
        command_line("fit-head", FitConfig(seeds=(3, 4)), positional=[Path("f.h5")])


@pytest.mark.slow
def test_a_demo_stopped_half_way_says_so_and_which_steps_were_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA: `report` on a demo killed during its later steps printed every step as "(not run)" (the
    backbone and the cache were there) and nothing said the demo had not finished."""
    import laya_inspect.compare.run
    from laya_inspect.errors import InputError

    def stop(*args: Any, **kwargs: Any) -> None:
        raise InputError("stopped here by the test")

    monkeypatch.setattr(laya_inspect.compare.run, "compare_heads", stop)
    out = tmp_path / "out"
    result = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--out", str(out)], env=ENV)
    assert result.exit_code == 1 and "stopped here by the test" in result.output
    record = json.loads((out / "demo.json").read_text())
    assert record["complete"] is False
    assert [s["name"] for s in record["steps"] if s.get("seconds") is not None] == ["train", "extract", "fit-head"]
    rep = runner.invoke(app, ["report", str(out)], env=ENV)
    assert rep.exit_code == 0, rep.output
    assert "this demo did not finish" in rep.output
    assert "compare (not run)" in rep.output and "fit-head (not run)" not in rep.output


def _snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` and beside it, with the SHA-256 of each file (a folder as "/")."""
    import hashlib

    found = {p.name: "/" if p.is_dir() else "file" for p in folder.parent.iterdir() if p != folder}
    for p in sorted(folder.rglob("*")):
        found[p.relative_to(folder).as_posix()] = "/" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return found


@pytest.mark.slow
def test_a_forced_demo_stopped_half_way_leaves_the_previous_one_whole(
    demo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    """Round 1: `demo --force` over a finished demo deleted its cache, heads, comparison and page before
    writing the new ones, so a run that failed part-way lost both. The new demo is built beside the
    previous one and replaces it only once complete: a failed step leaves that one byte for byte."""
    import shutil

    import laya_inspect.training.fit_head
    from laya_inspect.errors import InputError

    out = tmp_path / "out"
    shutil.copytree(demo[0], out)
    before = _snapshot(out)

    def stop(*args: Any, **kwargs: Any) -> None:
        raise InputError("stopped here by the test")

    monkeypatch.setattr(laya_inspect.training.fit_head, "fit_heads", stop)
    result = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--out", str(out), "--force"], env=ENV)
    assert result.exit_code == 1 and "stopped here by the test" in result.output
    assert _snapshot(out) == before
    rep = runner.invoke(app, ["report", str(out)], env=ENV)
    assert rep.exit_code == 0 and "this demo did not finish" not in rep.output, rep.output


@pytest.mark.slow
def test_a_forced_demo_killed_at_any_step_leaves_the_previous_one_whole_and_reruns(demo, tmp_path: Path) -> None:
    """Round 1: `demo --force` killed part-way (Ctrl-C, SIGTERM, SIGKILL) left neither the previous demo
    nor a new one. Each signal at a step of a real subprocess leaves the previous demo byte for byte
    (SIGKILL its temporary folder beside it too), and the next `demo --force` clears that and finishes,
    with no file naming the temporary folder."""
    import os
    import shutil
    import signal
    import subprocess
    import sys

    out = tmp_path / "out"
    shutil.copytree(demo[0], out)
    before = _snapshot(out)
    env = {**os.environ, **ENV, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    argv = [sys.executable, "-m", "laya_inspect", "demo", "--quick", "--device", "cpu", "--force", "--out", str(out)]

    def at_a_terminal() -> None:  # a suite run in the background hands its children SIGINT ignored
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    for sig, step, code in ((signal.SIGINT, 2, 130), (signal.SIGTERM, 3, 143), (signal.SIGKILL, 4, -9)):
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=at_a_terminal
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(f"[{step}/4]"):
                proc.send_signal(sig)
                break
        said, err = proc.communicate(timeout=120)
        assert proc.returncode == code, err
        if sig != signal.SIGKILL:
            assert "was left as it was" in " ".join(err.split()), err
        left = _snapshot(out)
        if sig == signal.SIGKILL:  # the killed run's temporary folder and lock file, for the next run
            left = {k: v for k, v in left.items() if not re.fullmatch(rf"\.out\.(tmp-{proc.pid}|lock)", k)}
        assert left == before, sig

    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert json.loads((out / "demo.json").read_text())["complete"] is True
    assert _snapshot(out) != before
    named = [p for p in out.rglob("*") if p.is_file() and b".out.tmp-" in p.read_bytes()]
    assert named == []
    rep = subprocess.run([*argv[:3], "report", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0 and "changed since" not in rep.stdout + rep.stderr, rep.stdout + rep.stderr


def test_a_second_demo_on_the_same_out_is_refused_and_touches_nothing(tmp_path: Path) -> None:
    """Audit: the demo took no lock on its --out, so a second `demo --force` started while the first
    ran cleared the first's heads, comparison and page and replaced its backbone and cache under it
    (each step's own lock only refused it later, at fit-head)."""
    from laya_inspect.files import output_lock
    from laya_inspect.out_dir import MARKER, write_marker
    from laya_inspect.report.html import PAGE_MARK

    out = tmp_path / "d"
    out.mkdir()
    (out / "demo.json").write_text('{"kind": "laya-inspect-demo", "complete": true}')
    (out / "report.html").write_bytes(PAGE_MARK + b" the running demo's page")
    write_marker(out, "demo", files=["demo.json", "report.html"])
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with output_lock(out):  # the first demo, still running
        r = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--force", "--out", str(out)], env=ENV)
    assert r.exit_code == 1 and "another laya-inspect process" in r.output, r.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert (out / MARKER).exists()


def test_demo_force_keeps_a_demo_json_edited_by_hand_and_allows_a_retrained_backbone(demo, tmp_path: Path) -> None:
    """Audit: the demo's marker listed its files without digests, so `demo --force` replaced a demo.json
    edited by hand (the protection every other output's summary has). demo.json's digest is recorded
    now; the backbone stays replaceable, as the demo prints `train --force` for it to be rerun by hand."""
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(demo[0], out)
    plan_demo(DemoConfig(out=str(out), force=True, quick=True))  # as written: --force may replace it
    ckpt = torch.load(out / "backbone.pt", weights_only=True)
    first = next(iter(ckpt["state_dict"]))
    ckpt["state_dict"][first] = ckpt["state_dict"][first] + 1.0  # retrained, as `train --force` would
    torch.save(ckpt, out / "backbone.pt")
    plan_demo(DemoConfig(out=str(out), force=True, quick=True))
    record = json.loads((out / "demo.json").read_text())
    (out / "demo.json").write_text(json.dumps(record | {"my_note": "run on the lab machine"}))
    before = (out / "demo.json").read_bytes()
    with pytest.raises(Exception, match=r"demo.json \(changed since it was written\)"):
        plan_demo(DemoConfig(out=str(out), force=True, quick=True))
    r = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--force", "--out", str(out)], env=ENV)
    assert r.exit_code == 1 and "changed since it was written" in " ".join(r.output.split()), r.output
    assert (out / "demo.json").read_bytes() == before


def test_demo_force_never_removes_another_commands_output_where_its_steps_write(demo, tmp_path: Path) -> None:
    """Audit: `demo --force` removed any laya-inspect output standing at heads/ or compare/ with the
    previous demo's (a prune run put at compare/), which `compare --force --out DEMO/compare` itself
    refuses as "the output of `laya-inspect prune`, not of compare"."""
    import shutil

    from laya_inspect.out_dir import atomic_dir

    out = tmp_path / "copy"
    shutil.copytree(demo[0], out)
    shutil.rmtree(out / "compare")
    with atomic_dir(out / "compare", command="prune") as tmp:
        (tmp / "summary.json").write_text('{"my": "long prune run"}')
    before = sorted((p.relative_to(out).as_posix(), p.stat().st_mtime_ns) for p in out.rglob("*"))
    said = f"holds the output of `laya-inspect prune` in {out / 'compare'}, where the demo's compare step writes"
    with pytest.raises(Exception, match=re.escape(said)):
        plan_demo(DemoConfig(out=str(out), force=True, quick=True))
    r = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--force", "--out", str(out)], env=ENV)
    assert r.exit_code == 1 and said in " ".join(r.output.split()), r.output
    assert sorted((p.relative_to(out).as_posix(), p.stat().st_mtime_ns) for p in out.rglob("*")) == before


def test_demo_force_refuses_a_users_file_where_it_writes_before_clearing_anything(demo, tmp_path: Path) -> None:
    """Audit: with a user's file at backbone.pt (or features.h5), `demo --force` deleted the previous
    demo's cache, heads, comparison and page, then stopped at the train or extract step, which refuses
    to replace a file it did not write: neither the old output kept nor a new one. In a demo killed
    half-way (its marker lists its names ahead, without digests) a user's report.html was deleted and
    their demo.json overwritten. Each is refused before anything goes."""
    import shutil

    from laya_inspect.out_dir import write_marker

    out = tmp_path / "copy"
    shutil.copytree(demo[0], out)
    names = json.loads((out / ".laya-inspect.json").read_text())["files"]
    write_marker(out, "demo", files=names)  # as a demo killed half-way left it
    for name in ("features.h5", "backbone.pt", "report.html", "demo.json"):
        kept = out / name
        shutil.move(kept, tmp_path / name)
        kept.write_text("my own file")
        said = f"{kept} is not a"
        with pytest.raises(InputError, match=re.escape(said) + ".*`demo --force` replaces only what laya-inspect"):
            plan_demo(DemoConfig(out=str(out), force=True, quick=True))
        before = sorted((p.relative_to(out).as_posix(), p.stat().st_mtime_ns) for p in out.rglob("*"))
        if name == "backbone.pt":  # through the command line, too
            r = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--force", "--out", str(out)], env=ENV)
            assert r.exit_code == 1 and said in " ".join(r.output.split()), r.output
            assert sorted((p.relative_to(out).as_posix(), p.stat().st_mtime_ns) for p in out.rglob("*")) == before
        kept.unlink()
        shutil.move(tmp_path / name, kept)
    metrics = out / "backbone.metrics.json"  # train refuses a user's, as it does their backbone.pt
    metrics.write_text('{"my": "metrics"}')
    # said as the demo's own refusal: the user gave --out DIR, never "--out DIR/backbone.pt"
    said = f"{metrics} is not a metrics file laya-inspect train wrote; `demo --force` replaces only"
    with pytest.raises(InputError, match=re.escape(said)):
        plan_demo(DemoConfig(out=str(out), force=True, quick=True))
    shutil.copy(demo[0] / metrics.name, metrics)
    plan_demo(DemoConfig(out=str(out), force=True, quick=True))  # the demo's own files pass


def test_the_compare_step_shows_an_undefined_faithfulness_as_a_dash() -> None:
    """compare's terminal and report.html show an undefined score (NaN: every row's ranking tied) as "—";
    the demo's compare step printed "nan" for a method's ρ and for the constant rule's beside it."""
    from types import SimpleNamespace

    from laya_inspect.cli.demo import _step_line

    nan = float("nan")
    est = {"alpha": {"mean": nan, "ci_low": None}, "random": {"mean": -0.026, "ci_low": None}}
    seeds = {"laya": {"heads": ["laya-seed_0"], "faithfulness": est, "constant": {"mean": nan, "ci_low": None}}}
    said = _step_line(SimpleNamespace(name="compare", numbers={"faithfulness_seeds": seeds}))
    assert said == "faithfulness ρ on laya-seed_0: alpha — · random attribution -0.026 · constant rule —", said


def test_the_compare_step_keeps_the_constant_rule_when_its_rho_is_undefined_on_every_seed() -> None:
    """The constant rule's ρ undefined on each LAYA seed (NaN: every row's ranking tied) reaches the step
    line as a mean of None over the seeds: the line dropped "constant rule" altogether, where it shows a
    method's undefined ρ as "—" (and the CHANGELOG says the constant rule's reads "—" too)."""
    from types import SimpleNamespace

    from laya_inspect.cli.demo import _step_line
    from laya_inspect.demo import _over_seeds

    nan = float("nan")

    def head(seed: int, alpha: float) -> dict[str, Any]:
        return {
            "name": f"laya-seed_{seed}",
            "dir": f"d/heads/laya/seed_{seed}",
            "methods": {"alpha": {"faithfulness": {"mean": alpha}}},
            "references": {"constant": {"faithfulness": {"mean": nan}}},
        }

    seeds = _over_seeds({"heads": [head(0, 0.5), head(1, 0.7)]})
    said = _step_line(SimpleNamespace(name="compare", numbers={"faithfulness_seeds": seeds}))
    assert said.startswith("faithfulness ρ on laya-seed_0, seed_1 (mean over 2 seeds [95% t-interval]): alpha 0.600 [")
    assert said.splitlines()[0].endswith(" · constant rule —"), said  # then the note on alpha's cut interval


def test_the_compare_step_counts_the_seeds_each_mean_is_over() -> None:
    """A method whose ρ is undefined on one of the 3 LAYA seeds is the mean over the other 2; the line
    said "mean over 3 seeds" for every method alike. Now it gives that method's own count, and
    demo.json's `faithfulness_seeds` records it as `n`."""
    from types import SimpleNamespace

    from laya_inspect.cli.demo import _step_line
    from laya_inspect.demo import _over_seeds

    def head(seed: int, alpha: float) -> dict[str, Any]:
        return {
            "name": f"laya-seed_{seed}",
            "dir": f"d/heads/laya/seed_{seed}",
            "methods": {"alpha": {"faithfulness": {"mean": alpha}}, "ig": {"faithfulness": {"mean": 0.7}}},
            "references": {"constant": {"faithfulness": {"mean": 0.1 * seed}}},
        }

    seeds = _over_seeds({"heads": [head(0, 0.5), head(1, float("nan")), head(2, 0.7)]})
    assert seeds["laya"]["faithfulness"]["alpha"]["n"] == 2
    assert seeds["laya"]["faithfulness"]["ig"]["n"] == 3
    said = _step_line(SimpleNamespace(name="compare", numbers={"faithfulness_seeds": seeds}))
    assert "(mean over 3 seeds [95% t-interval])" in said, said
    alpha = said[said.index(": alpha ") :].split(" · ")[0]
    assert alpha.startswith(": alpha 0.600 [") and alpha.endswith("] (2 of 3 seeds)"), said
    ig = said[said.index(" · ig ") :].split(" · ")[1]
    assert ig.startswith("ig 0.700") and "of 3 seeds" not in ig, said


def test_the_compare_step_keeps_a_rho_interval_inside_minus_one_to_one_and_says_so() -> None:
    """A t-interval over 3 seeds of a faithfulness ρ reached past 1 ("0.600 [-0.021, 1.221]"), a value no
    Spearman ρ takes. demo.json's `faithfulness_seeds` now holds it cut to [−1, 1] (`clipped`, the t
    bounds as `t_low`, `t_high`) and the step line says so once, with the t bounds; an interval inside
    is left as it is."""
    from types import SimpleNamespace

    from laya_inspect.cli.demo import _step_line
    from laya_inspect.demo import _over_seeds

    def head(seed: int, alpha: float) -> dict[str, Any]:
        return {
            "name": f"laya-seed_{seed}",
            "dir": f"d/heads/laya/seed_{seed}",
            "methods": {"alpha": {"faithfulness": {"mean": alpha}}, "ig": {"faithfulness": {"mean": 0.7 + seed / 100}}},
            "references": {"constant": {"faithfulness": {"mean": 0.1 * seed}}},
        }

    seeds = _over_seeds({"heads": [head(0, 0.35), head(1, 0.6), head(2, 0.85)]})
    alpha = seeds["laya"]["faithfulness"]["alpha"]
    assert (alpha["ci_low"], alpha["ci_high"]) == (pytest.approx(-0.0211, abs=1e-4), 1.0) and alpha["clipped"]
    assert alpha["t_high"] == pytest.approx(1.2211, abs=1e-4) and alpha["t_low"] == alpha["ci_low"]
    assert "clipped" not in seeds["laya"]["faithfulness"]["ig"] and "clipped" not in seeds["laya"]["constant"]
    said = _step_line(SimpleNamespace(name="compare", numbers={"faithfulness_seeds": seeds}))
    assert "alpha 0.600 [-0.021, 1.000]" in said and "1.221" not in said.splitlines()[0], said
    (note,) = said.splitlines()[1:]
    assert "cut to [−1, 1]" in note and "alpha [-0.02, +1.22]" in note and "over 3 seeds" in note, note
    assert "ig [" not in note


def test_the_compare_step_reads_faithfulness_beside_top_1_only() -> None:
    """The compare step's line gave each method's ρ beside random's and the constant rule's but not top-1
    only's (a one-hot on the largest effect, docs/METHOD.md): on the digits demo top-1 only's 0.87 beat
    α's 0.76, unsaid. The line and demo.json's `faithfulness_seeds` now give it over the seeds."""
    from types import SimpleNamespace

    from laya_inspect.cli.demo import _step_line
    from laya_inspect.demo import _over_seeds

    def head(seed: int, alpha: float, top1: float) -> dict[str, Any]:
        return {
            "name": f"laya-seed_{seed}",
            "dir": f"d/heads/laya/seed_{seed}",
            "methods": {"alpha": {"faithfulness": {"mean": alpha}}},
            "references": {
                "constant": {"faithfulness": {"mean": 0.4}},
                "top1_only": {"faithfulness": {"mean": top1}},
            },
        }

    seeds = _over_seeds({"heads": [head(0, 0.7, 0.85), head(1, 0.8, 0.89)]})
    assert seeds["laya"]["top1_only"]["values"] == [0.85, 0.89]
    assert seeds["laya"]["top1_only"]["mean"] == pytest.approx(0.87)
    said = _step_line(SimpleNamespace(name="compare", numbers={"faithfulness_seeds": seeds}))
    assert " · top-1 only 0.870 [" in said and said.index("top-1 only") < said.index("constant rule"), said
    one = _over_seeds({"heads": [head(0, 0.7, 0.85)]})
    said = _step_line(SimpleNamespace(name="compare", numbers={"faithfulness_seeds": one}))
    assert said == "faithfulness ρ on laya-seed_0: alpha 0.700 · top-1 only 0.850 · constant rule 0.400", said


def test_the_fit_head_step_reads_the_accuracies_beside_the_probe_and_chance() -> None:
    """The fit-head step's line gave each head's mean test accuracy alone ("laya 0.975 · last 0.969 …"),
    with nothing to read it against: fit-head's gate reads it against the reference probe and chance,
    and the line now gives both."""
    from types import SimpleNamespace

    from laya_inspect.cli.demo import _step_line
    from laya_inspect.demo import _accuracy_nulls

    fit = {
        "heads": [{"head": "laya", "test_acc": {"mean": 0.975}}],
        "quality": {"chance": 0.1028, "probe": {"reference_layer": "blocks.2", "reference_test_acc": 0.975}},
    }
    nulls = _accuracy_nulls(fit)
    assert nulls == {"chance": 0.1028, "probe": {"layer": "blocks.2", "test_acc": 0.975}}
    said = _step_line(SimpleNamespace(name="fit-head", numbers={"test_acc": {"laya": 0.975}, **nulls}))
    assert said == "mean test accuracy: laya 0.975 · probe on blocks.2 0.975 · chance 0.103", said
    no_probe = _accuracy_nulls({"quality": {"chance": 0.5, "probe": None}})
    said = _step_line(SimpleNamespace(name="fit-head", numbers={"test_acc": {"laya": 0.9}, **no_probe}))
    assert said == "mean test accuracy: laya 0.900 · chance 0.500", said


@pytest.mark.slow
def test_a_kept_leftover_is_recorded_in_demo_json_and_said_on_its_page(demo, tmp_path: Path) -> None:  # noqa: ANN001
    """Attack: `mkdir .out.old-4194303; echo x > .out.old-4194303/mine.txt; demo --out out --force` kept
    the folder and said so on stderr only: demo.json had no warnings and the page did not name it."""
    import html
    import shutil

    out = tmp_path / "out"
    shutil.copytree(demo[0], out)
    assert json.loads((out / "demo.json").read_text())["warnings"] == []
    mine = tmp_path / ".out.old-4194303"  # a number a PID can be, no process has here
    mine.mkdir()
    (mine / "mine.txt").write_text("x")
    result = runner.invoke(app, ["demo", "--quick", "--device", "cpu", "--out", str(out), "--force"], env=ENV)
    assert result.exit_code == 0, result.output
    (said,) = json.loads((out / "demo.json").read_text())["warnings"]
    assert str(mine) in said and "left as it is" in said
    page = " ".join(html.unescape((out / "report.html").read_text(encoding="utf-8")).split())
    assert f"Warning: {said}" in page
    assert (mine / "mine.txt").read_text() == "x"
