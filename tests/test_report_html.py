"""report.html and `laya-inspect report`: the plain reading computed from the numbers, one
self-contained page per fit-head / compare / demo folder opened in headless Chromium (every figure
decoded and drawn, every table there, no console message, nothing fetched), the terminal summary of
either folder at 80 and 120 columns, and plots whose colours and scales mean one thing throughout."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app
from laya_inspect.compare import plots as P
from laya_inspect.compare.run import CompareConfig, compare_heads
from laya_inspect.errors import CacheError, InputError, NotFoundError
from laya_inspect.files import write_json
from laya_inspect.report import build_page, folder_kind, write_report_html
from laya_inspect.report.reading import compare_reading, fit_reading, num
from laya_inspect.training.fit_head import FitConfig, fit_heads

runner = CliRunner()
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)"
)


# -- the reading, from numbers written down here ---------------------------------------------------


def _scores(agree: float, rho: float, lo: float | None, hi: float | None, circular: str | None = None) -> dict:
    return {
        "top_layer_agreement": agree,
        "faithfulness": {"mean": rho, "ci_low": lo, "ci_high": hi, "n_valid": 10, "n_undefined": 0},
        "circular": circular,
    }


def _compare_summary(alpha: dict, ig: dict, caveats: list[str] | None = None, paired: dict | None = None) -> dict:
    """``paired``: α − IG in ρ over the same rows (None: a summary written before it was stored)."""
    if paired is not None:
        alpha = {**alpha, "vs_methods": {"ig": paired or None}}
    head = {
        "name": "laya",
        "kind": "laya",
        "n": 200,
        "ablations_run": ["mean"],
        "methods": {"alpha": alpha, "ig": ig, "random": _scores(0.3, 0.0, -0.1, 0.1)},
        "references": {"random": {"top_layer_agreement": 0.31}},
        "caveats": caveats or [],
        "lolo": {"most_relied_on": [{"layer": "blocks.2", "mean_effect": 0.25}]},
    }
    return {"ablation": "mean", "split": "test", "n": 200, "heads": [head]}


def _diff(mean: float, lo: float | None, hi: float | None) -> dict:
    return {"mean": mean, "ci_low": lo, "ci_high": hi}


def test_compare_reading_gives_the_rho_of_top_1_only_and_the_constant_rule_beside_the_leads() -> None:
    """The lead sentence read α's ρ against its strongest rival only: on the digits demo "faithfulness ρ
    0.76 vs 0.84", where a one-hot on the largest effect (top-1 only) scored 0.87 and the constant rule
    0.42. The sentence now gives both nulls beside the two methods' ρ."""
    s = _compare_summary(
        _scores(0.93, 0.76, 0.72, 0.78), _scores(0.94, 0.84, 0.81, 0.86), paired=_diff(-0.08, -0.12, -0.05)
    )
    s["heads"][0]["references"] |= {
        "top1_only": {"faithfulness": {"mean": 0.87}},
        "constant": {"top_layer_agreement": 0.49, "faithfulness": {"mean": 0.42}},
    }
    lead = compare_reading(s).lead[0]
    top = "top-1 only 0.87, above α's: naming the top layer alone orders the layers better"
    assert f"(faithfulness ρ 0.76 vs 0.84; {top}; the constant rule 0.42; paired difference" in lead, lead
    del s["heads"][0]["references"]["top1_only"]
    lead = compare_reading(s).lead[0]
    assert "(faithfulness ρ 0.76 vs 0.84; the constant rule 0.42; paired difference" in lead, lead


def test_compare_reading_orders_methods_by_their_paired_difference() -> None:
    """QA: the intervals of α's ρ (0.88) and IG's (0.90) overlapped and the page said "about as well
    as IG", though the paired difference over the same rows was −0.020 [−0.035, −0.008]."""
    worse = compare_reading(
        _compare_summary(
            _scores(0.96, 0.41, 0.35, 0.47), _scores(0.9, 0.62, 0.55, 0.69), paired=_diff(-0.21, -0.27, -0.15)
        )
    )
    assert worse.lead[:-1] == [  # then what it rests on: one fitted seed
        "α picks the same top layer as the leave-one-layer-out effects on 96% of inputs (laya, mean ablation, "
        "200 test inputs; the random reference: 31%); it orders the layers worse than IG (faithfulness ρ 0.41 vs 0.62; "
        "paired difference -0.21 [-0.27, -0.15])."
    ]
    assert "removing blocks.2 changes the prediction most (mean drop of p +0.250)" in " ".join(worse.details)
    overlapping = (_scores(0.9, 0.88, 0.85, 0.91), _scores(0.9, 0.90, 0.87, 0.93))
    qa = compare_reading(_compare_summary(*overlapping, paired=_diff(-0.020, -0.035, -0.0075)))
    assert "worse than IG" in qa.lead[0] and "paired difference -0.02 [-0.04, -0.01]" in qa.lead[0]
    better = compare_reading(_compare_summary(*overlapping[::-1], paired=_diff(0.02, 0.0075, 0.035)))
    assert "orders the layers better than IG" in better.lead[0]
    tied = compare_reading(_compare_summary(*overlapping, paired=_diff(-0.02, -0.05, 0.01)))
    assert "not shown to order the layers better or worse than IG" in tied.lead[0]
    no_ci = compare_reading(_compare_summary(*overlapping, paired=_diff(-0.02, None, None)))
    assert "not tested against IG" in no_ci.lead[0] and "--bootstrap" in no_ci.lead[0]
    old = compare_reading(_compare_summary(*overlapping))
    assert "not tested against IG" in old.lead[0] and "rerun compare" in old.lead[0]
    caveat = compare_reading(
        _compare_summary(_scores(0.9, 0.6, 0.5, 0.7), _scores(0.9, 0.62, 0.52, 0.72), ["effects are ≈ 0"])
    )
    assert caveat.lead[1] == "No method is ranked on this ablation: effects are ≈ 0"
    circular = compare_reading(
        _compare_summary(_scores(0.9, 0.6, 0.5, 0.7, "α is what drop removes"), _scores(0.9, 0.5, 0.4, 0.6))
    )
    assert "cannot validate α: α is what drop removes (circular)" in circular.lead[1]


def test_a_share_reads_the_same_as_a_percentage_and_as_a_decimal() -> None:
    """QA: the demo's page said α "picks the same top layer … on 92% of inputs" where its table showed
    0.93: 333 of 360 rows is 0.925, and format's "%" rounds 92.5 half to even. Every share k/n of a
    few hundred rows now reads as the tables' two decimals do."""
    from laya_inspect.training.stats import chance_text, percent

    for n in (40, 200, 360, 450):
        for k in range(n + 1):
            v = k / n
            assert percent(v) == f"{int(num(v).replace('.', ''))}%", (k, n)
            assert percent(v, 1) == f"{float(num(v, 3)) * 100:.1f}%", (k, n)
    assert percent(0.925) == "93%" and percent(0.125) == "12%" and percent(None) == "—" and percent(-0.001) == "0%"
    assert percent(-0.02, sign=True) == "-2%" and percent(0.005, sign=True) == "+1%"
    # a value that is no share (NaN of any float type, ±inf) reads "—", not "NaN%" or "Infinity%"
    assert percent(np.float32("nan")) == percent(float("inf")) == percent(np.float64("-inf")) == "—"
    qa = compare_reading(_compare_summary(_scores(0.925, 0.41, 0.35, 0.47), _scores(0.9, 0.62, 0.55, 0.69)))
    assert "on 93% of inputs" in qa.lead[0]
    assert chance_text({"top_layer_chance": 0.335, "top_layer_chance_shares": 0.665}) == (
        "chance 67% at each seed's own top-layer shares, 34% at uniform picks"
    )


