"""Terminal output at 80 and 120 columns, through a pipe and through a real (pseudo-)terminal: no
column of the fit-head table disappears, nothing is cut to "…", intervals of accuracies stay in
[0, 1], no "-0.000", and `--list-layers` never cuts a layer name."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pytest

CLI = [sys.executable, "-m", "laya_inspect"]
FIT_COLUMNS = ("head", "accuracy", "macro-F1", "Δ acc vs last", "seeds", "gate")
HEADS = ("laya", "last", "concat", "scalarmix")


def _pipe(args: list[str], columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _tty(args: list[str], columns: int, code: int = 0) -> str:
    """Run in a pseudo-terminal of ``columns`` × 50 with no COLUMNS in the environment, as a user's shell."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(HF_HUB_OFFLINE="1", TERM="xterm")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([*CLI, *args], stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=300) == code
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # colours and cursor codes


@pytest.fixture(scope="module")
def fitted(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fit") / "heads"
    fast = ["--epochs", "3", "--lr", "1e-2", "--batch-size", "32", "--no-probe"]
    _pipe(["fit-head", str(digits_cache), "--head", "all", "--seeds", "2", *fast, "--out", str(out)], 200)
    return out


def _check_fit_table(text: str, columns: int) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= columns, text
    header = next(line for line in lines if line.lstrip().startswith("head "))
    for col in FIT_COLUMNS:
        # a header may wrap onto the next line, but its first word stays in the header row
        assert col.split()[0] in header, (col, text)
    rows = [line for line in lines if line.split()[:1] and line.split()[0] in HEADS and "[" in line]
    assert sorted(r.split()[0] for r in rows) == sorted(HEADS), text
    for row in rows:
        assert "2" in row.split(), row  # the seeds column is on the head's own row
    assert "…" not in text and "-0.000" not in text, text
    for lo, hi in re.findall(r"\d\.\d{3,4} \[(-?\d\.\d{3,4}), (-?\d\.\d{3,4})\]", text):
        assert 0.0 <= float(lo) <= float(hi) <= 1.0, text


@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("how", ["pipe", "tty"])
def test_fit_head_table_keeps_every_column(fitted: Path, columns: int, how: str) -> None:
    run = _pipe if how == "pipe" else _tty
    _check_fit_table(run(["report", str(fitted)], columns), columns)


@pytest.mark.slow
def test_fit_head_prints_the_same_80_column_table(digits_cache: Path, tmp_path: Path) -> None:
    fast = ["--epochs", "3", "--lr", "1e-2", "--batch-size", "32", "--no-probe"]
    out = _pipe(["fit-head", str(digits_cache), "--head", "all", "--seeds", "2", *fast, "--out", str(tmp_path)], 80)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("head "))
    end = next((j for j in range(start + 1, len(lines)) if not lines[j].strip()), len(lines))
    _check_fit_table("\n".join(lines[start:end]), 80)  # the table: its header row to the blank line after it


def test_no_negative_zero_and_signed_deltas() -> None:
    """A difference keeps its sign when it rounds to zero (QA: an interval ending at −0.0014 read
    "+.00" beside the verdict that it lies below 0); float noise and plain numbers show no "-0"."""
    from laya_inspect.report.across import short_ci
    from laya_inspect.report.reading import diff_text, est, num

    # past float noise but ±0 at 3 decimals throughout: e-notation, not a row of zeros read as "the same"
    assert diff_text({"mean": -0.00001, "ci_low": -0.00002, "ci_high": 0.00001}, 3) == "-1.0e-05 [-2.0e-05, +1.0e-05]"
    assert diff_text({"mean": -0.0001, "ci_low": -0.002, "ci_high": 0.0001}, 3) == "-0.000 [-0.002, +0.000]"
    assert diff_text({"mean": -1e-12, "ci_low": -1e-12, "ci_high": 1e-12}, 3) == "+0.000 [+0.000, +0.000]"
    assert short_ci({"mean": -0.01, "ci_low": -0.02, "ci_high": -0.00143}) == "-.01 [-.02,-.00]"
    assert num(-0.0004, lead=False) == ".00" and num(0.0004, sign=True, lead=False) == "+.00"
    assert est({"mean": -0.00001, "ci_low": -0.00003, "ci_high": 0.00001}, 3, clip=False).startswith("0.000")
    assert diff_text({"mean": -0.0123, "ci_low": -0.02, "ci_high": -0.004}, 3) == "-0.012 [-0.020, -0.004]"


