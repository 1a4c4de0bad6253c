"""Explain one prediction: for one row of a cache split, its input (read back from the data source the
cache records), the head's prediction, and per layer every attribution method's score beside the
leave-one-layer-out (LOLO) effect — the same computations as `compare` (compare.attribution,
compare.lolo; definitions in docs/METHOD.md), on one row.

:func:`explain_row` computes; :func:`explain_figure` draws the input beside the per-layer scores.
"""

from __future__ import annotations

import copy
import json
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .cache.store import FeatureStore
from .errors import InputError, LayaError, name_of
from .files import atomic_path, output_lock, plain, special_file
from .out_dir import check_out, claimed_by, put_record, take_record

# Random scores say nothing about one row: explain runs every other method defined for the head.
EXPLAIN_METHODS = ("alpha", "alpha-contrib", "ig", "gradcam", "static")
# resample: donors drawn for the row, one per draw; the effect is their mean, with its spread and interval
EXPLAIN_DRAWS = 32
MAX_EXPLAIN_DRAWS = 1024
# What one row cannot tell: the verdicts are read over many rows, against the constant rule.
VERDICT_NOTE = (
    "one row shows how each method ranks the layers here, not whether it can be trusted: whether a method "
    "beats the constant rule (one layer profile for every input) is a verdict over many rows, with paired "
    'intervals: see `laya-inspect compare` (docs/METHOD.md, "The constant rule and paired differences")'
)


@dataclass
class InputView:
    """The row's raw input: ``kind`` "image" (``image`` (H, W) or (H, W, 3) in [0, 1]), "text"
    (``text``), or None with ``note`` saying why it is not shown; ``source``: what names the row beside
    its number: the file it was read from, relative to the data's folder, where the data are files (an
    image folder), the start of a text, quoted, else ""; ``line``: the row's line in ``file``, where the
    data are a file of lines (CSV, TSV, JSONL): 1-based, header and blank lines counted, as the data's
    warnings and errors name it."""

    kind: str | None
    image: np.ndarray | None = None
    text: str | None = None
    note: str = ""
    source: str = ""
    line: int | None = None
    file: str = ""

    def where(self, source_row: int) -> str:
        """ "line 5 of reviews.csv" where the data are a file of lines (a user finds the row in their
        editor so, and extract's warnings name it so), else "source row 3"; with its file or the start
        of its text: a row number alone names no image."""
        named = f"line {self.line} of {self.file}" if self.line is not None else f"source row {source_row}"
        return named + (f": {self.source}" if self.source else "")


