"""Summary statistics over seeds: pure functions of arrays, no I/O.

As docs/METHOD.md, "Training", says: report mean ± std (ddof=1) and the two-sided 95% t-interval
mean ± t(0.975, n−1)·std/√n. With one value the std and the interval are undefined: they are NaN
here and ``note`` says so; JSON writers turn NaN into null. Also the macro-F1 of one run's predictions,
the Wilson interval of a share over n rows (what a test split's own sampling allows) and the paired
interval of two accuracies over the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..files import plain

UNDEFINED_NOTE = "n=1: std and the t-interval are undefined (NaN)"
Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


# a difference of identical scores is 0 up to float rounding (1e-16 here), not a win
TINY = 1e-9


def outcome(d: dict[str, Any] | None) -> str:
    """ "better", "worse", "no different" (the interval holds 0) or "undecided" (no interval) of a
    difference estimate (``mean``, ``ci_low``, ``ci_high``)."""
    if not d or d.get("mean") is None:
        return "undecided"
    lo, hi = d.get("ci_low"), d.get("ci_high")
    if lo is None or hi is None or same_on_every_seed(d):
        return "undecided"
    return "better" if lo > TINY else "worse" if hi < -TINY else "no different"


def same_on_every_seed(d: dict[str, Any] | None) -> bool:
    """The difference is the same, and not 0, on each of two or more seeds: its std is 0 and its
    t-interval has zero width, an interval drawn from no spread (test accuracies move in steps of
    1/n, so refits tie), which decides nothing."""
    values = [v for v in (d or {}).get("values") or [] if v is not None]
    low, high = (d or {}).get("ci_low"), (d or {}).get("ci_high")
    if low is not None and high is not None and high - low > TINY:  # an interval with width: some spread
        return False
    return len(values) >= 2 and max(values) - min(values) <= TINY and abs(float(values[0])) > TINY


def tied(d: dict[str, Any] | None) -> bool:
    """The paired difference is 0 on each of two or more seeds (:func:`same_on_every_seed`: the same and
    not 0): the two rankings' sets scored the same (test accuracies move in steps of 1/n), a zero-width
    interval that decides nothing."""
    values = [v for v in (d or {}).get("values") or [] if v is not None]
    return len(values) >= 2 and all(abs(float(v)) <= TINY for v in values)


# One seed's difference, said alike by the terminal's verdict lines and the reading (report.html).
ONE_VALUE = "one value, no interval, so no verdict"


def same_text(d: dict[str, Any]) -> str:
    """What :func:`same_on_every_seed` says, for a verdict line."""
    n = len([v for v in d.get("values") or [] if v is not None])
    return f"the same on each of the {n} seeds: no spread to draw an interval from, so no verdict"


def bounded(diff: dict[str, Any], low: float, high: float) -> dict[str, Any]:
    """``diff`` with its interval clipped to [low, high], the values the quantity can take: a
    t-interval over 2 seeds at a Bonferroni level is many times its spread wide (t(0.9875, 1) ≈ 25) and
    reached −1.19 for a difference of two AUROCs. The t bounds stay as ``t_low`` / ``t_high`` and
    ``clipped`` is true where one was cut; which side of 0 the interval lies on does not change."""
    lo, hi = diff.get("ci_low"), diff.get("ci_high")
    if lo is None or hi is None or (low <= lo and hi <= high):
        return diff
    return {**diff, "ci_low": max(low, lo), "ci_high": min(high, hi), "t_low": lo, "t_high": hi, "clipped": True}


def cut_note(
    estimates: Mapping[str, Mapping[str, Any] | None], label: str, span: str, why: str, over: str
) -> str | None:
    """Where :func:`bounded` cut an interval of ``estimates`` (name → estimate) to ``span``: one
    sentence with the t bounds, so a shown end at the range's edge is not read as the interval's own;
    ``why`` names the range ("the range of a Spearman ρ"), ``over`` what the t-interval is over. None
    where none was cut. Where the cut ones are over different counts (a seed whose ρ is undefined leaves
    one of them over fewer), each one's count is said beside its bounds."""
    cut = {k: d for k, d in estimates.items() if d and d.get("clipped")}
    if not cut:
        return None
    counts = {d.get("n") for d in cut.values()}
    each = len(counts) > 1

    def name(k: str, d: Mapping[str, Any]) -> str:
        return f"{k} over {d.get('n')}" if each else k

    t = ", ".join(f"{name(k, d)} [{_bound(d['t_low'])}, {_bound(d['t_high'])}]" for k, d in cut.items())
    size = "each one's" if each else str(next(iter(counts)))
    return (
        f"{label}: an interval reaching outside {span} is shown cut to {span}, {why}; the t-interval over {size} "
        f"{over} ({t}) is too wide to bound it there"
    )