def test_the_demo_page_leads_with_each_steps_headline_and_keeps_the_warnings_below() -> None:
    """compare's reading leads with its warnings (what fit-head said of a head): the demo page took
    that warning for compare's headline and dropped the sentence on α into the details."""
    from laya_inspect.report.reading import demo_reading

    summary = _compare_summary(_scores(0.96, 0.41, 0.35, 0.47), _scores(0.9, 0.62, 0.55, 0.69))
    summary["cache"] = {"warnings": ["fit-head said of laya (h/summary.json): near chance"]}
    page = demo_reading(None, summary)
    assert page.lead == [line for line in page.lead if not line.startswith("Warning:")]
    assert page.lead[0].startswith("α picks the same top layer")
    assert page.details[0] == "Warning: fit-head said of laya (h/summary.json): near chance."
    # as compare writes it now, what is said of a head in its own list: the same page
    said_apart = {**summary, "cache": {"warnings": []}, "head_warnings": summary["cache"]["warnings"]}
    assert demo_reading(None, said_apart) == page


def test_a_verdict_read_from_one_seed_is_followed_by_its_caveat_in_the_reading_itself() -> None:
    """QA: on compare's and the demo's page "These sentences read one fitted seed … a verdict that
    changes with the seed … is not a verdict" sat in the list under the reading box, so the box's
    first words were one seed's verdict alone. It now follows the verdict sentences in the box."""
    from laya_inspect.report.reading import demo_reading

    summary = _compare_summary(_scores(0.96, 0.41, 0.35, 0.47), _scores(0.9, 0.62, 0.55, 0.69))
    # the demo's names them: fit-head's headline, over every seed, may stand above them
    for reading, what in ((compare_reading(summary), "These sentences"), (demo_reading(None, summary), "The compare")):
        assert reading.lead[0].startswith("α picks the same top layer")
        assert reading.lead[-1].startswith(what)
        assert "read one fitted seed of laya: a verdict that changes" in reading.lead[-1]
        assert not any("one fitted seed" in line for line in reading.details)


def test_the_heads_table_names_the_seeds_fitted_so_seed_0_does_not_read_as_none() -> None:
    """QA: fit-head's Heads table had a "seeds" column of seed numbers; a one-seed run showed "0",
    read as zero seeds fitted."""
    from laya_inspect.report.sections import fit_sections

    acc = {"n": 1, "mean": 0.9, "ci_low": None, "ci_high": None, "values": [0.9]}
    heads = [{"head": "laya", "n": 1, "seeds": [0], "test_acc": acc}, {"head": "last", "n": 3, "test_acc": acc}]
    heads[1]["seeds"] = [0, 1, 2]
    table = fit_sections({"heads": heads}, [])[0].tables[0]
    column = table.columns.index("seeds fitted")
    assert [row[column] for row in table.rows] == ["seed 0", "seeds 0 to 2"]


def test_the_demo_page_states_its_settings_under_the_title(tmp_path: Path) -> None:
    """QA: compare's, fit-head's and prune's pages say which settings were given and which were left
    at their defaults under the title; the demo's page said neither."""
    from laya_inspect.demo import DemoConfig, _record, plan_demo

    out = tmp_path / "demo"
    plan = plan_demo(DemoConfig(quick=True, device="cpu", out=str(out)))
    out.mkdir()
    write_json(out / "demo.json", _record(plan, [], {}, {}, complete=False))
    said = " ".join(html.unescape(build_page(out)).split())
    assert (
        "settings given: budget --quick · device cpu; left at their defaults: dataset digits · "
        "heads fitted with seed 0 · seed 0 (backbone and compare)" in said
    )


def test_fit_reading_keeps_intervals_inside_0_1_and_says_what_alpha_weighs() -> None:
    acc = {"n": 3, "mean": 0.98, "ci_low": 0.95, "ci_high": 1.02, "values": [0.97, 0.98, 0.99]}
    delta = {"n": 3, "mean": 0.03, "ci_low": 0.01, "ci_high": 0.05}
    summary = {
        "heads": [
            {
                "head": "laya",
                "n": 3,
                "test_acc": acc,
                "delta_vs_last": {"test_acc": delta},
                "seed_agreement": {"seeds": 3, "top_layer_agreement": 0.8, "top_layer_chance": 1 / 3},
                "layer_weights": {"layers": ["a", "b", "c"], "pooled": [0.1, 0.2, 0.7]},
            },
            {"head": "last", "n": 3, "test_acc": {**acc, "mean": 0.95, "ci_low": -0.01, "ci_high": 0.99}},
        ]
    }
    r = fit_reading(summary)
    assert r.lead == [
        "LAYA reaches a test accuracy of 0.980 over 3 seeds (95% interval [0.950, 1.000], cut to [0, 1] from "
        "[0.950, 1.020]), +0.030 [+0.010, +0.050] "
        "against the last-layer head (the interval excludes 0).",
        "α puts the most weight on c (0.70 on average over test inputs, uniform 0.33); the seeds pick the same top "
        "layer on 80% of "
        "inputs (chance 33% at uniform picks).",
    ]
    assert r.details == ["last: test accuracy 0.950 [0.000, 0.990], cut to [0, 1] from [-0.010, 0.990] over 3 seeds."]
    # beside the constant rule: each seed's mean profile for every input
    summary["heads"][0]["seed_agreement"]["top_layer_agreement_constant"] = 1.0
    assert (
        fit_reading(summary)
        .lead[1]
        .endswith("80% of inputs (chance 33% at uniform picks; each seed's mean profile for every input: 100%).")
    )
    assert num(-0.0004, 3) == "0.000" and num(-0.0004, 3, sign=True) == "-0.000" and num(None) == "—"


def test_fit_reading_marks_every_gap_whose_interval_spans_0_alike() -> None:
    """fit-head's headline said "no difference shown" of a gap to the last-layer head whose interval
    spans 0, but printed the gap to the probe, as null, bare: every gap of the headline is marked alike."""
    acc = {"n": 3, "mean": 0.975, "ci_low": 0.965, "ci_high": 0.985, "values": [0.97, 0.975, 0.98]}
    delta = {"n": 3, "mean": 0.004, "ci_low": -0.006, "ci_high": 0.014, "values": [0.0, 0.004, 0.008]}
    probe = {"layer": "blocks.2", "test_acc": 0.972}
    head = {"head": "laya", "n": 3, "test_acc": acc, "delta_vs_last": {"test_acc": delta}, "probe_reference": probe}
    first = fit_reading({"heads": [head], "quality": {"chance": 0.103}}).lead[0]
    null = "the interval includes 0: no difference shown"
    assert f"against the last-layer head ({null})" in first, first
    one = "the probe is one fit; the interval covers the head's seeds only"
    assert f"against the single-layer probe on blocks.2 (0.972; {null}; {one})" in first, first
    assert "against chance (0.103, the majority class; the interval excludes 0)" in first, first
    # a probe gap the same on every seed has no spread to read: said so, as the gap to 'last' is
    head["test_acc"] = {**acc, "ci_low": 0.975, "ci_high": 0.975, "values": [0.975] * 3}
    first = fit_reading({"heads": [head]}).lead[0]
    assert "(0.972; the same on each of the 3 seeds: no spread to draw an interval from, so no verdict)" in first


