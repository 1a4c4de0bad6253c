"""`check planted --seeds N`: the planted-layer check on N construction seeds, read across them
(docs/METHOD.md, "The planted-layer check").

Seeds ``seed``, ``seed`` + 1, …, ``seed`` + N − 1 each build their own backbone, class means, rows
and fits and run compare, exactly as one :func:`~laya_inspect.check.planted.run_planted` does, into
``out_dir/seed_S/``; independent runs, so on the CPU they run in forked worker processes
(:func:`~laya_inspect.workers.run_forked`). :func:`across_seeds` is a pure function of the per-seed
summaries: a method passes the check only when it is at the bar on every seed (the lower end of its
95% Wilson interval ≥ ``pass_share``), and ``passed`` is IG on the LAYA head passing on every seed.
Nothing is printed: :func:`run_planted_seeds` returns a :class:`PlantedSeedsResult` and writes
``out_dir`` whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..files import artifact_header, plain, write_json
from ..out_dir import atomic_dir
from ..runtime import Progress, no_progress, pick_device
from ..training.stats import counted_list
from .config import PlantedConfig
from .planted import INTRINSIC, PASS_SHARE, PASS_VS_CONSTANT, SCHEMA_VERSION, PlantedResult, build_and_read

PASS_RULE_SEEDS = (
    "passed when, on every construction seed, the lower end of the 95% Wilson interval of IG's share (LAYA head) "
    "is at least pass_share; any other method is at the bar across seeds only when it is at the bar on every seed"
)
# what each seed's entry of per_seed keeps from that seed's own summary.json (seed_S/summary.json has it all)
PER_SEED_KEYS = (
    "passed",
    "test_acc",
    "near_chance",
    "methods",
    "effects",
    "constant",
    "against_bar",
    "ground_truth_at_bar",
    "constant_at_bar",
)


@dataclass
class PlantedSeedsResult:
    out_dir: Path
    config: PlantedConfig
    seeds: list[PlantedResult]  # one per construction seed, in seed order; each written to out_dir/seed_S
    summary: dict[str, Any]


def seed_folder(seed: int) -> str:
    return f"seed_{seed}"


def run_planted_seeds(
    config: PlantedConfig,
    *,
    out_dir: str | Path,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> PlantedSeedsResult:
    """The check on every construction seed of ``config`` (``config.seed`` … + ``config.seeds`` − 1),
    each into ``out_dir/seed_S/``, and the reading across them in ``out_dir/summary.json``."""
    from ..workers import cpu_workers, run_forked

    emit = progress or no_progress
    device = pick_device(config.device)  # a CUDA device that is not here: one line before any work
    seeds = config.construction_seeds
    out = Path(out_dir)
    with atomic_dir(out, force=overwrite, command="check planted", flag="--out") as tmp:

        def one(_: int, seed: int, emit_one: Progress) -> PlantedResult:
            (tmp / seed_folder(seed)).mkdir()
            return build_and_read(
                replace(config, seed=seed, seeds=1), tmp / seed_folder(seed), out / seed_folder(seed), emit_one
            )

        results = run_forked(seeds, one, cpu_workers(None, device, len(seeds)), emit)
        summary = seeds_summary(config, [r.summary for r in results])
        write_json(tmp / "summary.json", summary)
    emit({"event": "write", "path": str(out / "summary.json")})
    return PlantedSeedsResult(out, config, results, summary)


def _reading(entries: list[tuple[int, dict[str, Any] | None, str]]) -> dict[str, Any]:
    """One (head, method) or ground truth across seeds: ``entries`` (seed, its share's dict or None, its
    place against the bar)."""
    failed = [seed for seed, _, where in entries if where != "above"]
    return {
        "passed_on": len(entries) - len(failed),
        "of": len(entries),
        "failed_seeds": failed,
        "at_bar_on_every_seed": not failed,
        "shares": [None if share is None else share["share"] for _, share, _ in entries],
        "against_bar": [where for _, _, where in entries],
    }


def across_seeds(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The reading across construction seeds of per-seed summaries (each a one-seed summary.json, in
    seed order): for every (head, method) and each head's LOLO effects, on how many seeds it is at the
    bar and which seeds it is not (a method a seed lacks counts as not at the bar there); the constant
    rule's and random attribution's shares per seed; ``passed``: IG on the LAYA head at the bar on every seed."""
    seeds = [int(s["construction"]["seed"]) for s in summaries]
    keys: list[tuple[str, str]] = []
    for s in summaries:
        keys += [k for k in ((m["head"], m["method"]) for m in s["methods"]) if k not in keys]
    methods = []
    for head, method in keys:
        entries = []
        for seed, s in zip(seeds, summaries):
            share = next((m for m in s["methods"] if (m["head"], m["method"]) == (head, method)), None)
            entries.append((seed, share, s["against_bar"]["methods"].get(f"{head}/{method}", "none")))
        methods.append({"head": head, "method": method, **_reading(entries)})
    heads = [h for s in summaries for h in s["effects"]]
    effects = {
        head: _reading(
            [
                (seed, s["effects"].get(head), s["against_bar"]["effects"].get(head, "none"))
                for seed, s in zip(seeds, summaries)
            ]
        )
        for head in dict.fromkeys(heads)
    }
    constant = {
        head: _reading(
            [
                (seed, s["constant"].get(head), s["against_bar"].get("constant", {}).get(head, "none"))
                for seed, s in zip(seeds, summaries)
            ]
        )
        for head in dict.fromkeys(h for s in summaries for h in s["constant"])
    }
    ig = next((m for m in methods if (m["head"], m["method"]) == ("laya", "ig")), None)
    # a seed whose LAYA head is near chance tests nothing (planted.near_chance_line): never a pass
    near = [seed for seed, s in zip(seeds, summaries) if "laya" in (s.get("near_chance") or {})]
    return {
        "seeds": seeds,
        "passed": bool(ig and ig["at_bar_on_every_seed"] and not near),
        "near_chance_seeds": near,
        "methods": methods,
        "effects": effects,
        "constant": constant,
        "random_floor": summaries[0]["random_floor"],
        "constant_at_bar_on_every_seed": _constant_everywhere(summaries),
        "constant_at_bar_seeds": [seed for seed, s in zip(seeds, summaries) if s.get("constant_at_bar")],
    }