@dataclass
class Explanation:
    head: str
    head_kind: str
    split: str
    row: int  # row of the cache split
    source_row: int  # row in the data source (the cache's index)
    layer_names: list[str]
    class_names: list[str]
    label: int
    pred: int
    probs: np.ndarray  # (C,)
    target: int  # the class explained
    target_rule: str  # pred | true | class
    ablation: str
    p: float  # probability of the target class
    p_ablated: np.ndarray  # (L,) the target's logit or probability (``effect``) with layer i ablated (mean over draws)
    effects: np.ndarray  # (L,) its drop when layer i is ablated (resample: the mean over ``draws`` donors)
    scores: dict[str, np.ndarray] = field(default_factory=dict)  # method → (L,)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    input: InputView = field(default_factory=lambda: InputView(None, note="not read"))
    # what p_ablated and effects are measured on: "logit" (the target logit, compare's default) or "prob"
    effect: str = "prob"
    # what extract warned about the cache
    cache_warnings: list[str] = field(default_factory=list)
    # what is said of the head: another cache, its training rows, fit-head's quality gate
    head_warnings: list[str] = field(default_factory=list)
    # resample: donors drawn (one per draw); 1 for a deterministic ablation
    draws: int = 1
    effects_sd: np.ndarray | None = None  # (L,) the effect's spread over the draws (ddof 1); None: deterministic
    effects_ci: np.ndarray | None = None  # (L, 2) 95% t-interval of the mean effect over the draws
    # (L,) the top layer and every layer the draws do not tell apart from it (a paired 95% t-interval of
    # the difference holding 0); None: deterministic, the top is the largest value
    effects_tied: np.ndarray | None = None
    # the options that decide the numbers, as given, and the names of those left at explain_row's defaults
    config: dict[str, Any] = field(default_factory=dict)
    config_defaults: list[str] = field(default_factory=list)
    device: str = ""  # the device the scores ran on (--device auto resolved)
    # (L,) the head's mean layer weights over the split's finite rows: the constant rule's profile, what
    # every row gets; None for a head without layer weights. profile_rows: how many rows it is the mean of
    profile: np.ndarray | None = None
    profile_rows: int = 0

    def class_name(self, c: int) -> str:
        return name_of(self.class_names, c)

    def to_dict(self) -> dict[str, Any]:
        return plain(
            {
                "head": self.head,
                "kind": self.head_kind,
                "split": self.split,
                "row": self.row,
                "source_row": self.source_row,
                "source_line": self.input.line,
                "label": self.class_name(self.label),
                "pred": self.class_name(self.pred),
                "target": self.class_name(self.target),
                "target_rule": self.target_rule,
                "p_target": self.p,
                "probs": dict(zip(map(self.class_name, range(len(self.probs))), self.probs)),
                "ablation": self.ablation,
                "effect": self.effect,
                "draws": self.draws,
                "lolo_effect_note": LOLO_NOTE if self.effects_sd is not None else "deterministic: one removal",
                **(
                    {"lolo_top": [n for i, n in enumerate(self.layer_names) if self.effects_tied[i]]}
                    if self.effects_tied is not None
                    else {}
                ),
                "layers": {
                    name: {
                        "lolo_effect": self.effects[i],
                        **(
                            {"lolo_effect_sd": self.effects_sd[i], "lolo_effect_ci": list(self.effects_ci[i])}
                            if self.effects_sd is not None and self.effects_ci is not None
                            else {}
                        ),
                        # the target's logit (effect "logit") or probability ("prob") with the layer ablated
                        ("logit_ablated" if self.effect == "logit" else "p_ablated"): self.p_ablated[i],
                        **{m: s[i] for m, s in self.scores.items()},
                        **({"constant_rule": self.profile[i]} if self.profile is not None else {}),
                    }
                    for i, name in enumerate(self.layer_names)
                },
                "constant_rule": None
                if self.profile is None
                else {
                    "rows": self.profile_rows,
                    "rule": f"mean layer weights over the {self.split} split's finite rows",
                },
                "skipped": self.skipped,
                "input": {
                    "kind": self.input.kind,
                    "text": self.input.text,
                    "note": self.input.note,
                    "source": self.input.source or None,
                    "file": self.input.file or None,
                },
                "cache_warnings": self.cache_warnings,
                "head_warnings": self.head_warnings,
                "verdict": VERDICT_NOTE,
                "config": self.config,
                "config_defaults": self.config_defaults,
                "device": self.device,
            }
        )


LOLO_NOTE = (
    "resample: lolo_effect is the mean over `draws` donors drawn for this row (one each, seeded by --seed), "
    "lolo_effect_sd their spread, lolo_effect_ci the 95% t-interval of the mean: one donor is not the effect"
)

RELATIVE_NOTE = (
    " (a relative path in the cache's data_spec is read from the current folder: run explain from the one "
    "extract ran in)"
)


