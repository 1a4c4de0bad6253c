"""docs/ARCHITECTURE.md's "Every module, one line each" tree names every module the package has, and
none it does not: a module added, moved or removed cannot leave the map a reader follows behind."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "laya_inspect"


def tree_block(text: str) -> list[str]:
    """The lines of the fenced block under the "Every module" heading."""
    section = text.split("## Every module, one line each", 1)[1]
    return section.split("```", 2)[1].splitlines()


def documented_modules(lines: list[str]) -> set[str]:
    """Paths relative to the package (`cache/store.py`) of every module the tree names: a `name/` line
    opens a sub-package for the lines indented under it; one line may name several modules."""
    found: set[str] = set()
    folder = ""
    for line in lines:
        if not line.strip() or line.strip() == "laya_inspect/":
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        names = line.strip().split("  ")[0]  # the names, before the description's wide gap
        if depth == 1:
            folder = ""
        if names.endswith("/") and depth == 1:
            folder = names
            continue
        found.update(folder + n for n in re.findall(r"[\w]+\.py", names))
    return found


def package_modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}


def test_the_module_tree_names_every_module_and_no_other() -> None:
    documented = documented_modules(tree_block((ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")))
    documented = {m for m in documented if not m.endswith("__init__.py")}
    actual = package_modules()
    assert not actual - documented, f"modules missing from docs/ARCHITECTURE.md: {sorted(actual - documented)}"
    assert not documented - actual, f"docs/ARCHITECTURE.md names no such module: {sorted(documented - actual)}"


def test_the_tree_parser_reads_folders_and_lines_naming_several_modules() -> None:
    lines = [
        "laya_inspect/",
        "  errors.py            the one exception family",
        "  cache/               the cache",
        "    store.py           FeatureStore: the reader",
        "    a.py, b.py   one module per group",
        "  heads.py             heads",
    ]
    assert documented_modules(lines) == {"errors.py", "cache/store.py", "cache/a.py", "cache/b.py", "heads.py"}


def test_documented_signatures_name_the_keyword_arguments_the_functions_take() -> None:
    """Each `name(…, *, a=…, b=…) -> T` a heading of docs/ARCHITECTURE.md gives for a public library
    function names exactly the keyword-only arguments that function takes."""
    import importlib
    import inspect

    where = {
        "load_model": "laya_inspect.models",
        "load_data": "laya_inspect.data",
        "extract_features": "laya_inspect.cache.extract",
        "fit_heads": "laya_inspect.training.fit_head",
        "train_joint": "laya_inspect.training.joint",
        "compare_heads": "laya_inspect.compare.run",
    }
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    checked = set()
    for name, module in where.items():
        function = getattr(importlib.import_module(module), name)
        params = inspect.signature(function).parameters.values()
        takes = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
        for heading in headings:
            m = re.search(rf"`{name}\(([^)]*)\)(?: -> \w+)?`", heading)
            if m is None or "*" not in m.group(1):
                continue
            after = m.group(1).split("*", 1)[1]
            named = {a.split("=")[0].strip() for a in after.split(",") if a.strip()}
            assert named == takes, f"{heading}: {name} takes keyword arguments {sorted(takes)}"
            checked.add(name)
    assert checked == set(where)


def test_the_cli_section_names_each_command_module_with_its_commands() -> None:
    """docs/ARCHITECTURE.md's "One module per command group" names every cli/ module that declares a
    command, each with the commands it declares."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    sentence = " ".join(text.split("One module per command group:", 1)[1].split("lists them", 1)[0].split())
    listed = dict(re.findall(r"`(\w+\.py)` \(([^)]*)\)", sentence))
    declared: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        group = "check " if "check_app.command" in source else ""
        names = {group + n for n in re.findall(r'\w*app\.command\("([\w-]+)"\)', source)}
        if names:
            declared[path.name] = names
    assert set(listed) == set(declared), f"documented {sorted(listed)}, declared {sorted(declared)}"
    for module, names in declared.items():
        assert {n.strip() for n in listed[module].split(",")} == names, (module, listed[module], names)