def test_fit_reading_names_each_seeds_peak_when_the_seeds_peak_apart() -> None:
    """The pooled peak was read as α's when the seeds' mean α peaked on different layers (the demo's
    digits: blocks.2 on seed 0, blocks.0 on seeds 1 and 2); it now names each seed's peak."""
    acc = {"n": 3, "mean": 0.9, "ci_low": 0.85, "ci_high": 0.95}
    per_seed = {"0": [0.2, 0.3, 0.5], "1": [0.6, 0.3, 0.1], "2": [0.55, 0.4, 0.05]}
    pooled = [sum(r[i] for r in per_seed.values()) / 3 for i in range(3)]
    lw = {"layers": ["a", "b", "c"], "pooled": pooled, "per_seed": per_seed}
    summary = {"heads": [{"head": "laya", "n": 3, "test_acc": acc, "layer_weights": lw}]}
    said = "α puts the most weight on a different layer by seed: c (seed 0), a (seeds 1, 2)."
    assert fit_reading(summary).lead[1] == said
    # a folder whose summary has no weights: read from profiles.json, seed by seed alike
    summary["heads"][0]["layer_weights"] = {}
    alpha = {"laya": {"seeds": [0, 1, 2], "mean": pooled, "seed_means": list(per_seed.values())}}
    assert fit_reading(summary, {"layer_names": ["a", "b", "c"], "alpha": alpha}).lead[1] == said
    # seeds that agree keep the pooled peak and its weight
    lw["per_seed"] = {"0": [0.1, 0.2, 0.7], "1": [0.2, 0.1, 0.7]}
    summary["heads"][0]["layer_weights"] = {**lw, "pooled": [0.15, 0.15, 0.7]}
    assert (
        fit_reading(summary).lead[1] == "α puts the most weight on c (0.70 on average over test inputs, uniform 0.33)."
    )


def test_fit_reading_puts_the_uniform_weight_beside_alphas_peak() -> None:
    """α's largest mean weight is read against 1/L, the weight an α with no preference gives each layer:
    0.40 on one of four layers is 0.15 above uniform, on one of two it is below."""
    acc = {"n": 1, "mean": 0.9, "ci_low": None, "ci_high": None, "values": [0.9]}
    for layers, pooled, uniform in (
        (["a", "b", "c", "d"], [0.2, 0.4, 0.2, 0.2], "0.25"),
        (["a", "b"], [0.4, 0.6], "0.50"),
    ):
        head = {"head": "laya", "n": 1, "test_acc": acc, "layer_weights": {"layers": layers, "pooled": pooled}}
        second = fit_reading({"heads": [head]}).lead[-1]
        top = layers[pooled.index(max(pooled))]
        assert (
            second
            == f"α puts the most weight on {top} ({max(pooled):.2f} on average over test inputs, uniform {uniform})."
        ), second


# -- folders that are not reports --------------------------------------------------------------------


def test_folder_kind_refuses_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no folder .*nope, so no summary.json or demo.json"):
        folder_kind(tmp_path / "nope")
    with pytest.raises(NotFoundError, match="no summary.json or demo.json in"):
        folder_kind(tmp_path)
    write_json(tmp_path / "summary.json", {"kind": "laya-inspect-prune", "heads": []})
    with pytest.raises(CacheError, match="neither a fit-head nor a compare summary \\(kind 'laya-inspect-prune'\\)"):
        folder_kind(tmp_path)
    write_json(tmp_path / "summary.json", {"heads": [{"head": "laya", "test_acc": "high"}]})
    with pytest.raises(CacheError, match="heads\\[0\\] lacks its name or test accuracy"):
        build_page(tmp_path)
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 1 and "heads[0] lacks" in result.output and "Traceback" not in result.output


def test_a_check_planted_folder_names_the_folders_report_reads_inside_it(tmp_path: Path) -> None:
    """QA: `report P` on a `check planted --seeds 2` folder said only "neither a fit-head nor a compare
    summary", though P/seed_0/heads and P/seed_0/compare, which report reads, lie inside it."""
    write_json(tmp_path / "summary.json", {"kind": "laya-inspect-check-planted"})
    for seed in (0, 1):
        for part in ("heads", "compare"):
            write_json(tmp_path / f"seed_{seed}" / part / "summary.json", {"kind": "x"})
    with pytest.raises(CacheError) as caught:
        folder_kind(tmp_path)
    said = str(caught.value)
    assert "kind 'laya-inspect-check-planted'" in said
    assert all(str(tmp_path / f"seed_{s}" / p) in said for s in (0, 1) for p in ("heads", "compare")), said


