"""prune's refits as they ran before (each batch gathered by advanced indexing, ``h[idx]``; each refit
computing its layers' standardisation moments) against today's (``index_select``; every layer's
moments computed once for all refits), and whether they give the same heads (docs/PERFORMANCE.md,
section 17).

Row of the performance table printed here: a prune-like set of refits (the top-k layers by depth for a
few k, two seeds each, prune's default budget) on a cache of every MobileNetV2 block (19 layers,
CIFAR-10 JPEGs at 96 px; the zoo MLP on Fashion-MNIST as a second row), timed old ÷ new in CPU
seconds of this process (the machines are shared: waiting for a core is not the code's time); and
the gather alone. The last round
also checks that both give bit-identical heads and the same validation and test accuracy (it
fails when they do not).

Then whole prune runs at its defaults but the seeds (section 18): every k = 1 … L refit
(``--search every``, the default before) against the coarse-to-fine search over k (``--search
coarse``, today's default), CPU seconds of this process (``--workers 1``), with the refits each ran
and whether they chose the same layer sets (chosen and cheapest, with their accuracies).

    python bench/prune_speed.py            # 200 JPEGs a class (about half an hour at --repeats 1)
    python bench/prune_speed.py --smoke    # tiny sizes, seconds: checks that it runs
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import _bench
import _caches
import torch

import laya_inspect.training.loop as loop
from laya_inspect.beyond.common import load_split
from laya_inspect.beyond.config import Budget
from laya_inspect.beyond.refit import layer_moments, refit
from laya_inspect.cache.store import FeatureStore
from laya_inspect.training.loop import TensorRows, validation_split


class IndexedRows(TensorRows):
    """TensorRows as it gathered a batch before: advanced indexing of every layer."""

    def batches(self, positions, batch_size, generator=None):
        for pos in loop.batch_positions(positions, batch_size, generator):
            idx = torch.from_numpy(pos).to(self.y.device)
            yield ([h[idx] for h in self.x] if isinstance(self.x, list) else self.x[idx]), self.y[idx]


@contextlib.contextmanager
def old_gather() -> Iterator[None]:
    """refit builds its batcher from ``laya_inspect.training.loop.TensorRows`` at call time."""
    loop.TensorRows = IndexedRows
    try:
        yield
    finally:
        loop.TensorRows = TensorRows


def mobilenet_cache(per_class: int) -> tuple[str, str] | None:
    from laya_inspect.cache.extract import ExtractConfig, extract_features

    weights, jpegs = _bench.mobilenet_weights(), _bench.cifar_jpegs(per_class, ("train", "test"))
    if weights is None or jpegs is None:
        return None
    out = _bench.SCRATCH / f"mobilenet-96-{per_class}.h5"
    if not out.exists():
        extract_features(
            ExtractConfig(
                model="torchvision:mobilenet_v2",
                weights=str(weights),
                data=f"imagefolder:{jpegs}",
                image_size=96,
                out=str(out),
                device="cpu",
            )
        )
    return str(out), f"MobileNetV2 every block, {per_class} CIFAR-10 JPEGs a class at 96 px"


def measure(cache: str, what: str, ks: tuple[int, ...], seeds: tuple[int, ...], repeats: int) -> None:
    store = FeatureStore(cache)
    cpu = torch.device("cpu")
    train, test = load_split(store, "train", cpu), load_split(store, "test", cpu)
    store.close()
    train_rows, val_rows = validation_split(train.labels, 0.1, "stratified", 0)  # fit-head's default rows
    n_layers = len(train.hs)
    jobs = [(tuple(range(n_layers - k, n_layers)), s) for k in ks if k <= n_layers for s in seeds]
    common = dict(
        train=train,
        train_rows=train_rows,
        val_rows=val_rows,
        test=test,
        num_classes=int(train.labels.max()) + 1,
        budget=Budget(weight_decay=0.01),  # fit-head's weight decay
        layer_names=[str(i) for i in range(n_layers)],
    )
    hparams = {"standardize": "feature"}  # fit-head's LAYA head
    fits: dict[str, list] = {}

    def run(name: str) -> float:
        t = time.process_time()  # this process's CPU seconds: other work on a shared machine does not count
        if name == "old":  # each refit gathers with h[idx] and computes its own layers' moments
            with old_gather():
                fits[name] = [refit("laya", hparams, layers, s, **common) for layers, s in jobs]
        else:  # index_select, and every layer's moments computed once for all refits, as prune does
            moments = layer_moments(hparams, train, train_rows, common["layer_names"])
            fits[name] = [refit("laya", hparams, layers, s, **common, moments=moments) for layers, s in jobs]
        return time.process_time() - t

    print(f"# {what}: {train.n} train rows ({len(train_rows)} fitted on), {n_layers} layers, {len(jobs)} refits")
    times = _bench.interleave({"old": lambda: run("old"), "new": lambda: run("new")}, repeats)
    same = all(
        (a.val_acc, a.test_acc, a.epochs_run) == (b.val_acc, b.test_acc, b.epochs_run)
        and all(torch.equal(x, y) for x, y in zip(a.head.state_dict().values(), b.head.state_dict().values()))
        for a, b in zip(fits["old"], fits["new"])
    )
    _bench.ratio(f"prune-refits before/after [{what}]", times["old"], times["new"], "> 1×, identical")
    accs = ", ".join(f"{f.test_acc:.4f}" for f in fits["new"])
    print(f"identical [{what}]: {'yes' if same else 'NO'} (test accuracy of each refit: {accs})", flush=True)
    if not same:
        raise SystemExit(f"before and after gave different heads on {what}")


def gather(repeats: int) -> None:
    """The gather alone: a batch of 128 rows from every layer of a 19-layer MobileNetV2-wide split."""
    widths = [32, 16, 24, 24, 32, 32, 32, 64, 64, 64, 64, 96, 96, 96, 160, 160, 160, 320, 1280]
    g = torch.Generator().manual_seed(0)
    hs = [torch.randn(2000, w, generator=g) for w in widths]
    idx = torch.randperm(2000, generator=g)[:128]

    def timed(take) -> float:
        t = time.process_time()
        for _ in range(200):
            take()
        return time.process_time() - t

    times = _bench.interleave(
        {
            "old": lambda: timed(lambda: [h[idx] for h in hs]),
            "new": lambda: timed(lambda: [h.index_select(0, idx) for h in hs]),
        },
        repeats,
    )
    _bench.ratio(
        "batch-gather h[idx]/index_select [19 layers, 128 of 2000 rows, 200 batches]", times["old"], times["new"]
    )


def search(cache: str, what: str, seeds: int, repeats: int, epochs: int | None = None) -> None:
    """Whole prune runs (every ranking, the random reference, the choice) over every k against the
    coarse-to-fine search, on a LAYA head fitted with fit-head's defaults."""
    from laya_inspect.beyond.prune import PruneConfig, prune_layers
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    out = Path(cache).with_suffix(".search")
    head_dir = out / "heads" / "laya" / "seed_0"
    if not (head_dir / "config.json").exists():
        with FeatureStore(cache) as store:
            fit_heads(
                store, FitConfig(heads=("laya",), seeds=(0,), device="cpu"), out_dir=out / "heads", overwrite=True
            )
    runs: dict[str, dict] = {}

    def run(how: str) -> float:
        config = PruneConfig(seeds=seeds, search=how, device="cpu", plots=False, workers=1)
        t = time.process_time()
        with FeatureStore(cache) as store:
            runs[how] = prune_layers(
                head_dir, store, config, Budget(epochs=epochs), out_dir=out / how, overwrite=True
            ).summary
        return time.process_time() - t

    label = f"prune every-k/coarse [{what}, {seeds} seed(s)]"
    times = _bench.interleave({"every": lambda: run("every"), "coarse": lambda: run("coarse")}, repeats, warmup=False)
    _bench.ratio(label, times["every"], times["coarse"], "> 1×, the same picks")

    def pick(s: dict, key: str) -> str:
        p = s[key] or s["withheld"].get(key)
        return (
            "none"
            if p is None
            else f"{'+'.join(p['layers'])} val {p['val_acc']['mean']:.4f} test {p['test_acc']['mean']:.4f}"
        )

    for key in ("chosen", "cheapest"):
        a, b = pick(runs["every"], key), pick(runs["coarse"], key)
        print(f"{key} [{what}]: {'same' if a == b else 'DIFFERENT'}: every {a}; coarse {b}")
    print(f"refits [{what}]: every {len(runs['every']['fits'])}, coarse {len(runs['coarse']['fits'])}", flush=True)


def main() -> None:
    args = _bench.parser(__doc__).parse_args()
    _bench.start(args, "prune's refits: the batch gather and the moments, before and after")
    ks, seeds = ((1, 3), (0,)) if args.smoke else ((1, 3, 8, 19), (0, 1))
    gather(args.repeats)
    mobile = mobilenet_cache(10 if args.smoke else 200)
    label = "prune-refits before/after [MobileNetV2"
    if mobile is None:
        for row in (label, "prune every-k/coarse [MobileNetV2"):
            _bench.skip(row + "]", "the ImageNet weights or the CIFAR-10 JPEGs are absent")
    else:
        measure(*mobile, ks, seeds, args.repeats)
        search(*mobile, *((1, args.repeats, 2) if args.smoke else (3, args.repeats)))
    cache, what = _caches.feature_cache(600 if args.smoke else 10_000)
    measure(str(cache), what, ks, seeds, args.repeats)
    print(f"# {_bench.load()}")


if __name__ == "__main__":
    main()
