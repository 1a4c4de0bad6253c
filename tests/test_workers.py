"""fit-head's forked workers (laya_inspect.workers): the same runs as one process, errors that come
back as themselves, a dead worker named, progress replayed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_cache

from laya_inspect.cache.store import FeatureStore
from laya_inspect.errors import InputError, LayaError
from laya_inspect.training.fit_head import FitConfig, fit_heads
from laya_inspect.workers import can_fork, default_workers, run_forked

pytestmark = pytest.mark.skipif(not can_fork(), reason="worker processes are forked on Linux only")


@pytest.fixture(scope="module")
def blobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three noisy Gaussian blobs seen through two 'layers'."""
    rng = np.random.default_rng(1)

    def split(n: int) -> tuple[list[np.ndarray], np.ndarray]:
        y = rng.integers(0, 3, n)
        l1 = np.eye(3)[y] * 2.0 + rng.normal(size=(n, 3))
        return [l1.astype(np.float32), np.tanh(l1 + rng.normal(size=(n, 3))).astype(np.float32)], y

    path = tmp_path_factory.mktemp("workers") / "blobs.h5"
    train, test = split(300), split(90)
    write_cache(path, {"train": train, "test": test}, layer_names=["a", "b"])
    return path


def _square(i: int, x: int, emit) -> int:
    emit({"event": "done", "i": i})
    return x * x


def test_results_come_back_in_item_order_with_their_progress() -> None:
    events: list[dict] = []
    assert run_forked([3, 1, 4, 1, 5], _square, 3, events.append) == [9, 1, 16, 1, 25]
    assert sorted(e["i"] for e in events) == [0, 1, 2, 3, 4]  # replayed here, in the order runs ended


def _fail_on_two(i: int, x: int, emit) -> int:
    if x == 2:
        raise InputError(f"item {x} is bad")
    return x


def test_a_failing_run_raises_its_own_error_here() -> None:
    with pytest.raises(InputError, match="item 2 is bad"):
        run_forked([1, 2, 3], _fail_on_two, 2, lambda e: None)


def _bug_on_two(i: int, x: int, emit) -> int:
    return x // (x - 2)


def test_a_bug_in_a_run_comes_back_with_the_worker_s_traceback() -> None:
    with pytest.raises(ZeroDivisionError) as raised:
        run_forked([1, 2, 3], _bug_on_two, 2, lambda e: None)
    assert "in _bug_on_two" in str(raised.value.__cause__)  # where in the run, not only where it was raised here


def _die_on_two(i: int, x: int, emit) -> int:
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's out-of-memory killer does
    return x


def test_a_killed_worker_is_named_with_the_way_out() -> None:
    with pytest.raises(LayaError, match="a worker process died .* rerun with --workers 1"):
        run_forked([1, 2, 3], _die_on_two, 2, lambda e: None)


def _sleep_and_say(i: int, x: Path, emit) -> None:
    x.write_text(str(os.getpid()))
    import time

    time.sleep(30)


def test_ctrl_c_here_ends_the_workers_at_once_not_after_the_queued_runs(tmp_path: Path) -> None:
    """Ctrl-C (or the command's SIGTERM) in the parent: leaving the pool ran every queued run first
    (here 2 × 30 s), with the workers still writing."""
    import time

    said = [tmp_path / f"{i}.pid" for i in range(4)]

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    start = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        with pytest.raises(KeyboardInterrupt):
            run_forked(said, _sleep_and_say, 2, lambda e: None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < 10
    workers = [int(p.read_text()) for p in said if p.exists()]
    assert len(workers) == 2 and not any(_alive(w) for w in workers)


def test_one_worker_runs_here_in_order() -> None:
    seen: list[int] = []
    assert run_forked([5, 6], lambda i, x, emit: seen.append(os.getpid()) or x, 1, lambda e: None) == [5, 6]
    assert seen == [os.getpid(), os.getpid()]


def test_default_is_cpus_over_threads_capped_by_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("laya_inspect.workers.usable_cpus", lambda: 8)
    assert [default_workers(20, 1), default_workers(3, 1), default_workers(20, 2), default_workers(20, 16)] == [
        8,
        3,
        4,
        1,
    ]


def test_fit_head_with_two_workers_writes_what_one_process_writes(blobs: Path, tmp_path: Path) -> None:
    config = dict(heads=("laya", "scalarmix", "last"), seeds=(0, 1), d_star=8, epochs=4, probe=False, device="cpu")
    with FeatureStore(blobs) as store:
        one = fit_heads(store, FitConfig(**config, workers=1), out_dir=tmp_path / "one")
        two = fit_heads(store, FitConfig(**config, workers=2), out_dir=tmp_path / "two")
    assert (one.summary["workers"], two.summary["workers"]) == (1, 2)
    for a, b in zip(one.runs, two.runs):
        assert (a.head, a.seed) == (b.head, b.seed)
        assert [dict(h, seconds=0) for h in a.history] == [dict(h, seconds=0) for h in b.history]
        wa, wb = (torch.load(tmp_path / d / a.head / f"seed_{a.seed}" / "weights.pt") for d in ("one", "two"))
        assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa), (a.head, a.seed)
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "two")]
    for s in summaries:
        s.pop("workers")
        s["config"].pop("workers")
    assert summaries[0] == summaries[1]


