"""The one line that states the settings deciding a command's numbers, those left at their defaults
said apart: numbers read without them could come from any budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.text import Text

from ..training.stats import counted, counted_list

ONE_LINE = 10**6  # a width no settings line reaches: report.html's page wraps it itself


NO_REFIT = "--no-refit refits nothing"
# diagnose with --bootstrap 0 over several heads: no head's own interval, the t over heads still shown
_NO_OWN_INTERVALS = " (no head's own intervals: errors.csv holds points only; the intervals shown are t over heads)"


def _g(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _said(name: str, value: Any, text: Callable[[Any], str] | None = None) -> str:
    """A setting's item, "max drop 0.005" (``text`` of the value where it reads otherwise), or "max drop not
    recorded" for a summary written before it recorded that setting: "max drop None" read as a value."""
    if value is None:
        return f"{name} not recorded"
    return text(value) if text else f"{name} {_g(value)}"


def _left(record: dict[str, Any], *names: str, of: str = "config_defaults") -> bool | None:
    """Whether every option in ``names`` was left at its default (each listed in ``record[of]``); None
    for a record from before it listed them, whose line gives the values alone."""
    given = record.get(of)
    return all(n in given for n in names) if isinstance(given, list) else None


def seeds_text(seeds: list[Any]) -> str:
    """ "seeds 0 to 4" (no ellipsis: on the terminal "…" says a cell was cut), "seed 3", "seeds 0, 3, 7"."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"seeds {seeds[0]} to {seeds[-1]}"
    return counted_list("seed", seeds)


def fit_settings_line(summary: dict[str, Any], width: int = 100) -> Text | None:
    """The settings that decide a fit's numbers, those left at their defaults said apart: accuracies
    read without them could come from any budget. Optional settings show only when changed."""
    c = summary.get("config")
    if not isinstance(c, dict):
        return None
    t, hp = summary.get("training") or {}, summary.get("hparams") or {}
    grid = " (grid)" if c.get("grid") else ""
    seeds = c.get("seeds") or []
    val = _said("validation", c.get("val_fraction"), lambda v: f"validation {_g(v)} of {c.get('train_split', 'train')}")
    epochs = t.get("epochs", c.get("epochs"))
    items: list[tuple[tuple[str, ...], str, bool]] = [  # (fields, text, shown when left at default)
        (("d_star", "grid"), _said("d*", hp.get("d_star", c.get("d_star")), lambda v: f"d*={_g(v)}{grid}"), True),
        (("tau", "grid"), _said("τ", hp.get("tau", c.get("tau")), lambda v: f"τ={_g(v)}{grid}"), True),
        (("psi", "grid"), _said("ψ", hp.get("psi", c.get("psi")), lambda v: f"ψ {v}{grid}"), False),
        (
            ("score_width", "grid"),
            _said("scorer width", hp.get("score_width"), lambda v: f"scorer width {_g(v)}{grid}"),
            False,
        ),
        (("standardize",), _said("standardize", c.get("standardize")), False),
        (("lr",), _said("lr", c.get("lr")), True),
        (("weight_decay",), _said("weight decay", c.get("weight_decay")), True),
        (("epochs",), _said("epochs", epochs, lambda v: f"≤ {_g(v)} epochs"), True),
        (("patience",), _said("patience", t.get("patience", c.get("patience")), lambda v: _patience(v, epochs)), True),
        (("monitor",), _said("early stopping", c.get("monitor"), lambda v: f"early stopping on validation {v}"), False),
        (("val_fraction", "train_split"), val, True),  # the text names the split the rows are drawn from
        (("test_split",), _said("test split", c.get("test_split"), lambda v: f"tested on {v}"), False),
        (("val_mode",), _said("validation rows", c.get("val_mode"), lambda v: f"validation rows: {v}"), False),
        (("split_seed",), _said("split seed", c.get("split_seed")), False),
        (("seeds",), seeds_text(seeds) if seeds else "seeds not recorded", True),
        (("batch_size",), _said("batch", c.get("batch_size")), True),
        (
            ("device",),
            _said("device", summary.get("device", c.get("device"))) + " (auto)" * (c.get("device") == "auto"),
            True,
        ),
    ]
    left = [_left(summary, *fs) for fs, _, _ in items]
    return settings_line([(text, d) for (_, text, shown), d in zip(items, left) if shown or d is False], width)


def compare_settings_line(s: dict[str, Any], width: int = 100) -> Text:
    """The settings behind compare's scores, each where it acts (IG's only where IG ran, Grad-CAM's
    ReLU only where Grad-CAM did), from its summary.json: compare and `report DIR` print the same line."""
    from .reading import bootstrap_text

    c = s.get("config") or {}
    ran = c.get("methods_resolved")  # None: a summary from before it recorded them; every setting said

    items = [
        (f"target {s['target']}", _left(s, "target")),
        (f"effect {s.get('effect', 'prob')}", _left(s, "effect")),
        (f"ablation {', '.join(s.get('ablations') or [s['ablation']])}", _left(s, "ablation")),
    ]
    if ran is None or "ig" in ran:  # IG's steps change its scores: said beside its baseline
        steps = f", {c['n_steps']} steps" if c.get("n_steps") else ""
        items.append((f"IG baseline {s['baseline']}{steps}", _left(s, "baseline", "n_steps")))
    if "relu" in c and (ran is None or "gradcam" in ran):  # ReLU zeroes Grad-CAM's negative scores
        items.append((f"Grad-CAM {'with' if c['relu'] else 'without'} ReLU", _left(s, "relu")))
    items += [(f"seed {s['seed']}", _left(s, "seed")), (bootstrap_text(s), _left(s, "n_boot"))]
    return settings_line(items, width)


def _patience(patience: Any, epochs: Any) -> str:
    """ "patience 5"; a patience of at least the epochs after the first stops nothing early (the first
    epoch is always a new best, so the first stop comes after patience + 1 epochs: with patience
    epochs − 1, at the last one), and "≤ 3 epochs · patience 37" read as if it could."""
    if isinstance(patience, int) and isinstance(epochs, int) and patience >= epochs - 1:
        after = epochs - 1
        return f"no early stop (patience {patience} ≥ the {counted(after, 'epoch')} after the first)"
    return f"patience {_g(patience)}"


def _seeds_item(s: dict[str, Any]) -> list[tuple[str, str]]:
    """The refit seeds: --seeds for one head; for several LAYA heads, whose seeds were read from the
    folder (the header names them: "over 2 fitted LAYA heads (seeds 0, 1)"), only a --seeds given,
    which must match their number."""
    n = (s.get("config") or {}).get("seeds")
    if len(s.get("alpha_heads") or []) > 1:
        return [(f"seeds {n} (one per fitted LAYA head)", "seeds")] if _left(s, "seeds") is False else []
    return [(counted(n, "seed") if isinstance(n, int) else _said("seeds", n), "seeds")]


def _inert(s: dict[str, Any], given: Sequence[tuple[str, str]], why: str, of: str = "config_defaults") -> list[Any]:
    """Settings given, (text, field) each, that decide nothing in this run, said as given with ``why``:
    left out, a line could read "all left at their defaults" over a --seed the user gave."""
    return [(f"{text} ({why})", False) for text, name in given if _left(s, name, of=of) is False]


def _no_number(s: dict[str, Any]) -> list[Any]:
    """--workers, --threads and --plots as given: they change how a run goes, never a number."""
    c = s.get("config") or {}
    flags = {"workers": f"--workers {c.get('workers')}", "threads": f"--threads {c.get('threads')}"}
    flags["plots"] = "--plots" if c.get("plots", True) else "--no-plots"
    return _inert(s, [(text, name) for name, text in flags.items() if name in c], "no effect on the numbers")


def beyond_settings_line(s: dict[str, Any], width: int = 100) -> Text:
    """prune's, early-exit's or diagnose's settings, each where it acts, from its summary.json, so that
    `report DIR` restates the line the command printed (values alone for a summary from before
    ``config_defaults``)."""
    c, b, kind = s.get("config") or {}, s.get("budget") or {}, s.get("command")

    items: list[tuple[str, bool | None]] = []
    inert: list[tuple[str, bool]] = []  # settings given that decide nothing in this run: said last, marked
    epochs, patience = b.get("epochs_patience") or (None, None)
    if epochs is not None and c.get("refit", True):  # prune --no-refit refits nothing: no budget to state
        items += [
            (f"refits ≤ {epochs} epochs", _left(s, "epochs", of="budget_defaults")),
            (_patience(patience, epochs), _left(s, "patience", of="budget_defaults")),
            (_said("lr", b.get("lr")), _left(s, "lr", of="budget_defaults")),
            (_said("weight decay", b.get("weight_decay")), _left(s, "weight_decay", of="budget_defaults")),
            (_said("batch", b.get("batch_size")), _left(s, "batch_size", of="budget_defaults")),
        ]
        if b.get("train_limit") is not None:
            items.append((f"≤ {b['train_limit']:,} train rows", False))
    elif epochs is not None:  # the refit budget a user gave to a run with no refits
        wd, limit = b.get("weight_decay"), b.get("train_limit")
        budget = [(f"--epochs {epochs}", "epochs"), (f"--patience {patience}", "patience")]
        budget += [(f"--lr {_g(b.get('lr'))}", "lr"), (f"--weight-decay {_g(wd)}", "weight_decay")]
        budget += [(f"--batch-size {b.get('batch_size')}", "batch_size"), (f"--train-limit {limit}", "train_limit")]
        inert += _inert(s, budget, f"decides nothing here: {NO_REFIT}", of="budget_defaults")
    own: list[tuple[str, str]] = []  # (text, field)
    if kind == "prune":  # --ablation acts under --no-refit only; --seeds under --refit, --search there without --ks
        refit = c.get("refit")
        own += [(_said("max drop", c.get("max_drop")), "max_drop")]
        own += [] if refit else [(_said("ablation", c.get("ablation")), "ablation")]
        own += [(_said("ranking rows", c.get("rank_rows"), lambda n: f"rankings on ≤ {n:,} train rows"), "rank_rows")]
        # --ks replaces the search: the layer counts tried are the ones every comparison reads
        own += [(f"layer counts {','.join(map(str, c['ks']))}", "ks")] if c.get("ks") else []
        own += [(_said("search", c.get("search")), "search")] if refit and not c.get("ks") else []
        own += _seeds_item(s) if refit else []
        own += [(_said("row seed", c.get("seed")), "seed")]
        search = f"--search {c.get('search')}", "search"
        if refit:
            inert += _inert(
                s, [(f"--ablation {c.get('ablation')}", "ablation")], "decides nothing here: it acts under --no-refit"
            )
            inert += _inert(s, [search], "decides nothing here: --ks gives the layer counts") if c.get("ks") else []
        elif refit is not None:
            inert += _inert(s, [search, (f"--seeds {c.get('seeds')}", "seeds")], f"decides nothing here: {NO_REFIT}")
    elif kind == "early-exit":  # --seed draws --train-limit's rows and nothing else
        own += [(_said("ε", c.get("epsilon"), lambda e: f"ε={_g(e)}"), "epsilon")]
        own += [(_said("thresholds", c.get("thresholds"), lambda n: f"{n} thresholds"), "thresholds")]
        own += _seeds_item(s)
        if b.get("train_limit") is not None:
            own += [(_said("row seed", c.get("seed")), "seed")]
        else:
            inert += _inert(s, [(f"--seed {c.get('seed')}", "seed")], "decides nothing here: no --train-limit")
    else:  # diagnose: the seed draws the bootstrap (none with --bootstrap 0) and --against's permutations
        one, against, n_boot = len(s.get("heads") or []) == 1, bool(s.get("against")), c.get("n_boot")
        if n_boot is None or n_boot > 0 or against:  # not recorded: whether the seed drew anything is not known
            own += [(_said("seed", c.get("seed")), "seed")]
        else:
            why = "decides nothing here: --bootstrap 0 and no --against"
            inert += _inert(s, [(f"--seed {c.get('seed')}", "seed")], why)
        # over several heads the intervals shown are t over them: the bootstrap draws each head's own, in errors.csv;
        # --bootstrap 0 draws none, so each head's AUROCs are points (and one head's differences are not read)
        if n_boot == 0:
            drawn = " (no intervals drawn: AUROCs as points only)" if one else _NO_OWN_INTERVALS
        else:
            drawn = "" if one else " (each head's own intervals, errors.csv)"
        own += [(_said("bootstrap", n_boot, lambda n: f"bootstrap {n:,}{drawn}"), "n_boot")]
        permutations = _said("permutations", c.get("permutations"), lambda n: f"{n:,} permutations")
        own += [(permutations, "permutations")] if against else []
        # its rows, fitted (the score combinations) and measured on: the settings every diagnose run has
        own += [
            (_said("train split", c.get("train_split")), "train_split"),
            (_said("test split", c.get("test_split")), "test_split"),
        ]
    items += [(text, _left(s, name)) for text, name in own]
    if s.get("scalarmix_dir"):  # prune --scalarmix: one more ranking, and one more comparison in α's family
        heads = len((s.get("scalarmix") or {}).get("heads") or [None])  # summaries before it: one head
        items.append(
            (f"ScalarMix {'head' if heads == 1 else f'heads ({heads}, one per seed)'} {s['scalarmix_dir']}", False)
        )
    # the rows the numbers are fitted and measured on, and prune's and early-exit's compute: given or not,
    # as diagnose states its splits above
    words = {"train_split": "train split", "test_split": "test split", "costs": "costs"}
    if kind != "diagnose":
        said = {"costs": _costs_text(s)}  # what auto chose, as the device's "(auto)" below
        items += [(said.get(name) or _said(word, c[name]), _left(s, name)) for name, word in words.items() if name in c]
    # every command's: the device the refits or scores ran on (its floating point moves the last digits),
    # and a head from a cache with another fingerprint, accepted only when asked
    ran = s.get("device")  # the device auto chose, in summaries that record it
    auto = f"device {ran} (auto)" if c.get("device") == "auto" and ran else None
    items += [(auto or f"device {c['device']}", _left(s, "device"))] if "device" in c else []
    items += (
        [("a head of another cache accepted", False)]
        if c.get("allow_other_cache") and not _left(s, "allow_other_cache")
        else []
    )
    return settings_line(items + inert + _no_number(s), width)


def _costs_text(s: dict[str, Any]) -> str:
    """prune's or early-exit's compute item: "costs shapes", or what auto chose, "costs model (auto)", as
    "device cpu (auto)" says it (a summary without its costs' source: "costs auto")."""
    asked, source = (s.get("config") or {}).get("costs"), (s.get("costs") or {}).get("source")
    return f"costs {source} (auto)" if asked == "auto" and source else f"costs {asked}"


def demo_settings_line(record: dict[str, Any], width: int = 100) -> Text:
    """The demo's own settings (its steps' settings follow from them: the commands under the page say
    each), from demo.json: values alone for a record from before ``config_defaults``."""
    c, b = record.get("config") or {}, record.get("budget") or {}

    root = f" from {c['data_root']}" if c.get("data_root") else ""
    items: list[tuple[str, bool | None]] = [
        (_said("dataset", c.get("dataset"), lambda v: f"dataset {v}{root}"), _left(record, "dataset", "data_root")),
        ("budget --quick" if c.get("quick") else "full budget (no --quick)", _left(record, "quick")),
        (
            _said("heads' seeds", b.get("seeds"), lambda n: f"heads fitted with {seeds_text(list(range(n)))}"),
            _left(record, "seeds"),
        ),
        (_said("seed", c.get("seed"), lambda v: f"seed {v} (backbone and compare)"), _left(record, "seed")),
        (_said("device", c.get("device")), _left(record, "device")),
    ]
    if c.get("threads") is not None:
        items.append((f"{c['threads']} threads", _left(record, "threads")))
    return settings_line(items, width)


def settings_line(items: Sequence[tuple[str, bool | None]], width: int = 100) -> Text:
    """The settings that decide a command's numbers, (text, left at its default) each, those left at
    their defaults said apart (None: not known, the values alone), within ``width`` columns."""
    if any(d is None for _, d in items):
        return _wrapped([("settings:", [text for text, _ in items])], width)
    given, kept = [text for text, d in items if not d], [text for text, d in items if d]
    if not given:
        return _wrapped([("settings, all left at their defaults:", kept)], width)
    return _wrapped([("settings given:", given), ("left at their defaults:", kept)], width)


def _wrapped(groups: list[tuple[str, list[str]]], width: int) -> Text:
    """Each group's label and items joined by " · ", the groups by "; ", broken only between items
    (a value never parted from its name) within ``width`` columns, continued two spaces in. An item
    longer than a line of its own follows the one before it and breaks between its words: broken
    before it, it left that item alone on a line ("seed 0 ·") and was cut again by the terminal."""
    lines, line = [], ""
    for label, texts in groups:
        for i, text in enumerate(texts):
            piece = f"{label} {text}" if i == 0 else text
            sep = "" if not line.strip() else ("; " if i == 0 else " · ")
            whole = len(piece) + 4 <= width  # 4: the indent and the separator left behind
            if whole and line.strip() and len(line) + len(sep) + len(piece) + 2 > width:
                lines.append(line + sep.rstrip())
                line, sep = "  ", ""
            start = len(line) + len(sep)
            line += sep + piece
            while len(line) + 2 > width:
                # between the piece's words, or after the separator before it (never before a "·"); a word
                # longer than a line (a path) stays whole on a line of its own, for the terminal to wrap
                spaces = [i for i in range(max(start - 1, 3), len(line)) if line[i] == " "]
                fits = [i for i in spaces if i < width - 1]
                if not (cut := fits[-1] if fits else next(iter(spaces), 0)):
                    break
                lines.append(line[:cut])
                line, start = "  " + line[cut + 1 :], 2
    return Text("\n".join([*lines, line]))
