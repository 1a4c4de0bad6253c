"""docs/FORMATS.md against the files the commands write: every top-level key of fit-head's and compare's
summary.json (and of compare's heads, ablation blocks and headline rows), of a head directory's
config.json, of the output marker, of `explain --json`, of a demo's demo.json, of `check planted`'s
summary.json and of train's metrics file, and every attribute, group and dataset of attributions.h5, is
documented, and every key the text names for them is in a real file (a few only under conditions this
small run does not meet, listed with why). A key added, renamed or dropped cannot leave the format a
user reads behind."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import write_cache

from laya_inspect import CompareConfig, FeatureStore, FitConfig, compare_heads, fit_heads
from laya_inspect.compare.outputs import SCHEMA_VERSION
from laya_inspect.files import artifact_header
from laya_inspect.head_dir.common import HEAD_SCHEMA_VERSION

FORMATS = (Path(__file__).resolve().parents[1] / "docs" / "FORMATS.md").read_text(encoding="utf-8")


def between(start: str, end: str) -> str:
    i = FORMATS.index(start)
    return FORMATS[i : FORMATS.index(end, i)]


def without_brackets(text: str) -> str:
    """The text with every (…) and {…} taken out, innermost first: what remains names the top level."""
    while (shorter := re.sub(r"\([^()]*\)|\{[^{}]*\}", "", text)) != text:
        text = shorter
    return text


def prose_names(text: str) -> set[str]:
    """Names of keys a paragraph documents: each `name` in a code span, and the names listed inside
    {a, b, …} and [{a, b}] (each item's first word)."""
    names = set(re.findall(r"`([A-Za-z_]\w*)", text))
    for inner in re.findall(r"\{([^{}]*)\}", text):
        names |= {m.group(1) for item in inner.split(",") if (m := re.match(r"\s*(?:and\s+)?([A-Za-z_]\w*)", item))}
    return names


def listed_names(text: str) -> set[str]:
    """The top-level names of a code-block entry written as `a, b (…), c {…}, …`."""
    return {m.group(1) for item in without_brackets(text).split(",") if (m := re.match(r"\s*([A-Za-z_]\w*)", item))}


def keys_and_strings(value: Any, found: set[str] | None = None) -> set[str]:
    """Every key at every depth, and every string value (a documented `kind: "…"` is a value)."""
    found = set() if found is None else found
    if isinstance(value, dict):
        for k, v in value.items():
            found.add(str(k))
            keys_and_strings(v, found)
    elif isinstance(value, list):
        for v in value:
            keys_and_strings(v, found)
    elif isinstance(value, str):
        found.add(value)
    return found


def check(documented: set[str], written: dict[str, Any], conditional: dict[str, str]) -> None:
    undocumented = set(written) - documented
    assert not undocumented, f"top-level keys docs/FORMATS.md does not document: {sorted(undocumented)}"
    unwritten = documented - keys_and_strings(written) - set(conditional)
    assert not unwritten, f"docs/FORMATS.md documents keys no file has: {sorted(unwritten)}"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fit-head (two seeds, LAYA and ScalarMix) and compare on a small cache whose test split repeats two
    training rows (one under another label) and one of its own rows, so that the gate's optional blocks
    are written too."""
    rng = np.random.default_rng(0)
    widths, n_train, n_test = (8, 6, 4), 160, 40

    def rows(n: int) -> tuple[list[np.ndarray], np.ndarray]:
        y = np.arange(n) % 4
        return [(rng.normal(size=(n, d)) + y[:, None]).astype(np.float32) for d in widths], y

    (train, y_train), (test, y_test) = rows(n_train), rows(n_test)
    for layer_train, layer_test in zip(train, test):
        layer_test[0], layer_test[1], layer_test[3] = layer_train[0], layer_train[1], layer_test[2]
    y_test[0], y_test[1], y_test[3] = y_train[0], (y_train[1] + 1) % 4, y_test[2]
    root = tmp_path_factory.mktemp("formats")
    cache = write_cache(root / "f.h5", {"train": (train, y_train), "test": (test, y_test)})
    with FeatureStore(cache) as store:
        fit_heads(store, FitConfig(heads=("laya", "scalarmix"), seeds=(0, 1), epochs=2), out_dir=root / "heads")
        config = CompareConfig(methods=("alpha", "random"), n_boot=20, plots=False)
        compare_heads([root / "heads" / "laya" / "seed_0"], store, config, out_dir=root / "compare")
    return root


# fit-head's summary.json keys written where the cache records source_lines (data of one file of lines)
LINED = {k: "where the cache records source_lines" for k in ("file", "line", "first_line", "test_line", "train_line")}


def test_fit_head_summary_json(outputs: Path) -> None:
    written = json.loads((outputs / "heads" / "summary.json").read_text())
    documented = prose_names(between("summary.json: `tool_version`", "Definitions:"))
    one_seed = {"method": "probe_reference.test_rows, one seed below the probe by more than the margin"}
    # a head's test_rows: its one-seed intervals over the test rows (this fixture fits two seeds)
    one_seed |= {k: "test_rows, one seed" for k in ("test_rows", "better", "worse", "differ", "half_width")}
    one_seed["reference"] = "test_rows.vs_probe, test_rows.vs_chance, one seed"
    one_seed["baseline_near_chance"] = "beside a head last, which this fixture does not fit"
    one_seed["baseline_below_probe"] = "beside a head last, which this fixture does not fit"
    check(
        documented, written, {"n_val_untrained_left_out": "only when a class has no training rows", **LINED, **one_seed}
    )


def test_compare_summary_json(outputs: Path) -> None:
    written = json.loads((outputs / "compare" / "summary.json").read_text())
    documented = prose_names(between("summary.json, top level:", "Each head:"))
    conditional = {
        "cache_layer_names": "only when the head reads some of the cache's layers",
        "prob": "the other value of `effect`",
        "quality": "fit-head's summary, named as what rows_repeated mirrors",
        "why": "of rows_left_out, only with --allow-nonfinite",
        **dict.fromkeys(
            ("members", "seeds", "std", "values", "verdicts", "carried", "verdict_over_seeds", "caveats_per_seed"),
            "one seed",
        ),
        **dict.fromkeys(("clipped", "t_low", "t_high"), "an interval over seeds cut to its score's range"),
    }
    check(documented, written, conditional)


def test_files_open_with_the_shared_header(outputs: Path) -> None:
    """compare's summary.json, fit-head's and a head's config.json open with artifact_header's keys, in
    its order and with its values (the time aside: compare's is when it wrote, an ISO 8601 UTC time)."""
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    for path, header in [
        ("compare/summary.json", artifact_header("laya-inspect-compare", schema=SCHEMA_VERSION, dated=True)),
        ("heads/summary.json", artifact_header()),
        ("heads/laya/seed_0/config.json", artifact_header(schema=HEAD_SCHEMA_VERSION)),
    ]:
        written = json.loads((outputs / path).read_text())
        assert list(written)[: len(header)] == list(header), path
        same = [k for k in header if k != "created_at"]
        assert [written[k] for k in same] == [header[k] for k in same], path
    created = datetime.datetime.fromisoformat(json.loads((outputs / "compare/summary.json").read_text())["created_at"])
    assert created.utcoffset() == datetime.timedelta(0) and created <= before


def test_head_config_json(outputs: Path) -> None:
    written = json.loads((outputs / "heads" / "laya" / "seed_0" / "config.json").read_text())
    entry = between("config.json     schema_version 1", "weights.pt      ").removeprefix("config.json")
    check(listed_names(entry), written, {"cache_layer_names": "only for a head on some of the cache's layers"})


def test_output_marker(outputs: Path) -> None:
    written = json.loads((outputs / "heads" / ".laya-inspect.json").read_text())
    block = between("written_by   ", "```")
    documented = set(re.findall(r"^([a-z_0-9]+) ", block, flags=re.MULTILINE))
    assert documented == set(written)


def test_the_name_readers() -> None:
    assert prose_names("`a` (`b`, {c, d (e), and f}, [{g, h}]) i") == {"a", "b", "c", "d", "f", "g", "h"}
    assert listed_names("a 1, b (x, y), c {d, e}, f") == {"a", "b", "c", "f"}


def test_report_html_table_ids(outputs: Path) -> None:
    """Each table of fit-head's and compare's page has an id the report.html section documents, a head's
    name standing for `<head>` and an ablation's for `<ablation>`."""
    section = between("## report.html", "It has\nno script")
    patterns = [
        re.escape(i).replace("<head>", "[a-z0-9-]+").replace("<ablation>", "[a-z0-9-]+")
        for i in re.findall(r"`([a-z<>-]+)`", section)
        if "-" in i
    ]
    ids = set()
    for page in ("heads/report.html", "compare/report.html"):
        ids |= set(re.findall(r'<table id="([^"]+)"', (outputs / page).read_text(encoding="utf-8")))
    assert {"fit-heads", "lolo-effects", "scores-laya-seed-0"} <= ids
    undocumented = {i for i in ids if not any(re.fullmatch(p, i) for p in patterns)}
    assert not undocumented, f"report.html tables docs/FORMATS.md does not name: {sorted(undocumented)}"


def test_prune_early_exit_and_diagnose_summary_json(outputs: Path) -> None:
    """The section on prune, early-exit and diagnose names every top-level key of their summary.json and no
    key they do not write; prune's and early-exit's keys it gives to both are in both."""
    from laya_inspect.beyond.config import Budget, DiagnoseConfig, ExitConfig, PruneConfig
    from laya_inspect.beyond.diagnose import diagnose_heads
    from laya_inspect.beyond.early_exit import simulate_early_exit
    from laya_inspect.beyond.prune import prune_layers

    head, budget = outputs / "heads" / "laya" / "seed_0", Budget(epochs=1)
    with FeatureStore(outputs / "f.h5") as store, FeatureStore(outputs / "f.h5") as other:
        smix = outputs / "heads" / "scalarmix"  # its `scalarmix` record documented too
        prune_layers(
            head, store, PruneConfig(seeds=1, plots=False), budget, out_dir=outputs / "prune", scalarmix_dir=smix
        )
        simulate_early_exit(head, store, ExitConfig(seeds=1, plots=False), budget, out_dir=outputs / "exit")
        config = DiagnoseConfig(permutations=20, n_boot=20, plots=False)
        diagnose_heads([head], store, config, out_dir=outputs / "diagnose", against=other)
    section = between("summary.json, top level:\n\n- all three:", "## report.html")
    names = {
        m.group(1): prose_names(m.group(2))
        for m in re.finditer(r"^- ([a-z -]+): (.*?)(?=^- |\Z)", section, flags=re.M | re.S)
    }
    for command, folder, own in (("prune", "prune", ("prune and early-exit", "prune")),
                                 ("early-exit", "exit", ("prune and early-exit", "early-exit")),
                                 ("diagnose", "diagnose", ("diagnose",))):  # fmt: skip
        written = json.loads((outputs / folder / "summary.json").read_text())
        assert written["command"] == command
        documented = names["all three"].union(*(names[p] for p in own))
        # a difference's interval over seeds or heads cut to [−1, 1]: one seed or head here
        cut = {k: "over seeds or heads, where cut" for k in ("clipped", "t_low", "t_high")}
        # a difference's test rows beside its interval over several heads: one head here
        cut |= dict.fromkeys(("test_rows", "rows", "half_width", "dominates", "withheld"), "over several heads")
        cut["chance_withheld"] = "over several heads, an AUROC under ½ the rows do not show"
        several = {  # one head here
            "given_heads_test_acc": "early-exit given several LAYA heads",
            "layers_by_seed": "prune given several LAYA heads",
            "flops_saved_by_seed": "prune given several LAYA heads",
            "by_seed": "prune given several LAYA heads",
            "scores_over_heads": "prune given several LAYA heads",
            "caveat": "prune given --scalarmix",  # none here
        }
        clipped = {k: "over seeds, where cut" for k in ("clipped", "t_low", "t_high")}
        check(documented, written, cut if command == "diagnose" else {**several, **clipped})


def test_summary_csv_columns(outputs: Path) -> None:
    """Every column of fit-head's and compare's summary.csv and of runs.csv is named in its file's entry
    (`test_acc_*` standing for test_acc_mean, …)."""
    import fnmatch

    for csv, start, end in (
        ("heads/summary.csv", "summary.csv       one row per head:", "report.html       "),
        ("heads/runs.csv", "runs.csv|json     one row per", "summary.json      below"),
        ("compare/summary.csv", "summary.csv       one number per row:", "attributions.h5   "),
    ):
        named = set(re.findall(r"[a-z][\w*]*", between(start, end)))
        columns = (outputs / csv).read_text(encoding="utf-8").splitlines()[0].split(",")
        unnamed = [c for c in columns if not any(fnmatch.fnmatchcase(c, n) for n in named)]
        assert not unnamed, f"{csv} columns docs/FORMATS.md does not name: {unnamed}"


def test_cache_attributes(tmp_path: Path) -> None:
    """The cache block names every root attribute, split-group attribute and dataset of a cache extract
    writes, and names no root attribute it does not (working_dir: the CLI's, not a module's;
    overwrite_notes: only where --overwrite replaced a cache with no record; config_defaults and batch_size:
    the command's options, which batches given in memory have none of; model_top1: the command's check of
    a model whose logits are one per class of its data, which batches given in memory name no classes of)."""
    import h5py
    import torch
    from torch import nn

    from laya_inspect import extract_features

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
    x, y = torch.randn(40, 6), torch.arange(40) % 3
    batches = {s: [(x[i : i + 20], y[i : i + 20])] for s, i in (("train", 0), ("test", 20))}
    extract_features(net, batches, layers=["0", "2"], out=tmp_path / "f.h5")
    block = between("/                      attributes", "\n```")
    root, _, split = block.partition("/<split>/")
    documented = set(re.findall(r"^  ([a-z_0-9]+)", root, flags=re.M))
    documented |= {n for line in re.findall(r"^  (\w+(?:, \w+)+)$", root, flags=re.M) for n in line.split(", ")}
    with h5py.File(tmp_path / "f.h5", "r") as f:
        attrs = set(f.attrs)
        group = f["test"]
        in_split = set(group.attrs) | {"layer_000" if k.startswith("layer_") else k for k in group}
    assert not attrs - documented, f"cache attributes docs/FORMATS.md does not name: {sorted(attrs - documented)}"
    named_only = (
        documented
        - attrs
        - {"working_dir", "overwrite_notes", "config_defaults", "batch_size", "model_top1", "source_lines"}
    )
    assert not named_only, f"named, not written: {sorted(named_only)}"
    split_named = set(re.findall(r"[a-z][a-z_0-9]*", split))
    assert in_split <= split_named, f"split contents not named: {sorted(in_split - split_named)}"


def test_compare_heads_ablations_and_headline(outputs: Path) -> None:
    """Each head's keys, an ablation block's and a headline row's are named where FORMATS describes them."""
    summary = json.loads((outputs / "compare" / "summary.json").read_text())
    head = summary["heads"][0]
    block = head["ablations"][summary["ablation"]]
    conditional = {
        # circular and other rows of a run with more methods than this small one
        "ig_delta": "only for ig",
        "family": "only with another non-circular method to compare against",
        "leader": "of best_tests, only with two methods or more to test",
        "runner_up": "of best_tests, only with two methods or more to test",
        "vs_runner_up": "of best_tests, only with two methods or more to test",
        "marked": "of best_tests, only with two methods or more to test",
        "constant_tested": "of best_tests, only with two methods or more to test",
        "n_valid": "of faithfulness, in the heads' blocks",
        "n_undefined": "of faithfulness, in the heads' blocks",
        "tie_tolerance": "of faithfulness, in the heads' blocks",
        "masks": "of lolo.subsets",
        "all": "of `all|top|any_tied_rows`, three keys written in one",
        "oracle": "of `oracle|random_deletion|insertion_area`, four keys written in one",
        "report": "the command that reads the field",
        "note": "of vs_constant, only on a head that reads one layer",
        # vs_constant's verdicts this small run does not reach ("not shown", "too few rows", "no constant": first word)
        **dict.fromkeys(("beats", "mixed", "identical", "untested", "withheld", "not", "too", "no"), "a verdict"),
    }
    documented = prose_names(between("Each head: `name`", "`headline`: one flat row"))
    check(documented, head, conditional)
    assert not set(block) - documented, f"ablation block keys not documented: {sorted(set(block) - documented)}"
    row = summary["headline"][0]
    named = {n for n in prose_names(between("one flat row per (head", "Non-finite numbers")) if n[0] != "_"}
    named |= {f"{k}{s}" for k in named if k.endswith("_minus_constant") for s in ("_ci_low", "_ci_high")}
    named |= {"faithfulness_ci_low", "faithfulness_ci_high"}  # "(and CI)"
    assert set(row) == named, f"headline: unnamed {sorted(set(row) - named)}, not written {sorted(named - set(row))}"


def test_attributions_h5(outputs: Path) -> None:
    """The attributions.h5 block names every root attribute (and no other), every group, dataset and
    attribute the file holds (a head's, method's, ablation's and reference's name standing for its
    placeholder), and every dataset it lists on the left is in the file."""
    import h5py

    block = between("/                       attributes:", "\n```")
    root_text, _, tree = block.partition("\n/rows")
    words = set(re.findall(r"[A-Za-z_]\w*", block))
    placeholders = {"heads": "head", "methods": "m", "ablations": "a", "references": "r"}
    found: set[str] = set()
    with h5py.File(outputs / "compare" / "attributions.h5", "r") as f:
        assert set(f.attrs) == listed_names(root_text.split("attributes:", 1)[1])

        def visit(name: str, obj: Any) -> None:
            parts = name.split("/")
            generic = [placeholders.get(parts[i - 1], p) if i else p for i, p in enumerate(parts)]
            found.add(re.sub(r"^layer_\d+$", "layer_000", generic[-1]))
            if generic[-2:-1] != ["methods"]:  # a method's attributes are its parameters, named as such
                found.update(obj.attrs)

        f.visititems(visit)
    undocumented = found - words - set(placeholders.values())
    assert not undocumented, f"attributions.h5 names docs/FORMATS.md does not document: {sorted(undocumented)}"
    left = {
        n
        for line in ("/rows" + tree).splitlines()
        if not line.startswith(" " * 20)  # the description of the entry above, wrapped
        for n in re.findall(r"[a-z_]\w*", re.split(r"\s{2,}", line.strip())[0])
    }
    unwritten = left - found - {"delta"}  # delta: ig only, not run here
    assert not unwritten, f"docs/FORMATS.md lists what attributions.h5 does not hold: {sorted(unwritten)}"


def test_explain_json(outputs: Path) -> None:
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    head = outputs / "heads" / "laya" / "seed_0"
    args = ["explain", str(head), "--cache", str(outputs / "f.h5"), "--row", "0", "--n-steps", "2", "--json"]
    result = CliRunner().invoke(app, [*args, "--device", "cpu"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    documented = prose_names(between("`--json` prints one JSON object instead of the", "## Demo folder"))
    check(documented, written, {"p_ablated": "the other value of `effect`, with --effect prob"})


def test_train_metrics_json(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    args = ["train", "--model", "zoo:mlp", "--data", "digits", "--head", "laya", "--epochs", "1"]
    result = CliRunner().invoke(app, [*args, "--device", "cpu", "--out", str(tmp_path / "m.pt")])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "m.metrics.json").read_text())
    documented = prose_names(between("The metrics file `<FILE stem>.metrics.json`", "## Compare output"))
    check(documented, written, {"n_val_untrained_left_out": "only when a class has no training rows"})
    record = json.loads((tmp_path / ".m.pt.laya-inspect.json").read_text())
    documented = prose_names(between("are recorded beside them, in", "A file with no record"))
    larger = {"size": "only of a file over 64 MiB", "mtime_ns": "only of a file over 64 MiB"}
    left = {"before": "only in a record a killed run left", "name": "a file's name"}
    left |= {"explain": "explain's record", "extract": "extract's record"}
    check(documented, record, left | larger)


def test_check_planted_summary_json(tmp_path: Path) -> None:
    """Two construction seeds: each seed's folder holds a one-seed summary.json, the top one reads across."""
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    out = tmp_path / "planted"
    args = ["check", "planted", "--rows", "40", "--seeds", "2", "--device", "cpu", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    one = json.loads((out / "seed_0" / "summary.json").read_text())
    documented = prose_names(between("summary.json of one seed", "With `--seeds N` > 1 the top"))
    check(documented, one, {})
    across = json.loads((out / "summary.json").read_text())
    documented = prose_names(FORMATS.split("With `--seeds N` > 1 the top", 1)[1])
    check(documented, across, {})


def test_demo_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A demo stopped at its first step: demo.json is written before it and says what it will do."""
    import laya_inspect.training.joint
    from laya_inspect.errors import InputError

    def stop(*args: Any, **kwargs: Any) -> None:
        raise InputError("stopped here by the test")

    monkeypatch.setattr(laya_inspect.training.joint, "train_joint", stop)
    from typer.testing import CliRunner

    from laya_inspect.cli import app

    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--quick", "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 1 and "stopped here by the test" in result.output
    written = json.loads((out / "demo.json").read_text())
    assert written["complete"] is False
    documented = prose_names(between("demo.json, written before the first step", "## check planted output"))
    finished = "only once the demo finishes (tests/test_demo.py runs one)"
    only_finished = ("backbone_test_acc", "layers", "widths", "head_test_acc", "alpha_mean", "scalarmix_weights")
    only_finished += ("faithfulness", "faithfulness_constant", "fit_summary", "runs", "attributions", "compare_summary")
    only_finished += ("faithfulness_seeds", "heads", "constant", "std", "ci_low", "ci_high", "n", "values")
    only_finished += ("profile_plots", "clipped", "t_low", "t_high", "top1_only")  # clipped…t_high: a ρ cut to [−1, 1]
    only_finished += ("test_acc", "chance", "probe", "layer")  # fit-head step's numbers
    check(documented, written, dict.fromkeys((*only_finished, "compare_plots"), finished))