def read_input(store: FeatureStore, split: str, source_row: int, label: int) -> InputView:
    """The raw input of one source row, from the dataset the cache was extracted from; a source
    that cannot be read here gives a view with the reason instead of an error."""
    from .data import DATASETS, parse_spec
    from .data.text import EMPTY_TEXT, blank_text

    spec = store.attrs.get("data_spec")
    info = store.attrs.get("split_info") or {}
    arg = None
    try:
        prefix, arg, options = parse_spec(str(spec))
        src = DATASETS.get(prefix).load(
            store.recorded_path(arg),
            options,
            seed=int(info.get("seed", store.attrs.get("seed") or 0)),
            test_fraction=float(info.get("test_fraction", 0.2)),
            channels=None,
            allow_nonfinite=True,
        )
        part = src.open(split)
        rows = np.asarray(part.rows)
        where = np.flatnonzero(rows == source_row)
        if not len(where):
            return InputView(None, note=f"row {source_row} is not in split {split!r} of {spec} as read here")
        if int(part.labels[where[0]]) != label:
            return InputView(
                None,
                note=f"{spec} now labels source row {source_row} {int(part.labels[where[0]])}, the cache says "
                f"{label}: the data changed since extraction",
            )
        moved = _rows_changed(rows, np.asarray(part.labels), store.index(split), store.labels(split))
        if moved:
            return InputView(
                None,
                note=f"{spec} as read here differs from the cache's split {split!r} on {moved} of {store.n(split)} "
                "rows (a row gone or labelled otherwise: files added, removed or renamed), so source row "
                f"{source_row} may be another input than the one explained: the data changed since extraction",
            )
        raw = part.fetch(np.array([source_row]))
        source = _file_of(src.location, part.headers, source_row)
    except (LayaError, OSError) as e:
        unknown = arg and not Path(arg).is_absolute() and not store.attrs.get("working_dir")
        relative = RELATIVE_NOTE if unknown else ""
        return InputView(None, note=f"input not shown: {e}{relative}")
    if isinstance(raw, list) and raw and isinstance(raw[0], str):
        note = f"an empty text: its {EMPTY_TEXT}" if blank_text(raw[0]) else _cut_note(store, raw[0])
        line = src.lines[source_row] if src.lines is not None else None
        file = Path(src.location).name if line is not None else ""
        return InputView("text", text=raw[0], note=note, source=_text_start(raw[0]), line=line, file=file)
    x = raw[0]
    arr = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x)
    if arr.ndim != 3:
        return InputView(None, note=f"the input is a vector of {arr.size} numbers: no picture to show")
    arr = arr.astype(np.float64) / (255.0 if arr.dtype == np.uint8 else 1.0)
    img = np.clip(np.moveaxis(arr, 0, -1), 0.0, 1.0)  # (H, W, C)
    return InputView("image", image=img[..., 0] if img.shape[-1] == 1 else img[..., :3], source=source)


SOURCE_CHARS = 60  # of a text named beside its row number: about a file name's length


def _text_start(text: str) -> str:
    """The text's first SOURCE_CHARS characters, quoted as Python writes a string: a newline or a
    direction override as an escape, so the name stays on its line and in its order."""
    return repr(text if len(text) <= SOURCE_CHARS else text[: SOURCE_CHARS - 1] + "…")


def _file_of(location: str, headers: Any, source_row: int) -> str:
    """The file holding ``source_row``, relative to ``location`` where it lies inside it; "" for data
    that are no files (arrays, a table's records)."""
    if headers is None:
        return ""
    path = Path(headers(np.array([source_row]))[0].path)
    try:
        return str(path.relative_to(location)) if location else str(path)
    except ValueError:
        return str(path)


def _cut_note(store: FeatureStore, text: str) -> str:
    """What the row's view must say when the model read only part of ``text`` (the tokenizer's
    ``max_length`` the cache records): the explanation is of that part alone."""
    from .data.text_checks import token_lengths

    transforms = store.attrs.get("transforms") or {}
    top = transforms.get("max_length") if isinstance(transforms, dict) else None
    prefix, _, arg = str(store.attrs.get("model_spec") or "").partition(":")
    if not top or not transforms.get("truncation") or prefix != "hf":
        return ""
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(store.recorded_path(arg)), local_files_only=True)
        n = token_lengths([text], tokenizer)[0]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError) as e:
        unknown = "whether it read all of this one is not known here"
        return f"the model reads at most {top} tokens of a text; {unknown} ({e})"
    if n <= int(top):
        return ""
    part = "last" if getattr(tokenizer, "truncation_side", "right") == "left" else "first"
    return f"this text is {n} tokens long: the model read only its {part} {top}, so that part alone is explained"


def _rows_changed(rows: np.ndarray, labels: np.ndarray, cached_rows: np.ndarray, cached_labels: np.ndarray) -> int:
    """How many of the cache's rows the source as read now lacks or labels otherwise. One row's label
    is not enough: a file removed before it renumbers the rows after it, and the row's new file
    is most often of the same class (the files of a class are read in a run)."""
    if not len(rows):
        return len(cached_rows)
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    at = np.minimum(np.searchsorted(sorted_rows, cached_rows), len(rows) - 1)
    same = (sorted_rows[at] == cached_rows) & (labels[order][at] == cached_labels)
    return int(len(cached_rows) - same.sum())