@pytest.mark.parametrize("workers", [1, 3])
def test_figures_drawn_by_workers_are_the_files_one_process_draws(
    blobs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    from laya_inspect.compare.config import CompareConfig
    from laya_inspect.compare.run import compare_heads

    config = FitConfig(heads=("laya", "scalarmix"), seeds=(0, 1), d_star=8, epochs=2, probe=False, workers=1)
    with FeatureStore(blobs) as store:
        fit_heads(store, config, out_dir=tmp_path / "fit")
        heads = [tmp_path / "fit" / h / "seed_0" for h in ("laya", "scalarmix")]
        compare_heads(heads, store, CompareConfig(n_boot=50, methods=("alpha", "static")), out_dir=tmp_path / "cmp")
        monkeypatch.setattr("laya_inspect.workers.plot_workers", lambda items: min(workers, items))
        fit_heads(store, config, out_dir=tmp_path / "fit2")
        compare_heads(heads, store, CompareConfig(n_boot=50, methods=("alpha", "static")), out_dir=tmp_path / "cmp2")
    for one, other in (("fit", "fit2"), ("cmp", "cmp2")):
        a = sorted(p.relative_to(tmp_path / one) for p in (tmp_path / one).rglob("*.png"))
        b = sorted(p.relative_to(tmp_path / other) for p in (tmp_path / other).rglob("*.png"))
        assert a == b and len(a) >= 4, (one, a, b)
        for rel in a:
            assert (tmp_path / one / rel).read_bytes() == (tmp_path / other / rel).read_bytes(), rel


def test_prune_and_early_exit_refits_by_workers_equal_one_process(blobs: Path, tmp_path: Path) -> None:
    from laya_inspect.beyond.config import Budget, ExitConfig, PruneConfig
    from laya_inspect.beyond.early_exit import simulate_early_exit
    from laya_inspect.beyond.prune import prune_layers

    budget = Budget(epochs=3, patience=2)
    with FeatureStore(blobs) as store:
        fit_heads(
            store, FitConfig(heads=("laya",), seeds=(0,), d_star=8, epochs=2, probe=False), out_dir=tmp_path / "h"
        )
        head = tmp_path / "h" / "laya" / "seed_0"
        pruned, exits = [], []
        for workers in (1, 2):
            common = dict(seeds=2, costs="shapes", device="cpu", plots=False, workers=workers)
            pruned.append(prune_layers(head, store, PruneConfig(**common), budget, out_dir=tmp_path / f"p{workers}"))
            exits.append(
                simulate_early_exit(head, store, ExitConfig(**common), budget, out_dir=tmp_path / f"e{workers}")
            )
    for a, b in (pruned, exits):
        assert a.summary["points"] and a.summary["points"] == b.summary["points"]
        assert [dict(f, seconds=0) for f in a.summary["fits"]] == [dict(f, seconds=0) for f in b.summary["fits"]]


def test_compare_with_heads_in_workers_equals_one_process(blobs: Path, tmp_path: Path) -> None:
    import h5py

    from laya_inspect.compare.config import CompareConfig
    from laya_inspect.compare.run import compare_heads

    fit = FitConfig(heads=("laya", "scalarmix", "concat"), seeds=(0,), d_star=8, epochs=2, probe=False)
    with FeatureStore(blobs) as store:
        fit_heads(store, fit, out_dir=tmp_path / "fit")
        heads = [tmp_path / "fit" / h / "seed_0" for h in ("laya", "scalarmix", "concat")]
        for workers in (1, 3):
            config = CompareConfig(n_boot=100, ablation="all", plots=False, workers=workers)
            compare_heads(heads, store, config, out_dir=tmp_path / f"c{workers}")
    summaries = [json.loads((tmp_path / f"c{w}" / "summary.json").read_text()) for w in (1, 3)]
    for s in summaries:
        s.pop("created_at")
        s["config"].pop("workers")
    assert summaries[0] == summaries[1]
    with h5py.File(tmp_path / "c1" / "attributions.h5") as a, h5py.File(tmp_path / "c3" / "attributions.h5") as b:
        names: list[str] = []
        a.visit(names.append)
        arrays = [n for n in names if isinstance(a[n], h5py.Dataset)]
        assert len(arrays) > 10
        for n in arrays:
            np.testing.assert_array_equal(a[n][()], b[n][()], err_msg=n)


_ORPHAN_SCRIPT = """
import os, sys, time
from laya_inspect.workers import run_forked

pids = sys.argv[1]

def work(i, x, emit):
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(600)

run_forked([0, 1], work, 2, lambda e: None)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_workers_die_with_the_killed_command(tmp_path: Path) -> None:
    # a killed fit-head must not leave workers that train on and hold its output's lock
    import subprocess
    import sys
    import time

    pids = tmp_path / "pids"
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT, str(pids)])
    deadline = time.monotonic() + 120
    while (not pids.exists() or len(pids.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = [int(p) for p in pids.read_text().split()]
    assert len(workers) == 2 and all(_alive(p) for p in workers)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in workers), "a worker outlived the killed command"


def test_workers_forked_after_torch_ran_on_two_threads_do_not_hang() -> None:
    """A library caller that left torch at two threads and ran a parallel op before forking: a child
    with two threads would wait forever on its first parallel op; the workers run one thread each."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from laya_inspect.workers import run_forked\n"
        "torch.set_num_threads(2)\n"
        "x = torch.randn(1500, 1500)\n"
        "x @ x\n"
        "def work(i, n, emit):\n"
        "    y = x @ x\n"
        "    return (torch.get_num_threads(), float(y.sum() - (x @ x).sum()), x.reshape(-1)[torch.arange(n)].numel())\n"
        "print(run_forked([10, 20, 30], work, 2, lambda e: None))\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the forked workers hung on their first parallel torch op")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[(1, 0.0, 10), (1, 0.0, 20), (1, 0.0, 30)]"