def test_one_formatter_shows_a_missing_or_undefined_number_as_a_dash() -> None:
    """Three formatters (the page's, the terminal's, the across-seed table's) each had their own NaN test;
    the page's caught only Python floats and printed a numpy float32 NaN as "nan"."""
    from laya_inspect.report.reading import num

    assert [num(v) for v in (None, float("nan"), np.float64("nan"), np.float32("nan"))] == ["—"] * 4
    assert num(np.float32("nan"), 3, sign=True, lead=False) == "—"
    assert [num(v, lead=False) for v in (0.724, 1.0, -0.0004, 12.5)] == [".72", "1.00", ".00", "12.50"]
    assert [num(v, 3, sign=True, lead=False) for v in (0.05, -0.0014, -1e-12)] == ["+.050", "-.001", "+.000"]
    assert num(np.float32(0.25), 3) == "0.250" and num(-2.5, 1, lead=False) == "-2.5"


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT saved as a Hugging Face directory: its module names run past 40 characters."""
    transformers = pytest.importorskip("transformers")
    import torch

    d = tmp_path_factory.mktemp("bert")
    (d / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]) + "\n")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(d))
    config = transformers.BertConfig(
        vocab_size=7, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(d / "model")
    tokenizer.save_pretrained(d / "model")
    return d / "model"


@pytest.mark.parametrize("how", ["pipe", "tty"])
def test_list_layers_never_cuts_a_name(bert_dir: Path, how: str) -> None:
    from laya_inspect.cache.extract import list_model_layers

    _, infos = list_model_layers(model=f"hf:{bert_dir}", data=None, device="cpu")
    names = [info.name for info in infos]
    assert max(len(n) for n in names) > 40  # longer than a 60-column table leaves for them
    run = _pipe if how == "pipe" else _tty
    text = run(["extract", "--model", f"hf:{bert_dir}", "--list-layers"], 60)
    words = set(text.split())
    assert [n for n in names if n not in words] == []


@pytest.fixture(scope="module")
def compared(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`compare` of a LAYA and a last-layer head, run through a pipe at 80 columns."""
    from helpers import fit_quickly

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.head_dir import cache_identity, save_head

    root = tmp_path_factory.mktemp("cmp80")
    with FeatureStore(digits_cache) as store:
        dirs = [save_head(root / k, fit_quickly(k, store, 30), meta=cache_identity(store)) for k in ("laya", "last")]
    out = root / "out"
    args = ["compare", *map(str, dirs), "--cache", str(digits_cache), "--method", "all", "--limit", "80"]
    text = _pipe(
        [*args, "--n-steps", "8", "--bootstrap", "100", "--no-plots", "--device", "cpu", "--out", str(out)], 80
    )
    return out, text


def _check_constant(text: str, columns: int) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= columns, text
    assert "…" not in text and "-0.00 " not in text, text
    # the nulls: the table's abbreviations, each explained once; the Deletion@1 title's random layer; the
    # subset ρ floor's caption names the random reference, not "random scores" (also the random method)
    refs = [w for w in map(str.split, lines) if w[:1] == ["constant"] and re.fullmatch(r"-?\d\.\d\d", w[1])]
    assert len(refs) == 2 and all(len(r) >= 5 for r in refs), text  # one row per head, its numbers on it
    said = " ".join(text.split())
    assert "constant = the constant rule" in said and "random ref = the random reference" in said, text
    assert text.count("Deletion@1: oracle") == text.count(", random layer ") == 2, text
    assert len(re.findall(r"· accuracy \d\.\d{3} \(chance \d\.\d{3}\) · n 80", said)) == 2, text  # beside its null
    assert "random scores" not in text and "floor (the random reference's)" in said, text
    titles = [i for i, line in enumerate(lines) if line.startswith("method − constant rule")]
    assert len(titles) == 2, text
    rows = [line.split() for line in lines if line.split()[:1] and line.split()[0].rstrip("°") in ("alpha", "ig")]
    words = ("beats", "does", "not", "rule", "worse", "mixed", "untested", "circular")
    verdicts = [r[-1] for r in rows if r[-1] in words]
    assert verdicts, text  # every verdict row ends in its word, on the same line as its numbers