def explain_row(
    head_dir: str | Path,
    store: FeatureStore,
    *,
    row: int,
    split: str = "test",
    target: str = "pred",
    ablation: str = "resample",  # compare's default pair (docs/METHOD.md, "The default pair")
    baseline: str = "mean",
    n_steps: int = 50,
    seed: int = 0,
    device: str = "auto",
    allow_other_cache: bool = False,
    effect: str = "logit",
    draws: int = EXPLAIN_DRAWS,
) -> Explanation:
    """Every method's per-layer score and the LOLO effects of ``head_dir`` on row ``row`` of ``split``,
    measured on the target logit (``effect="logit"``, compare's default) or its probability ("prob").
    Under ``resample`` the effect is the mean over ``draws`` donors drawn for the row (one per draw,
    ``default_rng([seed, 5])``), with its spread and the 95% t-interval of the mean over the draws."""
    import torch

    from .compare.attribution import BASELINE_CHOICES, AttributionOptions, attribute, plan_methods
    from .compare.config import MAX_IG_STEPS, resolve_target
    from .compare.draws import RowSpan
    from .compare.loaded import head_warnings, load_heads, nonfinite_logits
    from .compare.lolo import ABLATIONS, check_ablation, lolo_effects
    from .compare.values import donor_pool, layer_means
    from .head_dir import cache_warnings, store_for_heads
    from .options import check_seed, range_text, within
    from .runtime import pick_device

    if baseline not in BASELINE_CHOICES:  # the options first, before anything is read
        raise InputError(f"--baseline must be one of {', '.join(BASELINE_CHOICES)}, got {baseline!r}")
    if not within(n_steps, 1, MAX_IG_STEPS):  # compare's bound: IG holds n_steps scaled inputs at once
        raise InputError(f"--n-steps {range_text(1, MAX_IG_STEPS)}, got {n_steps}")
    check_seed(seed)
    if not within(draws, 2, MAX_EXPLAIN_DRAWS):
        raise InputError(f"--draws {range_text(2, MAX_EXPLAIN_DRAWS)}, got {draws}")
    store = store_for_heads(store, [head_dir])  # prune's head of the layers it keeps reads only those
    n = store.n(split)  # NotFoundError naming the splits
    if not 0 <= row < n:
        raise InputError(f"--row {row} is outside split {split!r} of {store.path}, which has rows 0…{n - 1}")
    target_of = resolve_target(target, store.class_names, store.num_classes)
    dev = pick_device(device)
    loaded = load_heads([head_dir], store, allow_other_cache, dev)
    (name, (head, _cfg, _d)), *_ = loaded.items()
    abl = check_ablation(ablation, {name: head})
    rows = np.array([row])
    feats = store.layers(split, rows)
    if not all(np.isfinite(f).all() for f in feats):
        raise InputError(f"row {row} of split {split!r} holds non-finite features (NaN or ±inf); pick another row")
    label = int(store.labels(split, rows)[0])
    hs = [torch.from_numpy(np.ascontiguousarray(f)).to(dev) for f in feats]
    with torch.no_grad():
        out = head(hs)
        probs = torch.softmax(out.logits.double(), -1)[0].cpu().numpy()
    if not torch.isfinite(out.logits).all():  # finite features can still overflow the head: compare's refusal
        raise nonfinite_logits(name, head_dir, split, np.array([False]), row=row)
    pred = int(probs.argmax())
    cls = target_of if isinstance(target_of, int) else pred if target_of == "pred" else label
    if cls in head.untrained_classes:
        raise InputError(
            f"class {name_of(store.class_names, cls)!r} had no training rows: head {head_dir} never learnt it "
            "(its logit is held below every other), so no layer can be scored for it; explain --target pred or a "
            "class the head was trained on"
        )
    means = layer_means(store, "train") if baseline == "mean" or abl.needs_baselines else None
    options = AttributionOptions(baselines=means, baseline=baseline, n_steps=n_steps, seed=seed, batch_size=1)
    run, skipped = plan_methods(list(EXPLAIN_METHODS), {name: head}, explicit=False)[name]
    tgt = np.array([cls])
    scores, params = {}, {}
    for m in run:
        att = attribute(m, head, hs, tgt, options)
        scores[m], params[m] = att.scores[0], att.params
    head64 = copy.deepcopy(head).to(torch.float64).eval()
    n_draws = draws if abl.needs_donors else 1
    # resample: the row repeated once per draw, each copy given its own seeded donor, so the draws are
    # seen one by one (compare averages 4 donors per row: its value for a row is one such average)
    _p, p_abl, effects = lolo_effects(
        head64,
        [h.repeat(n_draws, *([1] * (h.dim() - 1))) for h in hs],
        np.repeat(tgt, n_draws),
        ablation,
        means if abl.needs_baselines else None,
        donors=donor_pool(store, "train", seed=seed) if abl.needs_donors else None,
        draws=1,
        seed=seed,
        effect=effect,
        span=RowSpan(),
    )
    sd = ci = tied = None
    if n_draws > 1:
        from .training.stats import t_interval

        sd = effects.std(axis=0, ddof=1)
        ci = np.array([t_interval(effects[:, i]) for i in range(effects.shape[1])])
        tied = tied_with_top(effects)
    profile, profile_rows = split_profile(head, store, split, dev)
    source_row = int(store.index(split, rows)[0])
    config = {"target": target, "effect": effect, "ablation": ablation, "draws": draws, "baseline": baseline}
    config |= {"n_steps": n_steps, "seed": seed, "device": device, "allow_other_cache": allow_other_cache}
    return Explanation(
        head=name,
        head_kind=head.kind,
        split=split,
        row=row,
        source_row=source_row,
        layer_names=store.layer_names,
        class_names=store.class_names,
        label=label,
        pred=pred,
        probs=probs,
        target=int(cls),
        target_rule="class" if isinstance(target_of, int) else str(target_of),
        ablation=ABLATIONS.get(ablation).name,
        p=float(probs[cls]),
        p_ablated=p_abl.mean(axis=0),
        effects=effects.mean(axis=0),
        draws=n_draws,
        effects_sd=sd,
        effects_ci=ci,
        effects_tied=tied,
        scores=scores,
        params=params,
        skipped=skipped,
        input=read_input(store, split, source_row, label),
        effect=effect,
        cache_warnings=cache_warnings(store),
        head_warnings=head_warnings(loaded, store, split),  # another cache, its training rows, fit-head's gate
        config=config,
        config_defaults=_left_at_defaults(config),
        device=str(dev),
        profile=profile,
        profile_rows=profile_rows,
    )


