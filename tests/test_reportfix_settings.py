"""What `laya-inspect report` says of a summary written before it recorded a setting: real fit-head, prune,
early-exit and diagnose runs on the digits cache, each with a field deleted as an older laya-inspect would
have left it out."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import fit_quickly
from typer.testing import CliRunner

from laya_inspect.cache.store import FeatureStore
from laya_inspect.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def folders(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One folder of each kind `report` reads settings from, by the library calls the commands make."""
    from laya_inspect.beyond.diagnose import DiagnoseConfig, diagnose_heads
    from laya_inspect.beyond.early_exit import ExitConfig, simulate_early_exit
    from laya_inspect.beyond.prune import PruneConfig, prune_layers
    from laya_inspect.beyond.refit import Budget
    from laya_inspect.head_dir import cache_identity, save_head
    from laya_inspect.training.fit_head import FitConfig, fit_heads

    root = tmp_path_factory.mktemp("reportfix")
    with FeatureStore(digits_cache) as store:
        head = save_head(root / "laya", fit_quickly("laya", store, 60), meta=cache_identity(store))
        fit_heads(store, FitConfig(heads=("laya",), seeds=(0,), epochs=2, probe=False), out_dir=root / "fit")
        prune_layers(head, store, PruneConfig(refit=False, costs="shapes", device="cpu"), out_dir=root / "prune")
        config = ExitConfig(seeds=2, thresholds=5, costs="shapes", device="cpu", plots=False)
        simulate_early_exit(head, store, config, Budget(epochs=2), out_dir=root / "early-exit")
        diagnose_heads([head], store, DiagnoseConfig(n_boot=50, device="cpu", plots=False), out_dir=root / "diagnose")
    return {kind: root / kind for kind in ("fit", "prune", "early-exit", "diagnose")}


def _text(page: str) -> str:
    """A page's words, as a reader sees them (no images, styles or tags)."""
    page = re.sub(r'src="data:[^"]*"', "", page)
    page = re.sub(r"(?s)<(style|script)[^>]*>.*?</\1>", "", page)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


# (folder, part of summary.json, field deleted, what the settings line says in its place)
OLDER = [
    ("prune", "config", "max_drop", "max drop not recorded"),
    ("prune", "config", "ablation", "ablation not recorded"),
    ("prune", "config", "rank_rows", "ranking rows not recorded"),  # was a TypeError: no page, no summary
    ("prune", "config", "seed", "row seed not recorded"),
    ("early-exit", "config", "epsilon", "ε not recorded"),
    ("early-exit", "config", "thresholds", "thresholds not recorded"),
    ("early-exit", "config", "seeds", "seeds not recorded"),
    ("early-exit", "budget", "lr", "lr not recorded"),
    ("early-exit", "budget", "batch_size", "batch not recorded"),
    ("diagnose", "config", "n_boot", "bootstrap not recorded"),  # was "bootstrap 0 (no intervals drawn …)"
    ("diagnose", "config", "test_split", "test split not recorded"),
    ("fit", "config", "lr", "lr not recorded"),
    ("fit", "config", "val_fraction", "validation not recorded"),
    ("fit", "training", "patience", "patience not recorded"),
]


@pytest.mark.parametrize(("kind", "part", "field", "said"), OLDER, ids=[f"{k}-{f}" for k, _, f, _ in OLDER])
def test_a_setting_an_older_summary_lacks_reads_not_recorded(
    folders: dict[str, Path], tmp_path: Path, kind: str, part: str, field: str, said: str
) -> None:
    """`report` of a prune summary without `max_drop` printed "max drop None" in its settings line (and one
    without `rank_rows` stopped on a TypeError): a setting the summary lacks now reads "… not recorded", as the
    page's other facts say a missing record, on the terminal and in report.html alike."""
    folder = tmp_path / kind
    shutil.copytree(folders[kind], folder)
    (folder / "report.html").unlink(missing_ok=True)
    s = json.loads((folder / "summary.json").read_text())
    del s[part][field]
    (folder / "summary.json").write_text(json.dumps(s))
    printed = runner.invoke(app, ["report", str(folder)], env={"COLUMNS": "200"})
    assert printed.exit_code == 0, printed.output
    terminal = " ".join(printed.output.split())
    assert said in terminal and not re.search(r"\bNone\b", terminal), terminal
    written = runner.invoke(app, ["report", str(folder), "--html"], env={"COLUMNS": "200"})
    assert written.exit_code == 0, written.output
    page = _text((folder / "report.html").read_text(encoding="utf-8"))
    assert said in page and not re.search(r"\bNone\b", page), page
    if field == "n_boot":  # not known to be 0: no claim that no interval was drawn
        assert "bootstrap 0" not in terminal and "no intervals drawn" not in page