def seeds_summary(config: PlantedConfig, summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """``out_dir/summary.json`` of a run on several seeds: the construction they share, each seed's
    shares (``per_seed``) and the reading across them (``across_seeds``, ``passed``, ``verdict``)."""
    first = summaries[0]
    across = across_seeds(summaries)
    per_seed = [
        {"seed": seed, "folder": seed_folder(seed), **{k: s[k] for k in PER_SEED_KEYS}, "verdict": s["verdict"]}
        for seed, s in zip(across["seeds"], summaries)
    ]
    summary = {
        **artifact_header("laya-inspect-check-planted", schema=SCHEMA_VERSION, dated=True),
        "warnings": [],  # what the run said of its output folder (a kept leftover), added as it is finished
        "construction": {**first["construction"], "seed": config.seed},
        "construction_seeds": across["seeds"],
        "fit": {k: v for k, v in first["fit"].items() if k != "seed"},  # each seed fits with its own seed
        "compare": first["compare"],
        "ranked_first": first["ranked_first"],
        "random_floor": first["random_floor"],
        "pass_share": first["pass_share"],
        "pass_rule": PASS_RULE_SEEDS,
        "pass_vs_constant": PASS_VS_CONSTANT,
        "passed": across["passed"],
        "per_seed": per_seed,
        "near_chance_seeds": across["near_chance_seeds"],
        "across_seeds": {k: v for k, v in across.items() if k not in ("seeds", "passed", "near_chance_seeds")},
        "verdict": seeds_verdict_lines(
            across, first["construction"]["signal_layer_name"], first["compare"]["ablation"]
        ),
        "files": {
            "seeds": {str(seed): seed_folder(seed) for seed in across["seeds"]},
            "summary": "summary.json",
            "note": "each seed's folder holds that seed's features.h5, heads/, compare/ and summary.json, as a run "
            "with --seeds 1 writes them",
        },
    }
    return plain(summary)


def _constant_everywhere(summaries: list[dict[str, Any]]) -> bool | None:
    """Whether compare's constant rule on the LAYA head reached the bar on every seed (None where a seed
    has no constant rule to read)."""
    at = [s.get("constant_at_bar") for s in summaries]
    return None if any(a is None for a in at) else all(at)


def _constant_some(across: dict[str, Any], label: str) -> str:
    """Where the constant rule reaches the bar on some seeds but not all: those seeds' passes cannot tell
    ``label`` from one fixed profile (said on every seed, the line says it already)."""
    some = across.get("constant_at_bar_seeds") or []
    if not some or across.get("constant_at_bar_on_every_seed"):
        return ""
    return (
        f"; on {counted_list('construction seed', some)} compare's constant rule (one profile for every row) reaches "
        f"the bar too, so there this check cannot tell {label} from one fixed profile"
    )


def _seeds(seeds: list[int]) -> str:
    return ", ".join(map(str, seeds))


def _shares(r: dict[str, Any]) -> str:
    return ", ".join("—" if v is None else f"{v:.1%}" for v in r["shares"])


def _count(r: dict[str, Any], seeds: list[int]) -> str:
    text = f"at the {PASS_SHARE:.0%} bar on {r['passed_on']} of {r['of']} construction seeds (shares {_shares(r)})"
    if r["failed_seeds"]:
        where = dict(zip(seeds, r["against_bar"]))
        text += "; not on seed" + ("s " if len(r["failed_seeds"]) > 1 else " ")
        text += ", ".join(f"{seed} ({where[seed]})" for seed in r["failed_seeds"])
    return text


def seeds_verdict_lines(across: dict[str, Any], layer: str, ablation: str) -> list[str]:
    """The reading across seeds, one line each: IG against the pass mark on every seed, α and α-contrib
    and the LOLO effects beside the same bar, random, the constant rule, and the seeds it holds for."""
    seeds = across["seeds"]
    methods = {(m["head"], m["method"]): m for m in across["methods"]}
    lines = []
    ig = methods.get(("laya", "ig"))
    near = across.get("near_chance_seeds") or []
    if ig is not None:
        lines.append(
            f"IG on the LAYA head ranks the signal layer {layer} first "
            + _count(ig, seeds)
            + (
                f": not passed: on {counted_list('seed', near)} the LAYA head is near chance "
                "(fit-head's rule), it learnt next to nothing of the label, so there is no planted layer in it to "
                "find and those seeds test nothing (lower --noise or raise --rows)"
                if near
                else ": passed on every seed, the pipeline finds the planted layer"
                + (
                    "; not a pass of per-input attribution: compare's constant rule (one profile for every row) "
                    "reaches the bar on every seed too, so this check cannot tell IG from one fixed profile"
                    if across.get("constant_at_bar_on_every_seed")
                    else _constant_some(across, "IG")
                )
                if ig["at_bar_on_every_seed"]
                else ": not passed: a method passes only when it passes on every construction seed"
            )
        )
    for method, label in INTRINSIC.items():
        if ("laya", method) in methods:
            r = methods[("laya", method)]
            lines.append(
                f"{label} ranks it first {_count(r, seeds)}"
                + (": at the bar across seeds" if r["at_bar_on_every_seed"] else ": not at the bar across seeds")
                + (
                    "; compare's constant rule (the mean α, one profile for every row) reaches the bar on every seed "
                    f"too, so this check cannot tell {label} from one fixed profile"
                    if r["at_bar_on_every_seed"] and across.get("constant_at_bar_on_every_seed")
                    else _constant_some(across, label)
                    if r["at_bar_on_every_seed"]
                    else ""
                )
            )
    if "laya" in across["effects"]:
        truth = across["effects"]["laya"]
        note = ""
        if ig is not None and ig["at_bar_on_every_seed"] and truth["failed_seeds"]:
            note = (
                f"; the pass is flagged: on {counted_list('seed', truth['failed_seeds'])} the LAYA head itself is "
                "not shown to rely on the signal layer "
                f"on {PASS_SHARE:.0%} of rows, so there IG is not tested against the head (raise --rows or lower "
                "--noise)"
            )
        lines.append(f"the LOLO effects ({ablation}) rank it first {_count(truth, seeds)}" + note)
    random = methods.get(("laya", "random"))
    measured = f"; random attribution on the LAYA head did on {_shares(random)}" if random else ""
    lines.append(
        f"the random reference ranks it first on 1/L = {across['random_floor']:.1%} of rows in expectation{measured}"
    )
    if "laya" in across["constant"]:
        shares = _shares(across["constant"]["laya"])
        lines.append(
            f"compare's constant rule (the mean α, cross-fitted) ranks it first on {shares} of rows: every row has "
            "the same answer here, so this check shows that a method finds the layer, not "
            "that it follows the input"
        )
    lines.append(
        f"no verdict on {counted_list('construction seed', seeds)}: the LAYA head is near chance on every one; rerun "
        "with lower --noise or more --rows"
        if set(near) >= set(seeds)
        else f"this verdict holds for construction seeds {_seeds(seeds)} (each its own backbone, data and fit): a "
        "method passes only when it passes on every one of them; seeds not run can still fail"
        + (
            f"; on {counted_list('construction seed', near)} the LAYA head is near chance, so "
            f"{'that seed tests' if len(near) == 1 else 'those seeds test'} nothing"
            if near
            else ""
        )
    )
    return lines