def tied_with_top(effects: np.ndarray) -> np.ndarray:
    """(L,) bool: the layer of the largest mean effect over the draws (rows of ``effects``), and every layer
    whose paired 95% t-interval of (top − layer) over the same draws holds 0. Each draw ablates every layer
    with one donor, so the differences are paired; intervals that overlap are not read as a tie or a win."""
    from .training.stats import t_interval

    means = effects.mean(axis=0)
    finite = ~np.isnan(means)
    tied = np.zeros(means.shape, dtype=bool)
    if not finite.any():
        return tied
    top = int(np.nanargmax(means))
    for i in np.flatnonzero(finite):
        low, high = t_interval(effects[:, top] - effects[:, i])
        tied[i] = i == top or not low > 0  # a NaN bound (one draw) cannot tell them apart
    return tied


def tie_line(e: Explanation) -> str | None:
    """The words under the table where the draws do not tell the LOLO effect's top layer from others."""
    if e.effects_tied is None or e.effects_tied.sum() < 2:
        return None
    top = int(np.nanargmax(e.effects))
    others = [n for i, n in enumerate(e.layer_names) if e.effects_tied[i] and i != top]
    return (
        f"LOLO effect: {e.layer_names[top]} is not told apart from {', '.join(others)} over the {e.draws} draws "
        "(a paired 95% interval of each difference holds 0): each is starred, no one layer is the top"
    )


def profile_line(e: Explanation) -> str | None:
    """The head's mean α over the split (the constant rule's profile, what every row gets) beside this
    row's α, and whether the row's top layer is the profile's; None for a head without layer weights."""
    if e.profile is None or "alpha" not in e.scores:
        return None
    top, usual = int(np.argmax(e.scores["alpha"])), int(np.argmax(e.profile))
    said = ", ".join(f"{n} {w:.3f}" for n, w in zip(e.layer_names, e.profile))
    where = "its top layer too" if top == usual else f"this row's α tops {e.layer_names[top]} instead"
    return (
        f"mean α over the {e.profile_rows} {e.split} rows (the constant rule: the profile every row gets): {said}; "
        f"it tops {e.layer_names[usual]}, {where}"
    )