@pytest.mark.slow
def test_compare_shows_the_constant_rule_at_80_columns(compared: tuple[Path, str]) -> None:
    import json

    out, text = compared
    _check_constant(text, 80)
    said = " ".join(text.split())  # every setting behind IG's scores, the given ones said apart
    assert "settings given: IG baseline mean, 8 steps · bootstrap 100" in said
    assert "Grad-CAM without ReLU · seed 0" in said
    summary = json.loads((out / "summary.json").read_text())
    # the terminal leads with report.html's first sentence: α's ρ beside top-1 only, the constant rule and
    # the random reference (before, it began with the header, and the nulls were in tables further down)
    from laya_inspect.report.reading import compare_headline, compare_reading

    headline = " ".join(" ".join(compare_headline(summary)).split())
    assert headline.startswith("α picks the same top layer") and headline in " ".join(compare_reading(summary).lead)
    assert "top-1 only" in headline and "the constant rule" in headline and "the random reference" in headline
    assert said.index(headline) < said.index("compare: 80 test rows"), said
    for h in summary["heads"]:
        const = h["references"]["constant"]
        assert const["profile"]["source"] == ("weights" if h["kind"] == "laya" else "|ig|")
        assert sum(const["profile"]["fold_sizes"]) == summary["n"] and const["top_layer_agreement"] is not None
        for m, s in h["methods"].items():
            assert s["vs_constant"]["verdict"] and s["vs_constant"]["faithfulness"]["n"] > 0, m


@pytest.mark.slow
@pytest.mark.parametrize("how", ["pipe", "tty"])
def test_report_reprints_the_constant_rule_at_80_columns(compared: tuple[Path, str], how: str) -> None:
    run = _pipe if how == "pipe" else _tty
    _check_constant(run(["report", str(compared[0])], 80), 80)


