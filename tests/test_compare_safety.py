"""compare's output folder and bad values: --force replaces --out whole (nothing of the old run
stays), --allow-other-cache is the only way past a fingerprint mismatch, NaN features are refused or
left out and counted, `report` on a damaged summary.json ends in one CacheError line, and a full
disk leaves neither the output nor a temporary folder."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import fit_quickly, other_rows_caches, write_cache
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore, layer_key
from laya_inspect.cli import app
from laya_inspect.compare.records import load_summary
from laya_inspect.errors import CacheError
from laya_inspect.head_dir import cache_identity, save_head
from laya_inspect.heads import build_head
from laya_inspect.report.terminal import build_report

runner = CliRunner()
ENV = {"COLUMNS": "200", "NO_COLOR": "1"}
QUICK = ["--method", "ig,random", "--n-steps", "4", "--limit", "30", "--bootstrap", "0", "--no-plots"]


@pytest.fixture(scope="module")
def laya_dir(digits_cache, tmp_path_factory) -> Path:
    with FeatureStore(digits_cache) as store:
        head = fit_quickly("laya", store, 20, d_star=8, tau=1.5)
        return save_head(tmp_path_factory.mktemp("h") / "laya", head, meta=cache_identity(store))


def _compare(head: Path, cache: Path, out: Path, *extra: str):
    return runner.invoke(app, ["compare", str(head), "--cache", str(cache), *QUICK, "--out", str(out), *extra], env=ENV)


def _one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_force_replaces_the_output_whole(laya_dir, digits_cache, tmp_path):
    out = tmp_path / "out"
    r = _compare(laya_dir, digits_cache, out, "--plots")  # an earlier run of compare, with its plots
    assert r.exit_code == 0, r.output
    assert (out / "plots").is_dir() and (out / ".laya-inspect.json").is_file()
    line = _one_error_line(_compare(laya_dir, digits_cache, out))
    assert "is not empty" in line and "--force" in line
    r = _compare(laya_dir, digits_cache, out, "--force")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".laya-inspect.json",
        "attributions.h5",
        "report.html",
        "sanity.h5",
        "summary.csv",
        "summary.json",
    ]  # nothing of the earlier run stays: its plots/ went with it
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folder or lock left beside it


def test_an_out_under_a_file_is_refused_before_any_work(laya_dir, digits_cache, tmp_path, monkeypatch):
    """QA: `compare --out notes.txt/results` scored every method and ran the sanity checks, then
    failed with "could not lock notes.txt: File exists", naming the lock, not the --out."""
    import laya_inspect.compare.run as run

    def no_work(*a, **k):
        raise AssertionError("compare started the work")

    monkeypatch.setattr(run, "load_heads", no_work)
    (tmp_path / "notes.txt").write_text("mine")
    line = _one_error_line(_compare(laya_dir, digits_cache, tmp_path / "notes.txt" / "results"))
    assert "notes.txt, which is a file, not a folder" in line, line
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_allow_other_cache_is_the_way_past_a_fingerprint_mismatch(laya_dir, digits_cache, tmp_path):
    with FeatureStore(digits_cache) as store:
        splits = {s: (store.layers(s), store.labels(s)) for s in store.splits}
    other = write_cache(tmp_path / "other.h5", splits, data_spec="another data set")
    line = _one_error_line(_compare(laya_dir, other, tmp_path / "a"))
    assert "fingerprint" in line and "--allow-other-cache" in line and "--force" not in line
    with pytest.warns(UserWarning, match="trained on a cache with fingerprint"):  # allowed, not silent
        r = _compare(laya_dir, other, tmp_path / "b", "--allow-other-cache")
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["config"]["allow_other_cache"] is True
    # said beside the scores and stored, not only as a Python warning that goes by
    said = [w for w in summary["head_warnings"] if "was trained on a cache with fingerprint" in w]
    assert len(said) == 1 and "compared here under --allow-other-cache" in said[0]
    assert "compared here under --allow-other-cache" in " ".join(r.output.split())  # the line may wrap
    import warnings

    # a Python warning from the command line is one line, without the library's source line
    assert warnings.formatwarning("x", UserWarning, "head_dir.py", 321) == "warning: x\n"


def test_compare_refuses_other_rows_and_says_when_it_reads_training_rows(digits_cache, tmp_path):
    """The same features of other rows (another split --seed) passed the fingerprint check, and a
    head compared on the split it was trained on was scored there without a word."""
    first, other, reordered = other_rows_caches(digits_cache, tmp_path)
    with FeatureStore(first) as store:
        head = build_head("laya", store.widths, store.num_classes, d_star=8)
        meta = {**cache_identity(store), "split": {"train_split": "train", "test_split": "test"}}
        head_dir = save_head(tmp_path / "h", head.eval(), meta=meta)
    line = _one_error_line(_compare(head_dir, other, tmp_path / "x"))
    assert "the same features of other rows" in line and "--allow-other-cache" in line
    r = _compare(head_dir, first, tmp_path / "y", "--split", "train")
    assert r.exit_code == 0, r.output
    said = json.loads((tmp_path / "y" / "summary.json").read_text())["head_warnings"]
    assert any("was trained on split 'train', the split compared here" in w for w in said)
    for same in (first, reordered):  # the same rows with the splits in another order are no other rows
        r = _compare(head_dir, same, tmp_path / same.stem / "z")
        assert r.exit_code == 0, r.output
        assert json.loads((tmp_path / same.stem / "z" / "summary.json").read_text())["head_warnings"] == []


def _nan_cache(src: Path, dst: Path, rows: list[int]) -> Path:
    dst.write_bytes(src.read_bytes())
    with h5py.File(dst, "r+") as f:
        for r in rows:
            f[f"test/{layer_key(1)}"][r] = np.nan
    return dst


def test_non_finite_features_are_refused_or_left_out_and_counted(laya_dir, digits_cache, tmp_path):
    with FeatureStore(digits_cache) as store:
        n = store.n("test")
    cache = _nan_cache(digits_cache, tmp_path / "nan.h5", [3, 7])
    args = ["compare", str(laya_dir), "--cache", str(cache), "--method", "alpha,ig", "--n-steps", "4"]
    args += ["--bootstrap", "0", "--no-plots"]
    line = _one_error_line(runner.invoke(app, [*args, "--out", str(tmp_path / "a")], env=ENV))
    assert "2 of" in line and "non-finite" in line and "--allow-nonfinite" in line and "first: row 3" in line
    assert not (tmp_path / "a").exists()
    r = runner.invoke(app, [*args, "--allow-nonfinite", "--ablation", "all", "--out", str(tmp_path / "b")], env=ENV)
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["rows_left_out"] == {"n": 2, "rows": [3, 7], "why": "non-finite features (NaN or ±inf)"}
    assert summary["n"] == n - 2 and summary["heads"][0]["lolo"]["n_rows_nonfinite"] == 0
    with h5py.File(tmp_path / "b" / "attributions.h5", "r") as f:
        assert 3 not in f["rows"][()] and np.isfinite(f["heads/laya/effects"][()]).all()
    rep = runner.invoke(app, ["report", str(tmp_path / "b")], env=ENV)
    assert rep.exit_code == 0 and "2 rows left out" in rep.output


def test_every_row_non_finite_is_refused(laya_dir, digits_cache, tmp_path):
    with FeatureStore(digits_cache) as store:
        n = store.n("test")
    cache = _nan_cache(digits_cache, tmp_path / "nan.h5", list(range(n)))
    line = _one_error_line(_compare(laya_dir, cache, tmp_path / "out", "--allow-nonfinite"))
    assert "every compared row" in line and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------- report


@pytest.fixture(scope="module")
def good_summary(laya_dir, digits_cache, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("good") / "out"
    r = runner.invoke(
        app,
        ["compare", str(laya_dir), "--cache", str(digits_cache), *QUICK, "--ablation", "mean,mix", "--out", str(out)],
    )
    assert r.exit_code == 0, r.output
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize(
    "damage,message",
    [
        ("not json", "is not valid JSON"),
        ("heads are strings", "summary.heads[0] is not an object"),
        ("no lolo", "has no 'lolo'"),
        ("text score", "'high', not a number"),
        ("old schema", "schema_version 7"),
    ],
)
def test_report_on_a_damaged_summary_is_one_line(good_summary, tmp_path, damage, message):
    s = copy.deepcopy(good_summary)
    text = None
    if damage == "not json":
        text = '{"kind": "laya-inspect-compare", '
    elif damage == "heads are strings":
        s["heads"] = ["laya"]
    elif damage == "no lolo":
        del s["heads"][0]["ablations"]["mix"]["lolo"]
    elif damage == "text score":
        s["heads"][0]["methods"]["ig"]["faithfulness"]["mean"] = "high"
    elif damage == "old schema":
        s["schema_version"] = 7
    (tmp_path / "summary.json").write_text(text if text is not None else json.dumps(s))
    line = _one_error_line(runner.invoke(app, ["report", str(tmp_path)], env=ENV))
    assert message in line and "summary.json" in line


def test_report_shows_nan_and_null_numbers_as_a_dash(good_summary, tmp_path):
    """QA: an undefined score (NaN, as compare holds it before summary.json turns it into null) read
    "nan" on the terminal where report.html reads "—"."""
    s = copy.deepcopy(good_summary)
    s["heads"][0]["methods"]["ig"]["faithfulness"]["mean"] = None
    s["heads"][0]["methods"]["ig"]["top_layer_agreement"] = float("nan")
    s["heads"][0]["methods"]["ig"]["deletion_at_1_over_oracle"] = float("nan")
    (sanity,) = s["sanity"]["heads"].values()
    sanity["model"][0]["methods"]["ig"]["faithfulness"]["mean"] = float("nan")  # the sanity table's "faith"
    (tmp_path / "summary.json").write_text(json.dumps(s))  # NaN written as JSON's NaN token
    r = runner.invoke(app, ["report", str(tmp_path)], env=ENV)
    assert r.exit_code == 0, r.output
    ig = next(line.split() for line in r.output.splitlines() if line.split()[:1] in (["ig"], ["ig°"]))
    assert ig[1:4] == ["—", "—", "—"] and "nan" not in r.output.lower(), r.output  # the three headline scores


def test_the_terminal_tables_name_the_headline_scores_as_docs_method_does(good_summary):
    """The terminal headed its columns "agree", "D@1÷orc", names found nowhere else; they now read
    docs/METHOD.md's "top-layer agreement" and "Deletion@1 ÷ oracle" (each on two lines), and ρ, and
    the per-head table still fits 80 columns."""
    import io

    from laya_inspect.report.terminal import head_table, versus_table

    head = good_summary["heads"][0]
    for table in (head_table(good_summary, head), versus_table(head)):
        screen = io.StringIO()
        Console(file=screen, width=80, color_system=None).print(table)
        lines = screen.getvalue().splitlines()
        (top,) = [i for i, line in enumerate(lines) if line.split()[-2:] == ["top-layer", "Deletion@1"]]
        assert "agreement ÷ oracle ρ" in " ".join(lines[top + 1].split()), lines
        assert "agree " not in screen.getvalue() and "D@1÷orc" not in screen.getvalue()
        assert max(map(len, lines)) <= 80, lines


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_report_on_any_edit_of_a_summary_renders_or_says_cache_error(good_summary, tmp_path, data):
    """Replace or delete any one value of a real summary: load + render either works or raises
    CacheError, never anything else (no traceback for a user's edited file)."""
    s = copy.deepcopy(good_summary)
    paths = [p for p in _paths(s) if p]
    path = data.draw(st.sampled_from(paths))
    parent = s
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(JSON)
    folder = tmp_path / f"s{abs(hash(path)) % 10_000}"
    folder.mkdir(exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(s))
    try:
        loaded = load_summary(folder)
    except CacheError:
        return
    console = Console(file=open(os.devnull, "w"), width=80)
    for renderable in build_report(loaded):
        console.print(renderable)


# ------------------------------------------------------------------------------------- full disk


@pytest.mark.slow
def test_a_full_disk_leaves_no_output_and_no_temporary_folder(laya_dir, digits_cache, tmp_path):
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (48_000, 48_000))\n"
        "from laya_inspect.cli import app\n"
        "sys.argv = ['laya-inspect'] + sys.argv[1:]\n"
        "app()\n"
    )
    argv = ["compare", str(laya_dir), "--cache", str(digits_cache), *QUICK, "--out", str(tmp_path / "out")]
    env = {**os.environ, **ENV, "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "errno 27" in r.stderr and "attributions.h5" in r.stderr
    assert list(tmp_path.iterdir()) == []