def split_profile(head: Any, store: FeatureStore, split: str, dev: Any) -> tuple[np.ndarray | None, int]:
    """(the head's mean layer weights over the split's finite rows, how many): the constant rule's
    profile, beside which one row's α says whether the row departs from what every row gets; (None, 0)
    for a head without layer weights."""
    import torch

    from .compare.lolo import forward_rows
    from .training.loop import STREAM_CHUNK_ROWS

    total, n = None, 0
    # chunk by chunk: one row's explanation must not hold the whole split, several times over, in memory
    for _, feats, _ in store.iter_chunks(split, STREAM_CHUNK_ROWS):
        ok = np.logical_and.reduce([np.isfinite(f).all(axis=1) for f in feats])
        if not ok.any():
            continue
        hs = [torch.from_numpy(np.ascontiguousarray(f[ok])).to(dev) for f in feats]
        _, weights = forward_rows(head, hs, 512)
        if weights is None:
            return None, 0
        part = np.asarray(weights, dtype=np.float64).sum(axis=0)
        total, n = (part if total is None else total + part), n + int(ok.sum())
    return (None, 0) if total is None else (total / n, n)


def _left_at_defaults(config: dict[str, Any]) -> list[str]:
    """The names in ``config`` whose value is :func:`explain_row`'s own default: the settings line says
    them apart from the ones a user chose."""
    import inspect

    params = inspect.signature(explain_row).parameters
    return [k for k, v in config.items() if k in params and params[k].default == v]


def explain_figure(e: Explanation) -> Any:
    """Input | per-layer scores of every method (normalised by Σ|score|, sign kept) | LOLO effects."""
    import textwrap

    from matplotlib.figure import Figure

    from .compare.plots import LOLO_COLOR, line_kw, method_style, wrap

    fig = Figure(figsize=(13, 4.2), layout="constrained")
    ax_in, ax_sc, ax_ef = fig.subplots(1, 3, gridspec_kw={"width_ratios": [0.8, 1.3, 1.0]})
    if e.input.kind == "image" and e.input.image is not None:
        ax_in.imshow(e.input.image, cmap="gray" if e.input.image.ndim == 2 else None, vmin=0, vmax=1)
        ax_in.set_title(wrap(f"input ({e.input.where(e.source_row)})", 3.3, 10), fontsize=10)  # the panel's width
        # a frame, no ticks: a white (or transparent-on-white) image on the white page looked like no panel
        ax_in.set_xticks([])
        ax_in.set_yticks([])
        for spine in ax_in.spines.values():
            spine.set_edgecolor("0.6")
    else:
        text = (e.input.text or "")[:600] if e.input.kind == "text" else ""
        # the note first: a text cut to the model's length runs past what the panel shows
        shown = "\n\n".join(textwrap.fill(s, 45) for s in (e.input.note, text) if s)
        ax_in.text(0.0, 1.0, shown, va="top", ha="left", fontsize=8, wrap=True)
        named = f"input text ({e.input.where(e.source_row)})" if e.input.kind == "text" else "input"
        ax_in.set_title(wrap(named, 3.3, 10), fontsize=10)
        ax_in.set_axis_off()
    x = np.arange(len(e.layer_names))
    for m, s in e.scores.items():
        norm = float(np.nansum(np.abs(s)))
        ax_sc.plot(x, s / norm if norm > 0 else s, label=m, **line_kw(method_style(m)))
    ax_sc.axhline(0, color="grey", lw=0.8)
    ax_sc.set_ylabel("score / Σ_layers |score|")
    ax_sc.set_title("what each method says (this input)", fontsize=10)
    yerr = None if e.effects_ci is None else np.abs(e.effects_ci.T - e.effects)  # (2, L): the 95% interval
    ax_ef.bar(x, e.effects, color=LOLO_COLOR, yerr=yerr, capsize=3)
    ax_ef.axhline(0, color="grey", lw=0.8)
    q = "f_c" if e.effect == "logit" else "p_c"
    ax_ef.set_ylabel(f"{q} − {q}(layer ablated)")
    drawn = f"\nmean of {e.draws} donors, 95% interval" if e.effects_ci is not None else ""  # on its own line: fits
    ax_ef.set_title(f"LOLO effect ({e.ablation} ablation; this input){drawn}", fontsize=10)
    for ax in (ax_sc, ax_ef):
        ax.set_xticks(x, e.layer_names, rotation=45 if len(x) > 4 else 0, ha="right" if len(x) > 4 else "center")
    if e.scores:
        ax_sc.legend(fontsize=8, title="method")
    title = (
        f"{e.head} ({e.head_kind}), {e.split} row {e.row}: label {e.class_name(e.label)}, predicted "
        f"{e.class_name(e.pred)} (p {e.probs[e.pred]:.3f}); explaining class {e.class_name(e.target)} "
        f"({e.target_rule}), p {e.p:.3f}"
    )
    fig.suptitle(wrap(title, fig.get_figwidth(), 12), fontsize=12)
    return fig