def _bound(v: float) -> str:
    """A t bound at 2 decimals, or more where 2 round it onto a whole number, the edge of every range
    here: "+1.003", not "+1.00", which read as inside the [0, 1] it was cut to ("[+0.88, +1.00] is too
    wide to bound it there")."""
    digits = next((d for d in (2, 3, 4) if round(v, d) != round(v)), 6)
    return f"{v:+.{digits}f}"


def spec(d: dict[str, Any], digits: int = 4) -> str:
    """The format of a difference's mean and bounds: ``+.{digits}f``, or ``+.1e`` where the difference is
    past float noise (a value beyond TINY) yet every one of the three shows as ±0 at ``digits`` decimals:
    early-exit's oracle, 9.3e-06 better on one seed of 3, printed "+0.0000 [-0.0000, +0.0000]", which
    reads as the same rule, not a difference too small to show."""
    values = [d.get(k) for k in ("mean", "ci_low", "ci_high")]
    shown = [float(v) for v in values if v is not None]
    small = bool(shown) and all(round(v, digits) == 0 for v in shown) and any(abs(v) > TINY for v in shown)
    return "+.1e" if small else f"+.{digits}f"


def family(size: int, of: str) -> dict[str, Any]:
    """The record of a family of ``size`` comparisons read together (``of``: which, in words): each
    interval is drawn at 1 − 0.05/size (Bonferroni), so that the chance of any wrong "beats" or "worse"
    among them, when none differs in truth, is at most 5%; one comparison alone stays at 95%."""
    size = max(1, int(size))
    return {"confidence": 1 - 0.05 / size, "size": size, "of": of}


def holm(p: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values of a family: the i-th smallest p times (m − i + 1), made
    non-decreasing, at most 1; reading adjusted p < 0.05 keeps the chance of any false "differs" among
    the m at most 5%, whatever their dependence. Written here: scipy has no public Holm (its
    false_discovery_control is Benjamini–Hochberg, which bounds the false share, not any false one)."""
    m, running = len(p), 0.0
    out = [0.0] * m
    for i, j in enumerate(sorted(range(m), key=lambda k: p[k])):
        running = max(running, min(1.0, (m - i) * float(p[j])))
        out[j] = running
    return out


def level(d: dict[str, Any] | None) -> str:
    """The confidence of an interval record (or a :func:`family` record) in words, "98.8%"; "95%" for a
    record written before levels were recorded."""
    c = (d or {}).get("confidence")
    return f"{float(c if isinstance(c, (int, float)) else 0.95) * 100:.3g}%"


def family_text(fam: dict[str, Any] | None, what: str = "intervals") -> str:
    """A :func:`family` record in words, for captions and readings: "98.8% intervals (Bonferroni over
    the 4 scores compared with msp: 95% for them together)"; "95% intervals" for one comparison or a
    summary written before families were recorded."""
    if not fam or int(fam.get("size") or 1) <= 1:
        return f"{level(fam)} {what}"
    of = fam.get("of", "comparisons")
    return f"{level(fam)} {what} (Bonferroni over the {fam['size']} {of}: 95% for them together)"


def _array(values: Iterable[float]) -> np.ndarray:
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64).ravel()
    if x.size == 0:
        raise InputError("no values to summarise")
    return x


def macro_f1(labels: np.ndarray, preds: np.ndarray) -> float:
    """Macro-averaged F1 over the classes present in ``labels`` (a class never predicted scores 0):
    scikit-learn's ``f1_score(labels, preds, labels=<classes in labels>, average="macro",
    zero_division=0)``. A prediction of a class absent from ``labels`` is a miss of its row's class,
    not a class of its own: with the union, one stray prediction moved a score by a third."""
    from sklearn.metrics import f1_score

    y, p = np.asarray(labels, dtype=np.int64).ravel(), np.asarray(preds, dtype=np.int64).ravel()
    if y.shape != p.shape:
        raise InputError(f"{len(y)} labels but {len(p)} predictions")
    if y.size == 0:
        raise InputError("no predictions to score")
    return float(f1_score(y, p, labels=np.unique(y), average="macro", zero_division=0))


def std(values: Iterable[float]) -> float:
    """Sample standard deviation (ddof=1); NaN for a single value."""
    x = _array(values)
    return float(x.std(ddof=1)) if x.size > 1 else math.nan


def t_interval(values: Iterable[float], confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided t-interval for the mean: mean ± t((1+confidence)/2, n−1)·std/√n; (NaN, NaN) for n=1."""
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), got {confidence}")
    x = _array(values)
    if x.size < 2:
        return math.nan, math.nan
    from scipy.stats import t

    m, s = float(x.mean()), float(x.std(ddof=1))
    half = float(t.ppf((1 + confidence) / 2, x.size - 1)) * s / math.sqrt(x.size)
    return m - half, m + half


