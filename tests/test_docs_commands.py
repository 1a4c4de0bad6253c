"""Every `laya-inspect CMD … --flag` the README and docs/*.md show a user (in a fenced block or an inline
code span) names a command that exists and flags that command has: a renamed or removed option cannot
stay in the docs. Only names are checked, from the real command line; nothing runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main

import laya_inspect.cli  # noqa: F401  (registers every command on `app`)
from laya_inspect.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `laya-inspect CMD …` or `python -m laya_inspect CMD …` (torchrun's `-m laya_inspect CMD …`)
INVOCATION = re.compile(r"(?:laya-inspect|-m laya_inspect)\s+(check\s+\w[\w-]*|[a-z][a-z-]*)([^`\n|]*)")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def flags_by_command() -> dict[str, set[str]]:
    """Each command's (and sub-command's) option names, `--help` and `-h` included."""

    def walk(command: Any, name: str) -> Any:
        subs = getattr(command, "commands", {})
        if not subs:
            yield name, command
        for sub, c in subs.items():
            yield from walk(c, f"{name} {sub}".strip())

    out = {}
    for name, command in walk(typer.main.get_command(app), ""):
        names = {"--help", "-h"}
        for p in command.params:
            names.update(o for o in [*p.opts, *p.secondary_opts] if o.startswith("-"))
        out[name] = names
    return out


def code_spans(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line of a fenced block and every inline code span; a fenced line
    ending in a backslash is joined with the lines it continues onto (their flags are the command's)."""
    spans: list[tuple[int, str]] = []
    fenced, held = False, None  # held: (first line, text so far) of a command continued with "\\"
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            start, text = held or (i, "")
            text += " " + line.rstrip().removesuffix("\\")
            held = (start, text) if line.rstrip().endswith("\\") else None
            if held is None:
                spans.append((start, text.strip()))
        else:
            spans += [(i, m.group(1)) for m in re.finditer(r"`([^`]+)`", line)]
    return spans


def invocations(text: str) -> list[tuple[str, list[str]]]:
    """(command, flags) of each invocation in a line of code; a `#` comment and anything after
    `&&`, `;` or a second invocation is not part of it."""
    found = []
    for m in INVOCATION.finditer(text):
        rest = re.split(r"laya-inspect|laya_inspect|&&|;|#", m.group(2))[0]
        found.append((re.sub(r"\s+", " ", m.group(1)), FLAG.findall(rest)))
    return found


def test_every_documented_command_line_names_real_commands_and_flags() -> None:
    known = flags_by_command()
    assert {"extract", "fit-head", "compare", "check planted"} <= set(known)
    wrong, seen = [], 0
    for path in DOCS:
        for line, text in code_spans(path):
            for command, flags in invocations(text):
                where = f"{path.relative_to(ROOT)}:{line}"
                if command.startswith("-"):  # `laya-inspect --help`, `--version`
                    continue
                if command not in known:
                    if not text.lstrip().startswith(("laya-inspect ", "torchrun ", "python -m laya_inspect ")):
                        continue  # prose in a code span: "laya-inspect version that wrote the file"
                    wrong.append(f"{where}: no command {command!r} in `{text.strip()}`")
                    continue
                seen += 1
                missing = [f for f in flags if f not in known[command]]
                wrong += [f"{where}: {command} has no {f} in `{text.strip()}`" for f in missing]
    assert seen > 50  # the docs show many command lines: the scan found them
    assert not wrong, "\n".join(wrong)


def test_the_scan_catches_a_wrong_flag_and_a_wrong_command() -> None:
    known = flags_by_command()
    [(command, flags)] = invocations("laya-inspect fit-head f.h5 --seeds 3 --no-such-flag 1  # --also-not")
    assert command == "fit-head" and flags == ["--seeds", "--no-such-flag"]
    assert "--seeds" in known[command] and "--no-such-flag" not in known[command]
    assert invocations("torchrun --nproc-per-node 2 -m laya_inspect check planted --seeds 3") == [
        ("check planted", ["--seeds"])
    ]
    assert "fit-heads" not in known


def test_a_command_continued_over_lines_is_read_whole(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```bash\nlaya-inspect extract --model m \\\n    --no-such-flag 1 --out f.h5\necho done\n```\n")
    [(line, text), (_, after)] = code_spans(doc)
    assert line == 2 and after == "echo done"
    assert invocations(text) == [("extract", ["--model", "--no-such-flag", "--out"])]


# a path only one machine has: a site-packages folder, or this checkout's own absolute root
MACHINE_PATH = re.compile(r"(?:/[\w.-]+)*/site-packages/\S*|" + re.escape(str(ROOT)) + r"/\S*")


def test_documented_command_lines_name_no_path_of_one_machine() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {m.group(0)}"
        for path in DOCS
        for line, text in code_spans(path)
        for m in MACHINE_PATH.finditer(text)
    ]
    assert not found, "\n".join(found)