_SENDING_SCRIPT = """
import os, sys
import numpy as np
from laya_inspect.workers import run_forked

pids, size = sys.argv[1], int(sys.argv[2])

def work(i, x, emit):
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\\n")
    return np.ones(size, dtype=np.uint8)

print("ready", flush=True)
try:
    run_forked(list(range(40)), work, 2, lambda e: None)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


def _bytes_read(pid: int) -> int:
    with open(f"/proc/{pid}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_ctrl_c_while_a_worker_is_halfway_through_sending_its_result_ends_the_command(tmp_path: Path) -> None:
    """QA: Ctrl-C during prune's refits printed its line and the process then waited forever: the
    standard pool's thread was reading a result the killed worker had half sent, through a pipe whose
    write end the command itself held, and leaving the pool waited on that thread. Here the workers are
    stopped while the command has read part of a result and not the rest (its bytes read, counted by
    Linux, tell), then the command gets Ctrl-C: it must end at once, as interrupted, with no worker left."""
    import subprocess
    import sys
    import time

    size, margin = 64 * 2**20, 2**20  # each result is 64 MB: the command reads it a pipe-full at a time
    pids = tmp_path / "pids"
    proc = subprocess.Popen([sys.executable, "-c", _SENDING_SCRIPT, str(pids), str(size)], stdout=subprocess.PIPE)
    workers: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        before = _bytes_read(proc.pid)
        deadline = time.monotonic() + 120
        while len(workers := sorted({int(p) for p in pids.read_text().split()} if pids.exists() else ())) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "the runs did not start"
            time.sleep(0.01)
        while True:  # until caught with a result read partly, the rest unsent
            assert time.monotonic() < deadline and proc.poll() is None, "never caught halfway through a result"
            if margin < (_bytes_read(proc.pid) - before) % size < size // 2:
                for w in workers:
                    os.kill(w, signal.SIGSTOP)
                time.sleep(0.3)  # the command reads what is in the pipe, and waits for the rest
                read = _bytes_read(proc.pid) - before
                if margin < read % size < size - margin and _bytes_read(proc.pid) - before == read:
                    break
                for w in workers:
                    os.kill(w, signal.SIGCONT)
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the command waited on a result its killed worker had half sent")
        seconds = time.monotonic() - start
        assert (proc.returncode, out) == (130, b"interrupted\n")
        assert seconds < 10, f"{seconds:.1f} s from Ctrl-C to its end"
        assert not any(map(_alive, workers)), "a worker outlived the command"
    finally:
        proc.kill()
        proc.wait()
        for w in workers:
            with contextlib.suppress(OSError):
                os.kill(w, signal.SIGKILL)
