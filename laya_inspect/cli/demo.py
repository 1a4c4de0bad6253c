"""`laya-inspect demo`: train → extract → fit-head → compare on an embedded dataset, then one summary."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from ..demo import DEMO_DATASETS
from ..runtime import DEVICE_HELP
from ..training.stats import rows_accuracy
from .app import STARTED, Stopped, app, console, dim, err_console, from_options, show
from .progress import fit_progress, make_progress, row_progress

Handler = Callable[[dict[str, Any]], None]


@contextmanager
def _compare_progress() -> Iterator[Handler]:
    """One transient bar over the compared heads, naming the method being computed."""
    bar = make_progress("info", transient=True)
    with bar:
        task = bar.add_task("heads", total=None, info="")

        def on_event(e: dict[str, Any]) -> None:
            if e["event"] == "head":
                bar.update(task, total=e["total"], completed=e["index"], info=f"{e['head']} ({e['kind']})")
            elif e["event"] == "step":
                bar.update(task, info=f"{e['head']}: {e['step']}")
            elif e["event"] == "write":
                bar.update(task, completed=bar.tasks[0].total, info="writing files and plots")

        yield on_event


PROGRESS: dict[str, Callable[[], Any]] = {
    "train": fit_progress,
    "fit-head": fit_progress,
    "extract": lambda: row_progress("rows", transient=True),
    "compare": _compare_progress,
}


class _Steps:
    """Prints each step's title and command line, shows its progress, then one line of its numbers."""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.handler: Handler = lambda e: None

    def __enter__(self) -> _Steps:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def on_step(self, step: Any) -> None:
        if step.seconds is None:
            console.print(Text.assemble((f"\n[{step.index}/{step.total}] ", "bold"), step.title))
            console.print(f"$ {step.command}", style="cyan", markup=False, highlight=False, soft_wrap=True)
            self.stack = ExitStack()
            if err_console.is_interactive:  # bars only on a terminal; piped output stays plain lines
                self.handler = self.stack.enter_context(PROGRESS[step.name]())
        else:
            self.stack.close()
            self.handler = lambda e: None
            dim(f"  done in {step.seconds:.1f} s · {_step_line(step)}")

    def on_event(self, event: dict[str, Any]) -> None:
        self.handler(event)


def _step_line(step: Any) -> str:
    n = step.numbers
    if step.name == "train":
        acc = (
            rows_accuracy(n["test_acc"], n["n_test"], n.get("chance"), 3) if n.get("n_test") else f"{n['test_acc']:.3f}"
        )
        return f"backbone test accuracy {acc} (best epoch {n['best_epoch']} of {n['epochs_run']})"
    if step.name == "extract":
        layers = ", ".join(f"{a} ({w})" for a, w in zip(n["layers"], n["widths"]))
        rows = " + ".join(f"{v:,} {k}" for k, v in n["rows"].items())
        return f"{len(n['layers'])} layers: {layers} · {rows} rows"
    if step.name == "fit-head":
        # the accuracies beside what they are read against: the reference probe and chance
        probe = n.get("probe") or {}
        nulls = [f"probe on {probe['layer']} {probe['test_acc']:.3f}"] if probe.get("test_acc") is not None else []
        nulls += [f"chance {n['chance']:.3f}"] if n.get("chance") is not None else []
        return "mean test accuracy: " + " · ".join([*(f"{h} {a:.3f}" for h, a in n["test_acc"].items()), *nulls])
    from ..report.reading import name, with_ci
    from ..report.terminal import head_names
    from ..training.stats import cut_note

    # the first head compared (LAYA) over every seed compare scored, the constant rule's ρ, the null the
    # verdicts read, beside: one seed's scores read alone disagreed with the other seeds' on the digits
    est = next(iter(n["faithfulness_seeds"].values()))
    k = len(est["heads"])
    over = f" (mean over {k} seeds [95% t-interval])" if k > 1 else ""

    def score(name: str, e: dict[str, Any]) -> str:
        # a seed whose ρ is undefined (every row's ranking tied) leaves the mean to the others: say how
        # many, as "mean over k seeds" above would count it
        n = e.get("n", k)
        fewer = f" ({n} of {k} seeds)" if k > 1 and 0 < n < k else ""
        return f"{name} {with_ci(e, sign=False, digits=3)}{fewer}"

    # the constant rule always: "—" where its ρ is undefined on every seed, as a method's is
    # random attribution by the readings' name: "random" alone reads as the random reference, a null
    faith = {(name(m) if m == "random" else m): e for m, e in est["faithfulness"].items()}
    scores = [score(m, e) for m, e in faith.items()]
    # top-1 only, the ρ that knowing only the top layer earns: on the digits it beat every method (0.87
    # against α's 0.76); absent in demo.json written before it
    top1 = {"top-1 only": est["top1_only"]} if est.get("top1_only") else {}
    scores += [score(m, e) for m, e in top1.items()]
    scores.append(score("constant rule", est["constant"]))
    cut = cut_note(
        {**faith, **top1, "constant rule": est["constant"]},
        "ρ",
        "[−1, 1]",
        "the range of a Spearman ρ",
        "seeds at 95%",
    )
    return f"faithfulness ρ on {head_names(est['heads'])}{over}: " + " · ".join(scores) + (f"\n  {cut}" if cut else "")