# Written into every figure (PNG's Software text, SVG's creator), near its start: a file has no
# folder marker, so this is how `explain --force` knows a figure is its own to replace.
FIGURE_MARK = "laya-inspect explain"
_MARK_WITHIN = 1 << 16  # bytes: both formats put their metadata before the image


def _figure_format(out: Path) -> str:
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise InputError(f"--out {out}: give a .png (or .svg) file name")
    return fmt


def not_explains_figure(path: Path) -> str | None:
    """None when ``path`` is a figure explain wrote, else what it is instead."""
    claim = claimed_by(path)
    if claim is not None:  # explain writes no marked folder: the file is another command's
        folder, marker = claim
        return f"is part of the output of `laya-inspect {marker.get('command')}` in {folder}"
    if special := special_file(path):
        return f"is {special}, not a figure laya-inspect explain wrote"
    try:
        with open(path, "rb") as f:
            head = f.read(_MARK_WITHIN)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    return None if FIGURE_MARK.encode() in head else "is not a figure laya-inspect explain wrote"


def check_figure_out(path: str | Path, *, force: bool, inputs: list[str | Path | None]) -> Path:
    """Refuse, before the work, an ``--out`` explain may not write: not .png/.svg, a run's input, a
    file laya-inspect explain did not write (with ``force`` or not), or any existing file without ``force``."""
    out = Path(path)
    # a run's own input first: "--out cache.h5" is the cache, whatever its suffix says
    check_out(out, force=force, command="explain", kind="file", inputs=inputs, owned=not_explains_figure, recorded=True)
    _figure_format(out)
    if out.exists() and not force:
        why = not_explains_figure(out)
        raise InputError(
            f"--out {out} exists and {why}; choose another --out"
            if why is not None
            else f"--out {out} exists; pass --force to replace it (only a figure explain wrote), or another --out"
        )
    return out


def write_figure(e: Explanation, path: str | Path, *, force: bool = False, locked: bool = False) -> Path:
    """The figure as PNG (or SVG, by the file's suffix), written atomically and marked as explain's.
    ``path`` is checked as :func:`check_figure_out` does, again here: a file saved there while the row
    was explained is not replaced. ``locked``: the caller holds ``path``'s :func:`~.files.output_lock`
    (the command holds it from its check to this write); else it is taken here, so another laya-inspect
    process writing ``path`` is refused, naming its PID."""
    from .compare.plots import solve_layout

    with nullcontext() if locked else output_lock(path):
        out = check_figure_out(path, force=force, inputs=[])
        fmt = _figure_format(out)
        meta = {"Date": None, "Creator": FIGURE_MARK} if fmt == "svg" else {"Software": FIGURE_MARK}
        # the settings that decided its numbers, in the file: a figure names no --baseline or --seed
        meta["Description"] = "settings: " + json.dumps(plain(e.config), sort_keys=True)
        fig = solve_layout(explain_figure(e))
        with atomic_path(out) as tmp:
            fig.savefig(tmp, format=fmt, dpi=110, metadata=meta)
            record = take_record(out, "explain", {out: tmp})
        put_record(out, record)  # what --force checks: a figure edited since, mark kept, is not replaced
    return out