def rows_accuracy(acc: float, n: int, chance: float | None = None, digits: int = 4) -> str:
    """One run's test accuracy beside what its ``n`` test rows allow and what chance gives, in one short
    form: "0.8833 [0.778, 0.942] over 60 test rows, chance 0.100". One number from 60 rows moves by
    ±0.08 with the rows drawn; said bare, it read as exact."""
    low, high = wilson(acc * n, n)
    beside = "" if chance is None else f", chance {chance:.3f}"
    return f"{acc:.{digits}f} [{low:.3f}, {high:.3f}] over {n} test rows (95% Wilson){beside}"


def wilson(hits: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial share ``hits / n`` (95% at the default ``z``); (NaN, NaN)
    when n = 0. ``hits`` may be fractional: a mean accuracy over seeds times the test rows. Its ends
    are exactly 0 and 1 at a share of 0 and 1, and it stays inside [0, 1] where the normal
    approximation would not (27 of 27 rows right: [0.875, 1])."""
    if n <= 0:
        return math.nan, math.nan
    p = min(max(hits / n, 0.0), 1.0)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = 0.0 if p == 0 else max(0.0, centre - half)  # exactly 0 and 1 at the ends, not 1 − 1e-16
    high = 1.0 if p == 1 else min(1.0, centre + half)
    return low, high


def rows_paired(right: Sequence[np.ndarray], other: Sequence[np.ndarray], z: float = Z95) -> dict[str, Any] | None:
    """The test rows' own paired 95% interval (at the default ``z``) of one accuracy less another over
    the same n rows, what fit-head's "test sampling of Δ vs last" reads: ``right[i]`` and ``other[i]``
    are seed i's (N,) rows answered right by each side. A Wald interval from the shares of rows the two
    answer differently (``better``: only ``right`` right; ``worse``: only ``other``), averaged over the
    seeds, centred on their difference: the seeds share the test rows, so the interval over seeds leaves
    out which rows were drawn. ``better``/``worse``/``differ`` are counts of rows, means over the seeds.
    None without a seed or a row."""
    pairs = [(np.asarray(a, dtype=bool).ravel(), np.asarray(b, dtype=bool).ravel()) for a, b in zip(right, other)]
    n = len(pairs[0][0]) if pairs else 0
    if not n:
        return None
    if any(len(a) != n or len(b) != n for a, b in pairs):
        raise InputError("a paired difference over test rows needs the same rows on each side and seed")
    better = float(np.mean([(a & ~b).sum() for a, b in pairs]))
    worse = float(np.mean([(~a & b).sum() for a, b in pairs]))
    apart, diff = (better + worse) / n, (better - worse) / n
    half = z * math.sqrt(max(apart - diff * diff, 0.0) / n)
    return {
        "rows": n,
        "seeds": len(pairs),
        "better": better,
        "worse": worse,
        "differ": better + worse,
        "mean": diff,
        "half_width": half,
        "ci_low": diff - half,
        "ci_high": diff + half,
        "confidence": math.erf(z / math.sqrt(2)),  # the normal's two-sided level of z: 0.95 at Z95
    }


def rows_text(rows: dict[str, Any]) -> str:
    """How many of the test rows two sides answer differently: "1 row of 66 differs", "3 rows of 66
    differ (1 better, 2 worse)"; counts that vary by seed are their mean ("1.5 rows of 66 differ, mean
    over 2 seeds")."""
    differ, n = rows["differ"], rows["rows"]
    said = f"{differ:g} row{'s' * (differ != 1)} of {n} differ{'s' * (differ == 1)}"
    if rows["better"] and rows["worse"]:
        said += f" ({rows['better']:g} better, {rows['worse']:g} worse)"
    if any(float(v) != round(float(v)) for v in (rows["better"], rows["worse"])):
        said += f", mean over {rows['seeds']} seeds"
    return said


def sampling_text(rows: dict[str, Any]) -> str:
    """What beyond.common.test_rows says of a difference within the test rows' sampling, for a verdict line."""
    return (
        f"{rows_text(rows)}: within the test rows' sampling (their own paired 95% interval "
        f"[{rows['ci_low']:+.4f}, {rows['ci_high']:+.4f}]), so no verdict"
    )


@dataclass(frozen=True)
class Estimate:
    """mean ± std over n values with a t-interval; ``values`` kept in the order given."""

    n: int
    mean: float
    std: float
    ci_low: float
    ci_high: float
    confidence: float
    values: tuple[float, ...]

    @property
    def note(self) -> str | None:
        return UNDEFINED_NOTE if self.n < 2 else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: NaN becomes None, and an undefined interval carries a note."""
        d = plain(asdict(self))
        if self.note:
            d["note"] = self.note
        return d

    def format(self, digits: int = 4, *, ci: bool = True) -> str:
        """'0.8834 ± 0.0046 [0.8777, 0.8891]'; an undefined std/interval prints as 'n/a'."""
        s = f"{self.mean:.{digits}f} ± " + ("n/a" if math.isnan(self.std) else f"{self.std:.{digits}f}")
        if ci:
            s += " [n/a]" if math.isnan(self.ci_low) else f" [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}]"
        return s


def describe(values: Iterable[float], confidence: float = 0.95) -> Estimate:
    x = _array(values)
    lo, hi = t_interval(x, confidence)
    return Estimate(
        n=int(x.size),
        mean=float(x.mean()),
        std=std(x),
        ci_low=lo,
        ci_high=hi,
        confidence=confidence,
        values=tuple(float(v) for v in x),
    )


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Estimate of a − b over paired values (same seeds, same order): the paired t-interval."""
    xa, xb = _array(a), _array(b)
    if xa.shape != xb.shape:
        raise InputError(f"paired difference needs as many values on each side, got {xa.size} and {xb.size}")
    return describe(xa - xb, confidence)


def summarize_runs(
    runs: Sequence[dict[str, Any]],
    *,
    metrics: Sequence[str] = ("test_acc", "test_macro_f1"),
    baseline: str | None = "last",
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """Per head: each metric as an Estimate over seeds, and the paired difference to ``baseline``.

    ``runs`` are dicts with at least ``head``, ``seed`` and the metrics. The difference pairs runs by
    seed and uses only the seeds both heads have; it is None when the baseline was not run (and for
    the baseline itself).
    """
    heads = list(dict.fromkeys(r["head"] for r in runs))
    by_head = {h: {r["seed"]: r for r in runs if r["head"] == h} for h in heads}
    base = by_head.get(baseline) if baseline else None
    out = []
    for h in heads:
        seeds = sorted(by_head[h])
        row: dict[str, Any] = {"head": h, "n": len(seeds), "seeds": seeds}
        for m in metrics:
            row[m] = describe([by_head[h][s][m] for s in seeds], confidence)
        row["delta_vs_" + str(baseline)] = None
        if base is not None and h != baseline:
            common = [s for s in seeds if s in base]
            if common:
                row["delta_vs_" + str(baseline)] = {
                    m: paired_difference([by_head[h][s][m] for s in common], [base[s][m] for s in common], confidence)
                    for m in metrics
                }
        out.append(row)
    return out


def summary_to_jsonable(summary: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn the Estimates inside a ``summarize_runs`` result into plain dicts (NaN → None)."""

    def conv(v: Any) -> Any:
        if isinstance(v, Estimate):
            return v.to_dict()
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return plain(v)

    return [conv(row) for row in summary]


def seed_agreement(weights: Sequence[np.ndarray]) -> dict[str, Any] | None:
    """How far seeds agree on the layer weights of the same rows (docs/METHOD.md, "Seed agreement").

    ``weights``: one (N, L) array per seed, rows in the same order. Over every pair of seeds:
    ``rank_agreement`` is the mean over rows of the Spearman correlation between the two seeds' L
    weights of that row (rows where either seed's weights are all equal have no ranking and are left
    out: their share is ``undefined_share``), then the mean over pairs; ``top_layer_agreement`` is the
    share of rows where both seeds put their largest weight on the same layer, mean over pairs (a
    largest weight that k layers share exactly credits each 1/k: :func:`top_credit`)
    (``top_layer_chance`` = 1/L is what independent uniform choices would give;
    ``top_layer_chance_shares``, Σ_l f_a(l)·f_b(l) with f_s(l) the share of rows seed s tops with layer l,
    mean over pairs, is what independent picks at each seed's own top-layer shares give: the null that
    two seeds which both put nearly every row on one layer meet). None for one seed.
    With L = 2 a row's Spearman correlation can only be ±1. Higher is better for both.

    The constant rule beside them: each seed's mean weights used for every row (one profile per
    seed), scored the same way (``*_constant``). Per-row agreement no higher than theirs says only
    that the seeds' average profiles agree, nothing about any one input."""
    ws = [np.asarray(w, dtype=np.float64) for w in weights]
    if len(ws) < 2:
        return None
    shapes = {w.shape for w in ws}
    if len(shapes) != 1 or ws[0].ndim != 2:
        raise InputError(f"seed agreement needs one (N, L) array per seed, all the same shape; got {sorted(shapes)}")
    n, n_layers = ws[0].shape
    rho_pairs, top_pairs, undefined = _pair_agreement(ws)
    rho_defined = [r for r in rho_pairs if not math.isnan(r)]
    return {
        "seeds": len(ws),
        "pairs": len(rho_pairs),
        "rows": int(n),
        "layers": int(n_layers),
        "rank_agreement": float(np.mean(rho_defined)) if rho_defined else math.nan,
        "top_layer_agreement": float(np.mean(top_pairs)),
        "top_layer_chance": 1.0 / n_layers,
        "top_layer_chance_shares": _shares_chance(ws),
        "undefined_share": float(np.mean(undefined)),
        **constant_agreement([w.mean(axis=0) for w in ws]),
        "rank_agreement_pairs": rho_pairs,
        "top_layer_agreement_pairs": top_pairs,
    }


def constant_agreement(means: Sequence[np.ndarray]) -> dict[str, float]:
    """:func:`seed_agreement`'s constant rule from each seed's (L,) mean weights: the same pairs, each
    seed's profile its one row (``rank_agreement_constant``: NaN when no pair's profiles both rank
    the layers; ``top_layer_agreement_constant``)."""
    rho, top, _ = _pair_agreement([np.asarray(m, dtype=np.float64)[None, :] for m in means])
    defined = [r for r in rho if not math.isnan(r)]
    return {
        "rank_agreement_constant": float(np.mean(defined)) if defined else math.nan,
        "top_layer_agreement_constant": float(np.mean(top)) if top else math.nan,
    }


def counted(n: int, noun: str) -> str:
    """``n`` and its noun, plural unless one: "1 seed", "3 seeds"."""
    return f"{n} {noun}{'s' * (n != 1)}"


def counted_list(noun: str, items: Iterable[Any]) -> str:
    """The noun, plural unless one item, before the items: "seed 3", "seeds 0, 1"; "seeds —" for none."""
    said = [str(i) for i in items]
    return f"{noun}{'s' * (len(said) != 1)} {', '.join(said) or '—'}"


def percent(v: Any, digits: int = 0, sign: bool = False) -> str:
    """A share as a percentage, rounded as the same share with ``digits + 2`` decimals is: 0.925 reads
    "93%" beside a table's "0.93" (format's "%" rounds 92.5 half to even, "92%"). "—" when missing;
    zero never reads "-0%" unless ``sign``; NaN and ±inf (of any float type) read "—" too."""
    from decimal import Decimal

    if v is None or not math.isfinite(float(v)):
        return "—"
    d = Decimal(format(float(v), f".{digits + 2}f")).scaleb(2)
    if d == 0 and not sign:
        d = abs(d)
    return f"{d:{'+' if sign else ''}.{digits}f}%"


def chance_text(agree: dict[str, Any]) -> str:
    """What the seeds' top-layer agreement would be by chance: at each seed's own top-layer shares
    where recorded (the null that matters when α tops nearly every row with one layer), beside 1/L."""
    shares = agree.get("top_layer_chance_shares")
    uniform = agree.get("top_layer_chance")
    at_uniform = "—" if uniform is None else f"{percent(uniform)} at uniform picks"
    if shares is None or shares != shares:  # a summary written before it was recorded
        return f"chance {at_uniform}"
    return f"chance {percent(shares)} at each seed's own top-layer shares, {at_uniform}"


def top_credit(w: np.ndarray) -> np.ndarray:
    """(N, L) each row's credit for being its top layer: 1/k to each of the k layers that share the
    row's largest value exactly, 0 elsewhere; a row with a NaN tops its first NaN, as argmax does.
    Two rows' credits dotted are the chance that uniform picks among their ties meet, so a tie never
    goes to the shallowest layer; untied rows are one-hot on argmax."""
    top = w == w.max(axis=1, keepdims=True)
    none = ~top.any(axis=1)  # a NaN in the row: max is NaN and equals nothing
    top[none] = np.eye(w.shape[1], dtype=bool)[w[none].argmax(axis=1)]
    return top / top.sum(axis=1, keepdims=True)


def _shares_chance(ws: Sequence[np.ndarray]) -> float:
    """The top-layer agreement of independent picks at each seed's own top-layer shares, mean over pairs."""
    n, n_layers = ws[0].shape
    if not n:
        return math.nan
    shares = [top_credit(w).sum(axis=0) / n for w in ws]
    pairs = [float(shares[a] @ shares[b]) for a in range(len(ws)) for b in range(a + 1, len(ws))]
    return float(np.mean(pairs))


def _pair_agreement(ws: Sequence[np.ndarray]) -> tuple[list[float], list[float], list[float]]:
    """Over every pair of (N, L) arrays: the mean per-row Spearman correlation over the rows where
    both rank the layers, the share of rows with the same top layer, and the share without a ranking."""
    from scipy.stats import rankdata

    n = len(ws[0])
    ranks = [rankdata(w, axis=1) for w in ws]  # average ranks along each row: ties share their mean rank
    centred = [r - r.mean(axis=1, keepdims=True) for r in ranks]
    norms = [np.sqrt((c**2).sum(axis=1)) for c in centred]
    tops = [top_credit(w) for w in ws]
    rho_pairs, top_pairs, undefined = [], [], []
    for a in range(len(ws)):
        for b in range(a + 1, len(ws)):
            defined = (norms[a] > 0) & (norms[b] > 0)
            rho = (centred[a][defined] * centred[b][defined]).sum(axis=1) / (norms[a][defined] * norms[b][defined])
            rho_pairs.append(float(rho.mean()) if rho.size else math.nan)
            undefined.append(1.0 - float(defined.mean()) if n else math.nan)
            top_pairs.append(float((tops[a] * tops[b]).sum(axis=1).mean()) if n else math.nan)
    return rho_pairs, top_pairs, undefined