def test_report_names_every_kind_of_folder_it_reads(tmp_path: Path) -> None:
    """`report --help` and report's refusals name every command whose folder report reads (prune's,
    early-exit's and diagnose's too), so a user is not sent away from a folder it would read."""
    from laya_inspect.report.beyond import BEYOND_KINDS

    kinds = ("fit-head", "compare", "demo", *BEYOND_KINDS)
    helped = " ".join(runner.invoke(app, ["report", "--help"], env={"COLUMNS": "300"}).output.split())
    refused = runner.invoke(app, ["report", str(tmp_path)]).output
    for text in (helped, refused):
        assert all(re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", text) for k in kinds), text


def test_each_commands_line_in_the_command_list_is_one_line() -> None:
    """QA: `laya-inspect --help` listed report as "… diagnose folder; --html rebuilds" with "its
    report.html." on a line of its own (diagnose likewise): a line break of a docstring's first
    paragraph is kept in the list, however wide the terminal."""
    listed = runner.invoke(app, ["--help"], env={"COLUMNS": "300"}).output
    line = next(line for line in listed.splitlines() if re.search(r"\breport\s+Reprint", line))
    assert "--html rebuilds its report.html." in line, listed
    assert not [line for line in listed.splitlines() if re.match(r"│ {6,}\S", line)], listed


# -- plots that mean one thing -----------------------------------------------------------------------


def test_plot_styles_are_fixed_per_method_and_distinct() -> None:
    colors = [s["color"] for s in P.METHOD_STYLES.values()]
    assert len(set(colors)) == len(colors)
    assert P.LOLO_COLOR not in colors and P.REFERENCE_STYLES["random"]["color"] not in colors
    assert P.method_style("new-method") == P.method_style("new-method")  # derived, the same every time
    assert len({(s["marker"], str(s["ls"])) for s in P.METHOD_STYLES.values()}) == len(colors)
    # drawn in this order, each inside the one before: lines that coincide all stay visible
    drawn = [P.line_kw(P.method_style(m)) for m in ("alpha", "ig", "gradcam", "random")]
    assert all(a["lw"] > b["lw"] and a["ms"] >= b["ms"] for a, b in zip(drawn, drawn[1:]))
    long = "a title much longer than the figure is wide, " * 4
    assert max(len(line) for line in P.wrap(long, 4.0, 12).splitlines()) <= int(4.0 * 72 / (12 * 0.6))


# -- real runs: fit-head and compare folders ---------------------------------------------------------


@pytest.fixture(scope="module")
def runs(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    config = FitConfig(heads=("laya", "last", "scalarmix"), seeds=(0, 1), epochs=3, lr=1e-2, batch_size=32, probe=False)
    with FeatureStore(digits_cache) as store:
        fit_heads(store, config, out_dir=root / "heads")
        seed0 = [root / "heads" / h / "seed_0" for h in ("laya", "scalarmix")]
        cmp = compare_heads(
            seed0, store, CompareConfig(ablation="mean,zero", limit=60, n_boot=50, n_steps=8), out_dir=root / "compare"
        )
        compare_heads(
            seed0[:1],
            store,
            CompareConfig(methods=("alpha", "ig"), limit=40, n_boot=0, plots=False),
            out_dir=root / "bare",
        )
    write_report_html(root / "heads")  # fit-head does not write its page itself yet
    return {"root": root, "heads": root / "heads", "compare": root / "compare", "bare": root / "bare", "cmp": cmp}


def _probe(page: Path, tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    """Open ``page`` in headless Chromium twice: as it is (its console must stay silent: a blocked
    fetch or a broken image would speak there), and as a copy with a script that measures every
    image, svg and table once the page has loaded and writes the numbers into the DOM."""
    flags = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0"]
    flags += ["--virtual-time-budget=10000", "--dump-dom"]
    plain = subprocess.run([*flags, page.as_uri()], capture_output=True, text=True, timeout=120)
    console = [line for line in plain.stderr.splitlines() if ":CONSOLE" in line]
    script = """<script>window.addEventListener("load", () => {
      const box = e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; };
      const out = {
        images: [...document.images].map(i => ({alt: i.alt, ok: i.complete, natural: [i.naturalWidth, i.naturalHeight],
                                               shown: box(i), src: i.getAttribute("src").slice(0, 22)})),
        svgs: [...document.querySelectorAll("svg")].map(box),
        tables: [...document.querySelectorAll("table")].map(t => ({id: t.id, rows: t.tBodies[0].rows.length,
                                                                  shown: box(t)})),
        reading: document.getElementById("reading").innerText,
        links: [...document.querySelectorAll("[href],[src]")].map(e => e.getAttribute("href") || e.getAttribute("src"))
                 .filter(u => !u.startsWith("data:")),
      };
      const pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    });</script>"""
    text = page.read_text(encoding="utf-8")
    assert "default-src 'none'" in text  # the page forbids every fetch; the probe copy allows its one script
    probe = text.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';", 1)
    copy = tmp_path / f"probe-{page.parent.name}.html"
    copy.write_text(probe.replace("</body>", script + "</body>"), encoding="utf-8")
    measured = subprocess.run([*flags, copy.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="probe">(.*?)</pre>', measured.stdout, re.S)
    assert found, measured.stdout[-2000:] + measured.stderr[-2000:]
    return json.loads(html.unescape(found.group(1))), console


def _check_rendered(result: dict[str, Any], n_figures: int, tables: set[str]) -> None:
    assert len(result["images"]) == n_figures
    for img in result["images"]:
        assert img["ok"] and min(img["natural"]) > 0 and min(img["shown"]) > 0, img  # decoded and drawn
        assert img["src"].startswith("data:image/"), img
    assert tables <= {t["id"] for t in result["tables"]}
    assert all(t["rows"] > 0 and min(t["shown"]) > 0 for t in result["tables"])
    assert result["links"] == []  # nothing the page would fetch


def _widths(page: Path, width: int, tmp_path: Path) -> dict[str, Any]:
    """Open ``page`` in headless Chromium ``width`` pixels wide: how wide the page lays out (a page
    wider than the window scrolls sideways: its right edge is off screen), and where each table's
    caption and box end."""
    script = """<script>window.addEventListener("load", () => {
      const right = e => Math.round(e.getBoundingClientRect().right);
      const out = {view: document.documentElement.clientWidth, page: document.documentElement.scrollWidth,
                   captions: [...document.querySelectorAll("caption, p.caption")].map(right),
                   boxes: [...document.querySelectorAll("table")].map(t => right(t.parentElement)),
                   figures: [...document.querySelectorAll("figure img")].map(
                     i => ({shown: Math.round(i.getBoundingClientRect().width), box: right(i.parentElement)}))};
      const pre = document.createElement("pre"); pre.id = "widths"; pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    });</script>"""
    text = page.read_text(encoding="utf-8").replace(
        "default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';", 1
    )
    copy = tmp_path / f"widths-{width}-{page.parent.name}.html"
    copy.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    flags = [CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", f"--window-size={width},2000"]
    run = subprocess.run(
        [*flags, "--virtual-time-budget=10000", "--dump-dom", copy.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r'<pre id="widths">(.*?)</pre>', run.stdout, re.S)
    assert found, run.stdout[-2000:] + run.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def _wide_page() -> str:
    from laya_inspect.report.html import Cell, Page, Section, Table, render
    from laya_inspect.report.reading import Reading

    columns = ["method", *[f"score number {i} of a long heading" for i in range(8)], "verdict"]
    rows: list[list[Cell | str]] = [
        [
            m,
            *[f"+0.{i}4 [+0.{i}1, +0.{i}7]" for i in range(8)],
            Cell("beats the constant rule (on every score)", "best text"),
        ]
        for m in ("alpha", "ig", "gradcam")
    ]
    caption = "method − constant rule, paired over the same rows; " * 6
    table = Table("wide", columns, rows, caption)
    return render(Page("t", "sub", Reading(["lead"]), [Section("Wide", [table])], [], [], []))


@needs_chromium
@pytest.mark.parametrize("width", [420, 1280])
def test_a_table_wider_than_the_screen_scrolls_in_its_box_and_the_page_does_not(tmp_path: Path, width: int) -> None:
    """QA: at 420 px every table of the demo's page ran off the right edge, its caption cut mid-word,
    and the whole page scrolled sideways (1,476 px of a 485 px window); at 1280 px compare's
    constant-rule table (its verdicts on one line) and the LOLO table did (1,516 px). A table now
    scrolls in its own box, its caption above it wraps at the page's width."""
    page = tmp_path / "wide" / "report.html"
    page.parent.mkdir()
    page.write_text(_wide_page(), encoding="utf-8")
    got = _widths(page, width, tmp_path)
    assert got["page"] <= got["view"], got
    assert got["captions"] and max(got["captions"] + got["boxes"]) <= got["view"], got


@needs_chromium
def test_a_figure_keeps_its_size_on_a_phone_and_scrolls_in_its_box(tmp_path: Path) -> None:
    """QA: at 420 px every figure shrank to the screen (≈ 390 px) and its labels could not be read. On a
    narrow screen a figure now keeps its own size in a box that scrolls, and the page does not; on a
    wide one it still fits the page."""
    import matplotlib.pyplot as plt

    from laya_inspect.report.figures import Figure, svg_figure
    from laya_inspect.report.html import Page, render
    from laya_inspect.report.reading import Reading

    fig, ax = plt.subplots(figsize=(8, 3))
    ax.plot([0, 1, 2], [0.2, 0.5, 0.4])
    drawn = svg_figure(fig, "a drawn figure", "drawn")
    plt.close(fig)
    png = tmp_path / "plot.png"
    fig, ax = plt.subplots(figsize=(8, 3))
    fig.savefig(png, dpi=100)  # 800 px wide
    plt.close(fig)
    from laya_inspect.report.figures import png_figure

    figures: list[Figure] = [drawn, png_figure(png)]
    page = tmp_path / "figs" / "report.html"
    page.parent.mkdir()
    page.write_text(render(Page("t", "sub", Reading(["lead"]), [], [("plots", figures)], [], [])), encoding="utf-8")
    narrow = _widths(page, 420, tmp_path)
    assert narrow["page"] <= narrow["view"], narrow
    shown = [f["shown"] for f in narrow["figures"]]  # its own width and its 1 px border each side
    assert shown == [drawn.width_px + 2, 802] and min(shown) > narrow["view"], narrow
    assert all(f["box"] <= narrow["view"] for f in narrow["figures"]), narrow
    wide = _widths(page, 1280, tmp_path)
    assert wide["page"] <= wide["view"] and all(f["shown"] <= wide["view"] for f in wide["figures"]), wide


def test_a_column_of_words_is_aligned_left_with_its_heading() -> None:
    """QA: the verdict column of compare's constant-rule table and the gate column of fit-head's were
    set right like numbers, their heading at the far right of a column of left-set words."""
    text = _wide_page()
    head = re.search(r"<thead>(.*?)</thead>", text).group(1)
    assert re.findall(r"<th( class=\"text\")?>", head) == [' class="text"', *[""] * 8, ' class="text"']
    assert '<td class="best text">beats the constant rule' in text


@pytest.mark.slow
@needs_chromium
def test_compare_page_renders_in_chromium(runs: dict[str, Any], tmp_path: Path) -> None:
    page = runs["compare"] / "report.html"
    assert page in runs["cmp"].files  # compare_heads writes it with the rest of the folder
    result, console = _probe(page, tmp_path)
    assert console == []
    pngs = sorted((runs["compare"] / "plots").glob("*.png"))
    assert pngs and not list((runs["compare"] / "plots").glob("*.svg"))  # SVG only on request
    heads = ("laya-seed-0", "scalarmix-seed-0")
    tables = {"lolo-effects", *(f"{k}-{h}" for h in heads for k in ("scores", "ablations"))}
    _check_rendered(result, len(pngs), tables)
    assert "α picks the same top layer as the leave-one-layer-out effects" in result["reading"]
    for width in (420, 1280):  # no table, caption or line runs off the screen
        got = _widths(page, width, tmp_path)
        assert got["page"] <= got["view"] and max(got["captions"] + got["boxes"]) <= got["view"], (width, got)
    text = page.read_text(encoding="utf-8")
    for fact in ("cache fingerprint", "weights sha256", "laya-inspect compare ", "--ablation mean,zero", "torch "):
        assert fact in text


@pytest.mark.slow
@needs_chromium
def test_fit_page_and_bare_compare_page_render_in_chromium(runs: dict[str, Any], tmp_path: Path) -> None:
    result, console = _probe(runs["heads"] / "report.html", tmp_path)
    assert console == []
    pngs = list((runs["heads"] / "profiles").glob("*.png"))
    _check_rendered(result, 1 + len(pngs), {"fit-heads", "fit-runs", "fit-weights"})  # + the accuracy figure
    assert result["reading"].startswith("LAYA reaches a test accuracy of")
    # written with --no-plots, the page has no figures; rebuilt, it draws those summary.json allows, as SVG
    assert "No figures" in (runs["bare"] / "report.html").read_text(encoding="utf-8")
    result, console = _probe(write_report_html(runs["bare"]), tmp_path)
    assert console == [] and result["images"]
    assert all(i["src"].startswith("data:image/svg+xml") for i in result["images"])
    _check_rendered(result, len(result["images"]), {"scores-laya-seed-0", "lolo-effects"})


@pytest.mark.slow
@needs_chromium
def test_demo_page_renders_in_chromium(runs: dict[str, Any], tmp_path: Path) -> None:
    from laya_inspect.demo import DemoConfig, _record, plan_demo

    out = tmp_path / "demo"
    plan = plan_demo(DemoConfig(quick=True, device="cpu", out=str(out)))
    out.mkdir()
    write_json(out / "demo.json", _record(plan, [], {}, {}, complete=False))
    shutil.copytree(runs["heads"], out / "heads")
    shutil.copytree(runs["compare"], out / "compare")
    page = write_report_html(out)
    result, console = _probe(page, tmp_path)
    assert console == []
    n = len(list((out / "heads" / "profiles").glob("*.png"))) + len(list((out / "compare" / "plots").glob("*.png")))
    _check_rendered(result, 1 + n, {"demo-steps", "fit-heads", "lolo-effects"})
    text = page.read_text(encoding="utf-8")
    assert all(html.escape(s.command, quote=True) in text for s in plan.steps())  # every step's exact command


@pytest.mark.slow
def test_report_command_reads_either_folder_and_rebuilds_the_page(runs: dict[str, Any]) -> None:
    for width in ("80", "120"):
        result = runner.invoke(app, ["report", str(runs["heads"])], env={"COLUMNS": width})
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert all(len(line) <= int(width) for line in lines)
        rows = [line.split()[0] for line in lines if line.split()[:1] and line.split()[0] in ("laya", "last")]
        assert rows[:2] == ["laya", "last"] and "head" in result.output and "seeds" in result.output
        assert "…" not in result.output  # nothing abbreviated away
        assert not re.search(r"-0\.000\b", result.output) and "1.02" not in result.output
    result = runner.invoke(app, ["report", str(runs["compare"])], env={"COLUMNS": "120"})
    assert result.exit_code == 0 and "the prediction most (mean drop" in result.output
    page = runs["compare"] / "report.html"
    before = page.read_text(encoding="utf-8")
    page.unlink()
    result = runner.invoke(app, ["report", str(runs["compare"]), "--html"], env={"COLUMNS": "120"})
    assert result.exit_code == 0 and page.is_file()
    assert page.read_text(encoding="utf-8") == before  # the page compare wrote, rebuilt from the folder


def test_a_page_rebuilt_by_report_html_stays_forces_to_replace(runs: dict[str, Any], monkeypatch) -> None:
    """The marker records report.html's digest (so --force keeps a page edited by hand): a page
    `report --html` rebuilds, here naming the folder by another path, has its digest recorded again."""
    from laya_inspect.out_dir import foreign_files

    folder = runs["compare"]
    page = folder / "report.html"
    before = page.read_bytes()
    monkeypatch.chdir(folder.parent)
    result = runner.invoke(app, ["report", folder.name, "--html"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert page.read_bytes() != before and foreign_files(folder) == []


def test_report_html_rebuilds_the_page_when_the_reader_of_its_output_leaves_early(runs: dict[str, Any]) -> None:
    """QA: `laya-inspect report DIR --html | head -c 0` ended quietly with exit 1 at its first printed
    line, before the page was written: the page was not rebuilt and nothing said so. It is written first."""
    import os
    import subprocess
    import sys

    page = runs["heads"] / "report.html"
    before = page.read_bytes()
    page.unlink()
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.Popen(
        [sys.executable, "-m", "laya_inspect", "report", str(runs["heads"]), "--html"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    run.stdout.close()  # the reader leaves before the first line
    err = run.stderr.read()
    run.wait()
    assert b"Traceback" not in err and b"error" not in err, err
    assert page.read_bytes() == before


@pytest.mark.slow
def test_compare_heatmaps_share_one_scale_and_titles_fit(runs: dict[str, Any]) -> None:
    from laya_inspect.compare.records import load_summary

    summary = load_summary(runs["compare"])
    figs = [P.summary_figures(summary, h) for h in summary["heads"]]
    limits = {fig["lolo_by_class"].axes[0].images[0].get_clim() for fig in figs}
    assert len(limits) == 1  # the same colour scale for every head's LOLO heatmap
    span = max(np.nanmax(np.abs(np.array(h["per_class"]["mean_effect"], dtype=float))) for h in summary["heads"])
    assert limits.pop() == pytest.approx((-span, span))
    assert {f["weights_by_class"].axes[0].images[0].get_clim() for f in figs if "weights_by_class" in f} == {(0, 1)}
    for fig in (f for d in figs for f in d.values()):
        P.solve_layout(fig)
        renderer = FigureCanvasAgg(fig).get_renderer()
        whole = fig.bbox
        for text in [*fig.texts, *[ax.title for ax in fig.axes]]:  # fig.texts holds the suptitle
            if text is not None and text.get_text():
                box = text.get_window_extent(renderer)
                assert box.x0 >= whole.x0 - 1 and box.x1 <= whole.x1 + 1 and box.y1 <= whole.y1 + 1, text.get_text()
    # one colour per method in every figure it appears in
    by_label: dict[str, set[str]] = {}
    for fig in (d[k] for d in figs for k in ("profile", "deletion")):
        for ax in fig.axes:
            for line in ax.get_lines():
                label = line.get_label().removesuffix(" (circular)")
                if label in P.METHOD_STYLES:
                    by_label.setdefault(label, set()).add(str(line.get_color()).lower())
    assert by_label and all(colors == {P.METHOD_STYLES[m]["color"].lower()} for m, colors in by_label.items())


# -- prune, early-exit and diagnose pages ------------------------------------------------------------


@pytest.fixture(scope="module")
def beyond(tmp_path_factory) -> dict[str, Any]:
    """The three beyond commands on a tiny cache (class = sign of layer 1 + layer 2) with a LAYA head
    fitted here, diagnose against a copy whose layer 2 is moved; every folder with its plots."""
    from helpers import fit_quickly, write_cache

    from laya_inspect.beyond.diagnose import DiagnoseConfig, diagnose_heads
    from laya_inspect.beyond.early_exit import ExitConfig, simulate_early_exit
    from laya_inspect.beyond.prune import PruneConfig, prune_layers
    from laya_inspect.beyond.refit import Budget
    from laya_inspect.head_dir import cache_identity, save_head

    root = tmp_path_factory.mktemp("beyond")
    rng = np.random.default_rng(0)
    splits = {}
    for name, n in (("train", 300), ("test", 200)):
        feats = [rng.normal(size=(n, 3)).astype(np.float32) for _ in range(3)]
        splits[name] = (feats, (feats[0][:, 0] + feats[1][:, 0] < 0).astype(np.int64))
    names = ["l1", "l2", "l3"]
    cache = write_cache(root / "c.h5", splits, layer_names=names)
    moved = {s: ([f + (1.5 if i == 1 else 0.0) for i, f in enumerate(fs)], y) for s, (fs, y) in splits.items()}
    other = write_cache(root / "moved.h5", moved, layer_names=names, data_spec="moved")
    with FeatureStore(cache) as store, FeatureStore(other) as against:
        head_dir = save_head(root / "laya", fit_quickly("laya", store, 60, d_star=4), meta=cache_identity(store))
        prune = prune_layers(
            head_dir, store, PruneConfig(refit=False, costs="shapes", device="cpu"), out_dir=root / "prune"
        )
        cfg = ExitConfig(seeds=2, thresholds=5, costs="shapes", device="cpu")
        ee = simulate_early_exit(head_dir, store, cfg, Budget(), out_dir=root / "early-exit")
        cfg_d = DiagnoseConfig(permutations=50, n_boot=50, device="cpu")
        diag = diagnose_heads([head_dir], store, cfg_d, out_dir=root / "diagnose", against=against)
    return {"prune": prune, "early-exit": ee, "diagnose": diag}


BEYOND_TABLES = {
    "prune": {"prune-rankings", "prune-points", "prune-layers"},
    "early-exit": {"exit-rules", "exit-comparisons", "exit-depths"},
    "diagnose": {"diagnose-errors", "diagnose-heads", "diagnose-shift", "diagnose-shift-layers"},
}
BEYOND_LEADS = {
    "prune": "Ranking layers by α: α − a random ranking = ",  # --no-refit: one evaluation, one value each
    "early-exit": "Against random exit (exit depths mixed with no information about the input",
    # one head: its differences from msp are said as no verdict before their numbers
    "diagnose": "No verdict: one seed: the differences from msp below read one fitted head",
}


@pytest.mark.parametrize("kind", sorted(BEYOND_TABLES))
def test_each_beyond_command_writes_its_page_with_its_tables(beyond: dict[str, Any], kind: str) -> None:
    from laya_inspect.report.beyond import write_beyond_report

    result = beyond[kind]
    page = result.out_dir / "report.html"
    assert page in result.files
    text = page.read_text(encoding="utf-8")
    assert "default-src 'none'" in text and 'src="http' not in text
    lead = re.search(r'<div class="reading" id="reading">(.*?)</div>', text, re.S)
    assert lead
    said = result.summary.get("warnings") or []
    notes = re.findall(r'<p class="note">Warning: (.*?)\.</p>', html.unescape(lead.group(1)))
    assert notes == said  # the run's warnings come first, each as stored
    body = re.sub(r'^(<p class="note">Warning: .*?</p>)*', "", html.unescape(lead.group(1)))
    assert body.startswith(f"<p>{BEYOND_LEADS[kind]}")
    for table in BEYOND_TABLES[kind]:
        assert f'<table id="{table}">' in text
    # QA: the verdict columns ("too few rows", "α better", "same layer sets") had a blank heading
    assert not re.search(r"<th[^>]*></th>", text)
    # the command names the folder, not the temporary one it was written under
    assert f"laya-inspect {kind} " in text and f"--out {result.out_dir}" in html.unescape(text)
    assert ".tmp" not in html.unescape(text.split('id="provenance"')[0]).split('id="commands"')[1]
    # QA: early-exit's page said to rebuild it with `python -c 'from laya_inspect.report.beyond import …'`;
    # every page now names the command, as fit-head's does
    commands = html.unescape(text.split('id="provenance"')[0].split('id="commands"')[1])
    assert f"laya-inspect report {result.out_dir} --html" in commands and "python -c" not in commands
    n_png = len(list((result.out_dir / "plots").glob("*.png")))
    assert n_png >= 1 and text.count('src="data:image/png;base64,') == n_png
    if kind == "prune":  # one row per evaluated (ranking, k)
        body = text.split('<table id="prune-points">')[1].split("</table>")[0]
        assert body.count("<tr>") - 1 == len(result.summary["points"])
    # rebuilt from the finished folder, the page is the same
    assert write_beyond_report(result.out_dir).read_text(encoding="utf-8") == text


def test_the_beyond_page_call_is_refused_while_another_writer_holds_the_folder(beyond: dict[str, Any]) -> None:
    """Attack: a script's `write_beyond_report(pr)` while `prune … --out pr --force` swaps the folder: the
    library call took no lock and built its page from whatever stood there. It takes the folder's lock as
    write_report_html does; a caller that holds it says so (``locked=True``) and is not refused."""
    from laya_inspect.errors import LockedError
    from laya_inspect.files import output_lock
    from laya_inspect.report.beyond import write_beyond_report

    out = beyond["diagnose"].out_dir
    page = out / "report.html"
    before = page.read_bytes()
    with output_lock(out):  # the lock a --force run of the command holds on its folder
        with pytest.raises(LockedError, match="is being written by another laya-inspect process"):
            write_beyond_report(out)
        assert page.read_bytes() == before
        assert write_beyond_report(out, locked=True) == page
    assert write_beyond_report(out) == page  # the lock went with its holder
    assert not (out.parent / f".{out.name}.lock").exists()


@pytest.mark.parametrize("kind", sorted(BEYOND_TABLES))
def test_report_command_reads_a_beyond_folder_and_rebuilds_its_page(
    beyond: dict[str, Any], kind: str, tmp_path: Path
) -> None:
    import shutil

    from typer.testing import CliRunner

    from laya_inspect.cli import app

    folder = tmp_path / kind
    shutil.copytree(beyond[kind].out_dir, folder)
    (folder / "report.html").unlink()
    res = CliRunner().invoke(app, ["report", str(folder), "--html"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())  # a verdict longer than the terminal is wrapped, between words
    for line in beyond[kind].summary["verdict"]:
        assert " ".join(f"• {line}".split()) in said
    assert "<table" in (folder / "report.html").read_text(encoding="utf-8")
    from laya_inspect.out_dir import foreign_files

    assert foreign_files(folder) == []  # the page rebuilt under another path is still --force's to replace
    res = CliRunner().invoke(app, ["report", str(folder), "--json"])
    assert res.exit_code == 0 and '"command": "' + kind + '"' in res.output


def test_the_beyond_readings_say_whether_alpha_beats_its_baseline() -> None:
    from laya_inspect.report.reading import early_exit_reading, outcome

    def d(mean: float, lo: float, hi: float) -> dict[str, Any]:
        return {"mean": mean, "ci_low": lo, "ci_high": hi, "values": [mean]}

    assert [outcome(d(0.1, 0.05, 0.2)), outcome(d(-0.1, -0.2, -0.05)), outcome(d(0.0, -0.1, 0.1))] == [
        "better",
        "worse",
        "no different",
    ]
    assert outcome({"mean": 0.1, "ci_low": None, "ci_high": None}) == "undecided"
    s = {
        "seeds": [0, 1, 2],
        "config": {"epsilon": 0.05},
        "comparisons": {
            "confidence+alpha vs confidence": {"area_diff": d(-0.0144, -0.0214, -0.0075)},
            "alpha vs fixed": {"area_diff": d(0.0019, 0.0007, 0.0030)},
            "confidence vs fixed": {"area_diff": d(0.0167, 0.0103, 0.0230)},
        },
        "fixed_depth": [],
    }
    lead = early_exit_reading(s).lead
    assert lead[0].startswith("Adding α's mass beyond the exit depth (ε = 0.05) to the confidence rule hurts: -0.0144")
    assert lead[1].startswith("α alone beats a fixed exit depth (+0.0019 [+0.0007, +0.0030])")


@pytest.mark.slow
@needs_chromium
def test_beyond_pages_render_in_chromium(beyond: dict[str, Any], tmp_path: Path) -> None:
    for kind, tables in BEYOND_TABLES.items():
        folder = beyond[kind].out_dir
        result, console = _probe(folder / "report.html", tmp_path)
        assert console == [], (kind, console)
        _check_rendered(result, len(list((folder / "plots").glob("*.png"))), tables)
        said = beyond[kind].summary.get("warnings") or []
        first = f"Warning: {said[0]}" if said else BEYOND_LEADS[kind]  # a run's warnings come first
        assert result["reading"].startswith(first) and BEYOND_LEADS[kind] in result["reading"]


def test_fit_reading_prints_a_gap_that_excludes_0_with_bounds_that_do_not_read_as_0() -> None:
    """A user (MobileNetV2, 5 CIFAR classes, 3 seeds) read "-0.045 [-0.090, -0.000] against the single-layer
    probe on features.15 (0.810; the interval excludes 0)": an upper bound of −0.0002 printed as 0 beside
    "excludes 0", and no word that the probe, fitted once, varies too."""
    acc = {"n": 3, "mean": 0.765, "ci_low": 0.7198, "ci_high": 0.8098, "values": [0.745, 0.76, 0.79]}
    laya = {"head": "laya", "n": 3, "test_acc": acc, "probe_reference": {"layer": "features.15", "test_acc": 0.81}}
    lead = " ".join(fit_reading({"heads": [laya], "quality": {"chance": 0.2}}).lead)
    assert "-0.0450 [-0.0902, -0.0002] against the single-layer probe on features.15 (0.810; the interval " in lead
    assert "excludes 0; the probe is one fit; the interval covers the head's seeds only)" in lead
    # a gap whose bounds are far from 0 keeps three decimals
    assert "+0.565 [+0.520, +0.610] against chance (0.200, the majority class; the interval excludes 0)" in lead


def test_fit_reading_reads_the_lead_head_beside_its_nulls_and_says_a_head_at_chance() -> None:
    """fit-head's reading led with "LAYA reaches a test accuracy of 0.105 … +0.004 against the last-layer
    head" on a cache of permuted labels (chance 0.113): no word that the head did not learn (that was one
    of "6 warnings: see below"), and neither chance, the probe nor macro-F1 beside the accuracy."""
    acc = {"n": 3, "mean": 0.105, "ci_low": 0.088, "ci_high": 0.122}
    f1 = {"n": 3, "mean": 0.103, "ci_low": 0.086, "ci_high": 0.120}
    laya = {
        "head": "laya",
        "n": 3,
        "test_acc": acc,
        "test_macro_f1": f1,
        "probe_reference": {"layer": "blocks.2", "test_acc": 0.096},
    }
    last = {"head": "last", "n": 3, "test_acc": {**acc, "mean": 0.101}}
    summary = {"heads": [laya, last], "quality": {"chance": 0.113}}
    lead = fit_reading(summary).lead
    assert lead[0].startswith("LAYA did not learn: its test accuracy 0.105 [0.088, 0.122] is near chance (0.113")
    assert "macro-F1 0.103 [0.086, 0.120]" in lead[1]
    null = "the interval includes 0: no difference shown"
    one = "the probe is one fit; the interval covers the head's seeds only"
    assert f"+0.009 [-0.008, +0.026] against the single-layer probe on blocks.2 (0.096; {null}; {one})" in lead[1]
    assert f"-0.008 [-0.025, +0.009] against chance (0.113, the majority class; {null})" in lead[1]
    assert fit_reading(summary).details == [
        "last: test accuracy 0.101 [0.088, 0.122] over 3 seeds (near chance: it did not learn)."
    ]
    # a head that learned: its nulls beside it, no verdict of chance
    summary["heads"][0]["test_acc"] = {**acc, "mean": 0.9, "ci_low": 0.85, "ci_high": 0.95}
    lead = fit_reading(summary).lead
    assert lead[0].startswith("LAYA reaches a test accuracy of 0.900") and "did not learn" not in " ".join(lead)
    assert "+0.787 [+0.737, +0.837] against chance" in lead[0]


def test_fit_reading_says_a_head_above_the_majority_share_by_a_few_test_rows_did_not_learn() -> None:
    """On 99:1 data a head at 0.998 against a majority share of 0.994 over 635 test rows, which fit-head's
    gate warns near chance (it beats always answering the majority class on 3 rows), was read as "LAYA
    reaches a test accuracy of 0.998", with no word that it did not learn."""
    acc = {"n": 3, "mean": 0.998, "ci_low": 0.996, "ci_high": 1.0}
    summary = {
        "heads": [{"head": "laya", "n": 3, "test_acc": acc}, {"head": "last", "n": 3, "test_acc": acc}],
        "quality": {"chance": 0.994},
        "split": {"n_test": 635},
    }
    lead = fit_reading(summary).lead
    assert lead[0].startswith("LAYA did not learn: its test accuracy 0.998 [0.996, 1.000] is near chance (0.994")
    # its rows line, chance + 4.5/635 = 1.001, lies past 1: said as a line no head can reach, not as a number
    said = "= 0.995, or fewer than 5 test rows above it: with 635 test rows, 631 of them the majority class's, no head"
    assert said in lead[0]
    assert fit_reading(summary).details[0].endswith("(near chance: it did not learn).")
    # on ten times the test rows the same accuracy beats the majority class on 25 rows: it learned
    summary["split"]["n_test"] = 6350
    assert "did not learn" not in " ".join(fit_reading(summary).lead + fit_reading(summary).details)


def test_the_headline_reads_the_leads_rho_beside_its_nulls_with_no_rival_method() -> None:
    """`compare --method alpha` (or α and random only): the lead sentence gave top-layer agreement alone,
    α's ρ and the nulls to read it beside (top-1 only, the constant rule, random scores) nowhere."""
    s = _compare_summary(_scores(0.93, 0.76, 0.72, 0.80), _scores(0.94, 0.84, 0.81, 0.86))
    del s["heads"][0]["methods"]["ig"]
    s["heads"][0]["references"] = {
        "random": {"top_layer_agreement": 0.31, "faithfulness": {"mean": 0.01}},
        "top1_only": {"faithfulness": {"mean": 0.87}},
        "constant": {"top_layer_agreement": 0.49, "faithfulness": {"mean": 0.42}},
    }
    lead = compare_reading(s).lead[0]
    nulls = (
        "top-1 only 0.87, above α's: naming the top layer alone orders the layers better; the constant rule 0.42, "
        "the random reference 0.01"
    )
    assert lead.endswith(f"; its faithfulness ρ is 0.76 [0.72, 0.80] ({nulls})."), lead
    del s["heads"][0]["methods"]["random"]  # --method alpha: the random reference is still scored
    assert compare_reading(s).lead[0] == lead
    # with a rival, the random reference's ρ is read beside the others too
    s["heads"][0]["methods"]["ig"] = _scores(0.94, 0.84, 0.81, 0.86)
    s["heads"][0]["methods"]["alpha"]["vs_methods"] = {"ig": _diff(-0.08, -0.12, -0.05)}
    assert f"(faithfulness ρ 0.76 vs 0.84; {nulls}; paired difference" in compare_reading(s).lead[0]


def test_a_head_without_its_seed_list_counts_its_seeds_in_words():
    """The heads table of a summary with no seed list read "1 seed(s)"; it now says "1 seed" or "3 seeds"."""
    from laya_inspect.report.sections import fit_sections

    for n, said in ((1, "1 seed"), (3, "3 seeds")):
        (table,) = fit_sections({"heads": [{"head": "last", "n": n}]}, [])[0].tables
        assert table.rows[0][4] == said, table.rows[0]


@pytest.mark.parametrize(("n", "said"), [(1, "1 seed"), (3, "3 seeds")])
def test_seed_counts_read_as_words_not_seed_s(n: int, said: str) -> None:
    """The fit table's title, early-exit's settings line and a prune reading's seeds said "1 seed(s)" and
    "3 seed(s)"."""
    from laya_inspect.report.reading import seeds_said
    from laya_inspect.report.settings import beyond_settings_line
    from laya_inspect.report.terminal import fit_title

    over = "95% t-interval" if n > 1 else "95% interval over the test rows"  # one seed: no t-interval
    assert f"test split, {said}, {over}" in fit_title("f.h5", {}, n)
    line = beyond_settings_line({"command": "early-exit", "config": {"epsilon": 0.01, "thresholds": 5, "seeds": n}})
    assert f"{said} " in f"{line.plain} " and "(s)" not in line.plain
    assert seeds_said({"seeds": list(range(n))}) == said


def test_report_html_keeps_notes_in_a_page_copied_without_its_marker(runs: dict[str, Path], tmp_path: Path) -> None:
    """`cp out/* notes/` copies report.html but not the hidden marker; the page still carries
    laya-inspect's mark, so `report notes --html` rebuilt it over the user's notes. A page now
    carries the SHA-256 of what it holds, so only one unchanged since it was written is replaced."""
    from laya_inspect.out_dir import MARKER
    from laya_inspect.report import refuse_foreign_page

    notes = tmp_path / "notes"
    shutil.copytree(runs["compare"], notes)
    (notes / MARKER).unlink()
    refuse_foreign_page(notes)  # as written: rebuilt
    write_report_html(notes)
    refuse_foreign_page(notes)  # the rebuilt page is sealed too
    page = notes / "report.html"
    annotated = page.read_text(encoding="utf-8").replace("</body>", "<p>reviewer 2: see layer 3</p></body>")
    page.write_text(annotated, encoding="utf-8")
    result = runner.invoke(app, ["report", str(notes), "--html"], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "changed since it was written" in result.output, result.output
    assert page.read_text(encoding="utf-8") == annotated


def test_report_html_keeps_a_page_saved_while_it_was_built(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`report DIR --html` checked DIR/report.html only before building the page (seconds, with
    figures), then wrote over whatever was there: a page the user saved meanwhile was lost."""
    import laya_inspect.report as report

    out = tmp_path / "cmp"
    shutil.copytree(runs["compare"], out)
    built = report.build_page

    def build_then_user_saves(folder: Any, **kw: Any) -> str:
        text = built(folder, **kw)
        (out / "report.html").write_text("<html>my own page</html>", encoding="utf-8")
        return text

    monkeypatch.setattr(report, "build_page", build_then_user_saves)
    with pytest.raises(InputError, match="changed since it was written"):
        report.write_report_html(out)
    assert (out / "report.html").read_text(encoding="utf-8") == "<html>my own page</html>"


def test_the_layer_removal_changes_most_is_not_read_on_a_head_that_reads_one_layer() -> None:
    """A 'last' head reads one layer: "last-seed_0: removing blocks.2 changes the prediction most (ahead of
    blocks.0 by +5.929 …)" was said like a finding, where removing any other layer leaves its logits as
    they are. It reads "not applicable (the head reads one layer)", as the verdicts do."""
    from laya_inspect.report.reading import relied_on

    s = _compare_summary(_scores(0.9, 0.5, 0.4, 0.6), _scores(0.9, 0.5, 0.4, 0.6), paired=_diff(0.0, -0.1, 0.1))
    (head,) = s["heads"]
    head["lolo"] = {
        "most_relied_on": [{"layer": "blocks.2", "mean_effect": 5.929}, {"layer": "blocks.0", "mean_effect": 0.0}],
        "top_lead": {"mean": 5.929, "ci_low": 5.8, "ci_high": 6.0, "runner_up": "blocks.0", "n": 200},
    }
    assert "removing blocks.2 changes the prediction most" in (relied_on(head) or "")  # a head with no record
    head["layers_read"] = [2]
    said = relied_on(head) or ""
    assert "not applicable (the head reads one layer)" in said and "changes the prediction most (" not in said, said
    assert said in " ".join(compare_reading(s).details)
    head["layers_read"] = []
    assert "not applicable (the head reads no layer)" in (relied_on(head) or "")