def _header(plan: Any) -> None:
    console.print(Text.assemble(("laya-inspect demo", "bold"), f" · {plan.preset.description}"), highlight=False)
    console.print(
        f"model   {plan.train.model} (512-256-128, trained here) · LAYA d*={plan.fit.d_star}, "
        f"τ={plan.fit.tau} · device {plan.config.device}",
        highlight=False,
    )
    console.print(f"budget  {plan.budget_line()}", highlight=False)
    if plan.preset.note:
        console.print(f"        ({plan.preset.note})", highlight=False)
    console.print(f"out     {plan.out_dir}/", highlight=False)


def _accuracy_table(result: Any) -> None:
    fit = result.fit_summary
    n = len(fit["config"]["seeds"])
    _title(
        f"Head accuracy on the test split ({result.plan.rows['test']:,} rows; {n} seed{'s' * (n > 1)}, "
        "mean [95% t-interval])"
    )
    from .fit import print_fit  # here: importing it on top would list its commands before demo in --help

    print_fit(fit, "")  # the same table and gate lines fit-head and report print, whole at 80 columns
    dim(
        f"the frozen backbone ({result.plan.train.model} with its own classifier) reached test accuracy "
        f"{rows_accuracy(result.backbone['test_acc'], result.backbone['n_test'], result.backbone.get('chance'), 3)}; "
        "every head reads its blocks"
    )


def _title(text: str) -> None:
    console.print(Text("\n" + text, style="bold"), highlight=False)


def _profile_table(result: Any) -> None:
    alpha = (result.profiles or {}).get("alpha", {}).get("laya")
    if alpha is None:
        return
    static = (result.profiles or {}).get("static", {}).get("scalarmix")
    lolo = _laya_lolo(result.compare_summary)
    seeds = list(alpha["seeds"])
    if len(seeds) > 1:
        _seeds_profile_table(result, alpha, static, lolo)
        return
    layers, widths = result.numbers["layers"], result.numbers["widths"]
    _title("α profile: LAYA's mean α per layer on the test split (± std over rows; 1 seed)")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("layer", "width", "mean α", "", "ScalarMix w", "LOLO effect"):
        table.add_column(col, no_wrap=True, justify="left" if col in ("layer", "") else "right")
    effect = lolo.get(seeds[0])
    for i, name in enumerate(layers):
        a = float(alpha["mean"][i])
        table.add_row(
            name,
            str(widths[i]),
            f"{a:.3f} ± {float(alpha['std'][i]):.3f}",
            "█" * round(20 * a),
            "—" if static is None else f"{float(static['mean'][i]):.3f}",
            "—" if effect is None else f"{effect[i]:+.3f}",
        )
    show(table, console)
    dim(
        "ScalarMix w: its one learned weight per layer, the same for every input. LOLO effect: "
        f"{_lolo_said(result.compare_summary)} (compare, seed-{seeds[0]} head)."
    )


def _laya_lolo(summary: dict[str, Any]) -> dict[int, list[float]]:
    """fit seed → the mean LOLO effect per layer of compare's LAYA head of that seed (``laya/seed_<S>``)."""
    from ..compare.seeds import SEED_DIR

    out: dict[int, list[float]] = {}
    for h in summary["heads"]:
        m = SEED_DIR.fullmatch(Path(h.get("dir") or "").name)
        if h["kind"] == "laya" and m:
            out.setdefault(int(m.group(1)), [float(v) for v in h["lolo"]["mean_effect"]])
    return out