@pytest.fixture(scope="module")
def beyond_heads(digits_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One LAYA head on the digits cache, for prune, early-exit and diagnose."""
    from helpers import fit_quickly

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.head_dir import cache_identity, save_head

    with FeatureStore(digits_cache) as store:
        head = fit_quickly("laya", store, 60)
        return save_head(tmp_path_factory.mktemp("beyond80") / "laya", head, meta=cache_identity(store))


BEYOND = {
    "prune": ["--no-refit", "--rank-rows", "200"],
    "early-exit": ["--seeds", "1", "--epochs", "2", "--thresholds", "5"],
    "diagnose": ["--bootstrap", "50"],
}


@pytest.mark.parametrize("command", list(BEYOND))
def test_beyond_commands_wrap_their_warnings_and_verdicts_at_80_columns(
    digits_cache: Path, beyond_heads: Path, tmp_path: Path, command: str
) -> None:
    """QA: prune, early-exit and diagnose printed their warning and verdict lines unwrapped, 579
    characters through a pipe at COLUMNS=80; now they break between words, continued two spaces in,
    and a path stays whole."""
    import json

    from laya_inspect.cli.beyond import verdict_lines

    out = tmp_path / "o"
    args = [command, str(beyond_heads), "--cache", str(digits_cache), *BEYOND[command], "--no-plots"]
    text = _pipe([*args, "--device", "cpu", "--out", str(out)], 80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    summary = json.loads((out / "summary.json").read_text())
    said = " ".join(text.split())
    paragraphs = [f"warning: {w}" for w in summary.get("warnings") or []] + [f"• {v}" for v in verdict_lines(summary)]
    assert paragraphs and [p for p in paragraphs if " ".join(p.split()) not in said] == [], text
    assert any(len(p) > 80 for p in paragraphs), paragraphs  # the wrapping was needed
    starts = [i for i, line in enumerate(lines) if line.startswith(("• ", "warning: "))]
    assert len(starts) == len(paragraphs), text
    for i in starts:  # a paragraph's continuation lines are indented, up to the next paragraph or other line
        assert lines[i + 1].startswith(("  ", "• ", "warning: ", "wrote ")) or not lines[i + 1].strip(), text
    assert any(f"wrote {out}/:" in line for line in lines), text  # the folder's path on one line, unbroken


def test_a_table_too_narrow_for_its_longest_words_breaks_the_longest_first():
    """At 60 columns compare's and prune's tables cannot hold every word whole side by side: the long
    names are broken (every character kept) and the short numbers beside them stay whole, where Rich's
    own narrowing cut cells to "…"."""
    import io

    from rich.console import Console

    from laya_inspect.report.across import fit_width, rich_table

    table = rich_table("scores")
    for col in ("method", "agree", "ρ"):
        table.add_column(col, justify="left" if col == "method" else "right", no_wrap=True)
    name = "a_method_name_longer_than_a_column"
    table.add_row(name, "0.9312", "-0.0345")
    screen = io.StringIO()
    console = Console(file=screen, width=30, color_system=None)
    console.print(fit_width(table, console))
    text = screen.getvalue()
    assert "…" not in text and max(map(len, text.splitlines())) <= 30, text
    words = text.split()
    assert "0.9312" in words and "-0.0345" in words, text  # the numbers whole
    assert (
        "".join(w for w in words if w not in ("0.9312", "-0.0345", "scores", "method", "agree", "ρ")).replace("─", "")
        == name
    ), text  # the name broken, not a character of it lost


def test_an_error_line_wraps_at_a_terminal_and_stays_one_line_in_a_pipe(tmp_path: Path) -> None:
    """QA: "error: …" (and "interrupted: …", printed the same way) was one long line at a terminal too,
    broken by the terminal anywhere, mid-word, while warnings and verdicts wrap between words. At a
    terminal it wraps as they do; through a pipe it stays one line, as a log reads it."""
    missing = tmp_path / "a-folder-whose-name-runs-past-the-width" / "and-then-some"
    text = _tty(["report", str(missing)], 60, code=1)
    lines = [line for line in text.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("error: "))
    said = lines[start:]
    assert len(said) > 1 and all(line.startswith("  ") for line in said[1:]), text
    assert all(len(line) <= 60 for line in said if str(missing) not in line), text  # a path stays whole
    joined = " ".join(line.strip() for line in said)
    assert joined.startswith(f"error: no folder {missing}, so no summary.json") and "`diagnose`" in joined, text
    env = {**os.environ, "COLUMNS": "60", "HF_HUB_OFFLINE": "1"}
    piped = subprocess.run([*CLI, "report", str(missing)], capture_output=True, text=True, env=env, timeout=300)
    assert piped.returncode == 1 and piped.stderr.count("\n") == 1 and piped.stderr.startswith("error: "), piped.stderr


def test_across_seed_verdict_cells_fit_80_columns_whole() -> None:
    """The demo's across-seed table read "worse (all), not over seeds" in its verdict cell, wider than
    80 columns allow beside four score columns, and "beats / beats / beats" where the scores that carry
    one word differ by seed: the cell wrapped. It now reads "beats per seed" (", mixed" after it where the
    seeds' differences disagree in sign), one word where every seed gives it, the lines under the table
    say what "per seed" means and which scores carry each seed's verdict, and at 80 columns every verdict
    cell stays on its line."""
    import copy
    import io

    from rich.console import Console
    from test_compare_seeds import _beats_by

    from laya_inspect.compare.seeds import across_seeds
    from laya_inspect.report.across import seed_tables

    heads = [_beats_by(s, d) for s, d in enumerate((0.05, 0.45, 0.02))]
    for h, d in zip(heads, (0.3, 0.1, 0.5)):  # the demo's widest cells: an interval cut at its range's end
        entry = h["ablations"]["mean"]["methods"]
        for key in ("top_layer_agreement", "deletion_at_1_over_oracle"):  # each seed's value under every cell
            entry["alpha"]["vs_constant"][key] = {"mean": d, "ci_low": d - 0.1, "ci_high": d + 0.1}
        entry["alpha-contrib"] = copy.deepcopy(entry["alpha"])  # α − α-contrib: the demo's widest method cell
        entry["alpha"]["vs_methods"] = {"alpha-contrib": {"mean": -d / 5, "ci_low": -d / 5 - 0.01, "ci_high": 0.0}}
    summary = {"across_seeds": across_seeds(heads, [0, 1, 2])}
    for brief in (True, False):
        screen = io.StringIO()
        console = Console(file=screen, width=80, color_system=None)
        for r in seed_tables(summary, brief):
            console.print(r)
        lines = screen.getvalue().splitlines()
        assert max(map(len, lines)) <= 80, "\n".join(lines)
        rows = [line for line in lines if line.startswith("  − constant")]
        assert len(rows) == 2, "\n".join(lines)
        assert all(r.rstrip().endswith("beats per seed") for r in rows), "\n".join(lines)  # whole, on its row
        said = " ".join(" ".join(lines).split())
        assert (
            "per seed: each seed's own intervals give that verdict, the mean differences over the seeds do not" in said
        )