def _lolo_said(summary: dict[str, Any]) -> str:
    quantity = {"logit": "target logit", "prob": "confidence"}.get(summary.get("effect", "prob"))
    removal = {
        "mean": "its training mean",
        "zero": "0",
        "resample": "another training row's state (averaged over donors)",
    }.get(str(summary.get("ablation")), f"the {summary.get('ablation')} ablation")
    return f"the mean drop of the LAYA head's {quantity} when the layer is replaced by {removal}"


def _seeds_profile_table(result: Any, alpha: dict[str, Any], static: Any, lolo: dict[int, list[float]]) -> None:
    """Several seeds: each seed's mean α and its LOLO effects (compare scored every LAYA seed), in
    compare's across-seed table's cells (report.across.seed_cell); and the layer each seed's α and LOLO
    effects put first."""
    from ..compare.seeds import t_estimate
    from ..report.across import seed_cell
    from ..report.reading import peak
    from ..training.stats import bounded, cut_note

    layers, widths = result.numbers["layers"], result.numbers["widths"]
    seeds = list(alpha["seeds"])
    own = [[float(v) for v in row] for row in alpha["seed_means"]]  # seed × layer
    effects = [lolo.get(s) for s in seeds]
    _title(
        f"α profile: LAYA per layer on the test split, seeds {', '.join(map(str, seeds))}: the mean over "
        "seeds ± 95% t half-width; below, each seed's value"
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("layer", "width", "mean α", "", "ScalarMix w", "LOLO effect"):
        # a cut α cell (".26 [.00,.61]") and the LOLO seeds' line stay whole at 80 columns; the
        # headers and the bar give way instead
        table.add_column(
            col,
            justify="left" if col in ("layer", "") else "right",
            overflow="fold",
            no_wrap=col in ("mean α", "LOLO effect"),
        )
    # α lies in [0, 1]: an interval reaching past is shown cut, as compare's cut intervals are, with a note
    est = {name: bounded(t_estimate([r[i] for r in own]), 0.0, 1.0) for i, name in enumerate(layers)}
    for i, name in enumerate(layers):
        table.add_row(
            name,
            str(widths[i]),
            seed_cell(est[name]),
            "█" * round(10 * est[name]["mean"]),  # half as long as one seed's: the table stays within 80 columns
            "—" if static is None else f"{float(static['mean'][i]):.3f}",
            seed_cell(t_estimate([None if e is None else e[i] for e in effects]), sign=True),
        )
    show(table, console)
    note = cut_note(est, "mean α", "[0, 1]", "the values a weight α takes", "seeds at 95%")
    if note:
        dim(note)

    def tops(rows: list[list[float] | None]) -> str:
        return ", ".join("—" if r is None else layers[peak(r)] for r in rows)

    dim(
        f"per seed ({', '.join(map(str, seeds))}), the top layer by mean α: {tops(list(own))}; by LOLO effect: "
        f"{tops(effects)}. ScalarMix w: its one learned weight per layer, the same for every input (mean over "
        f"seeds). LOLO effect: {_lolo_said(result.compare_summary)} (compare, each seed's LAYA head)."
    )


def _files(result: Any) -> None:
    f, out = result.files, result.out_dir

    def rel(p: Path) -> str:
        try:
            return str(Path(p).relative_to(out))
        except ValueError:
            return str(p)

    heads = "|".join(result.plan.fit.heads)
    seeds = "|".join(map(str, result.plan.fit.seeds))
    rows = [
        ("backbone", f"{rel(f['backbone'])} (frozen checkpoint), {rel(f['backbone_metrics'])}"),
        ("features", f"{rel(f['features'])} (every layer, train and test rows)"),
        ("heads", f"{rel(f['heads'])}/<{heads}>/seed_<{seeds}>/, {rel(f['fit_summary'])}, {rel(f['runs'])}"),
        ("profiles", f"{rel(f['heads'])}/profiles/: " + ", ".join(Path(p).name for p in f["profile_plots"])),
        ("compare", f"{rel(f['compare_summary'])}, {rel(f['attributions'])} (every score and effect)"),
        ("plots", f"{rel(f['compare'])}/plots/ ({len(f['compare_plots'])} PNG)"),
        ("demo", f"{rel(f['demo_json'])} (config, budget, commands, step times, key numbers)"),
        ("report", f"{rel(f['report'])} (one page: the reading, tables, figures, commands; opens offline)"),
    ]
    _title(f"Files in {out}/")
    for label, text in rows:
        console.print(f"  {label:<9} {text}", highlight=False, soft_wrap=True)
    laya = next((h["name"] for h in result.compare_summary["heads"] if h["kind"] == "laya"), None)
    if laya:
        console.print(
            f"  look at   {rel(f['compare'])}/plots/{laya}_profile.png (α vs IG, Grad-CAM, static, random, "
            f"beside the LOLO effects) and {rel(f['heads'])}/profiles/layer_weights.png",
            highlight=False,
            soft_wrap=True,
        )


def _summary(result: Any) -> None:

    console.print()
    console.rule("summary")
    _accuracy_table(result)
    _profile_table(result)
    _title("Faithfulness: does each method rank the layers as removing them one at a time does?")
    from ..report.sections import said_above
    from ..report.terminal import tabled
    from .compare import print_report

    summary, compare = result.compare_summary, result.plan.paths["compare"]
    # the whole output ran to 800 lines on the digits: here every verdict, warning and failed check,
    # and the tables of one seed; the rest is in the files
    dim(f"Tables of {', '.join(tabled(summary))} below; every seed's: `laya-inspect report {compare}`")
    print_report(said_above(result.fit_summary, summary), brief=True)
    _files(result)
    console.print(
        f"\nfinished in {time.perf_counter() - STARTED:.0f} s ({result.seconds:.0f} s in the steps and the report; "
        "the rest is start-up: torch, matplotlib and the other imports). Rerun or change any step with the "
        "command printed above "
        f"it; `laya-inspect report {result.plan.paths['compare']}` prints every faithfulness table.",
        highlight=False,
    )


@app.command("demo")
def demo_command(
    dataset: str = typer.Option(
        "digits", "--dataset", help=f"{' | '.join(DEMO_DATASETS.names())} (digits: bundled with scikit-learn)"
    ),
    data_root: Optional[Path] = typer.Option(
        None, "--data-root", help="folder with the Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)"
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="output folder (default: a fresh ./laya-demo-<dataset>, -2, -3, …)"
    ),
    force: bool = typer.Option(
        False, "--force", metavar="", help="write into a non-empty --out, overwriting the demo's files"
    ),
    seed: int = typer.Option(0, "--seed", help="seed of the backbone's training and of compare (heads: --seeds)"),
    seeds: Optional[int] = typer.Option(
        None, "--seeds", help="fit the heads with seeds 0 … N−1 (default 3, --quick 1)"
    ),
    epochs: Optional[int] = typer.Option(
        None,
        "--epochs",
        help="the most epochs of the backbone and of each head (default: the dataset's; digits 60 and 50, "
        "--quick 10 and 30)",
    ),
    quick: bool = typer.Option(
        False,
        "--quick",
        metavar="",
        help="a sub-30-second run: fewer epochs, 1 seed, IG 16 steps, 200 bootstrap resamples",
    ),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP),
) -> None:
    """Run the whole pipeline on a bundled dataset (no download) and summarise it: accuracies, α, faithfulness.

    Example:
      laya-inspect demo --quick --out laya-demo
    """
    from ..demo import DemoConfig, plan_demo, run_demo

    config = from_options(
        DemoConfig,
        locals(),
        data_root=None if data_root is None else str(data_root),
        out=None if out is None else str(out),
    )
    plan = plan_demo(config)  # a LayaError (e.g. the dataset is missing) is one red line before anything is written
    _header(plan)
    with _Steps() as steps:
        try:
            result = run_demo(config, on_step=steps.on_step, progress=steps.on_event, plan=plan)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: --force's new demo is dropped whole, not kept in part
            if not force:
                raise
            raise Stopped(
                f"--out {plan.out_dir} was left as it was (with --force the new demo replaces it only once "
                "complete); run it again to start over"
            ) from None
    _summary(result)
