"""The import graph between the files of laya_inspect has no cycle: every import statement is read
from the source (imports inside functions included, `if TYPE_CHECKING:` blocks left out), so a lazy
import that closes a circle fails here as surely as a top-level one. And the package stays shallow:
at most 16 modules lie flat in laya_inspect/, the rest grouped by stage. And no file imports or
reads another package's private (underscored) names: torch._C, torch._fused_adam_, sklearn's _base."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "laya_inspect"


def modules(root: Path = PACKAGE) -> dict[str, tuple[Path, bool]]:
    """Dotted name → (file, is a package's __init__)."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_init = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_init else parts)] = (path, is_init)
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, outside `if TYPE_CHECKING:` bodies."""
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for other in child.orelse:
                    walk(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child)

    walk(tree)
    return found


def graph(mods: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Module → the modules of the package it imports. `from pkg import sub` imports the module sub;
    any other name imported from pkg is read from pkg's __init__."""

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, (path, is_init) in mods.items():
        here = name.split(".") if is_init else name.split(".")[:-1]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = here[: len(here) - (node.level - 1)] if node.level else []
                prefix = ".".join([*base, *([node.module] if node.module else [])])
                subs = [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in mods]
                targets = subs + ([prefix] if len(subs) < len(node.names) else [])
            for t in targets:
                t2 = known(t) if t.split(".")[0] == PACKAGE.name else None
                if t2 is not None and t2 != name:
                    edges[name].add(t2)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each a set of files that
    import each other round a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_files() -> None:
    edges = graph(modules())
    circles = cycles(edges)
    shown = [
        " ↔ ".join(c) + ": " + "; ".join(f"{v} → {w}" for v in c for w in sorted(edges[v] & set(c))) for c in circles
    ]
    assert not circles, "import cycles:\n" + "\n".join(shown)


def test_the_check_finds_a_cycle_a_lazy_import_closes(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE.name
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    assert cycles(graph(modules(pkg))) == []  # a type-only import closes no circle
    (pkg / "c.py").write_text("def g():\n    from .a import x\n")
    assert cycles(graph(modules(pkg))) == [[f"{PACKAGE.name}.a", f"{PACKAGE.name}.c", f"{PACKAGE.name}.sub.b"]]


def test_at_most_16_flat_modules() -> None:
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 16, flat
    assert all((d / "__init__.py").is_file() for d in PACKAGE.iterdir() if d.is_dir() and d.name != "__pycache__")


# Other packages whose private names (one leading underscore) the library must not touch: their
# signatures change between releases inside the ranges pyproject.toml accepts.
THIRD_PARTY = {
    "torch", "torchvision", "numpy", "h5py", "typer", "click", "rich", "scipy", "sklearn", "captum",
    "matplotlib", "transformers", "timm", "PIL", "safetensors",
}  # fmt: skip


def _private(name: str) -> bool:
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in name.split("."))


def private_uses(source: str) -> list[str]:
    """Every import of, and attribute chain into, a private name of a THIRD_PARTY package, as written."""
    tree = ast.parse(source)
    alias: dict[str, str] = {}  # local name → the package it comes from
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in THIRD_PARTY:
                    alias[(a.asname or a.name).split(".")[0]] = a.name
                    if _private(a.name):
                        found.append(f"import {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in THIRD_PARTY:
                for a in node.names:
                    alias[a.asname or a.name] = f"{node.module}.{a.name}"
                    if _private(f"{node.module}.{a.name}"):
                        found.append(f"from {node.module} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):  # an inner chain, a prefix of an outer one, is found too
            chain, base = [node.attr], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in alias and _private(".".join(chain)):
                found.append(".".join([base.id, *reversed(chain)]))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            head = node.value.split("[")[0]  # a string annotation, "torch._C.X[...]"
            if head.split(".")[0] in alias and _private(head) and " " not in head:
                found.append(head)
    return sorted(set(found))


def test_no_private_name_of_another_package_is_used() -> None:
    uses = {
        str(p.relative_to(PACKAGE.parent)): private_uses(p.read_text(encoding="utf-8")) for p in PACKAGE.rglob("*.py")
    }
    assert not {k: v for k, v in uses.items() if v}


def test_the_private_name_check_finds_what_it_should() -> None:
    source = (
        "import torch\nimport numpy as np\nfrom torch.optim import optimizer\nfrom typer import core\n"
        "x = torch._fused_adam_\ny = optimizer._device_dtype_check_for_fused\nz = np.linalg.norm\n"
        "core.TyperOption._hidden = 1\nw: 'torch._C.TupleType'\nfrom sklearn.datasets._base import load_digits\n"
        "import os\nos._exit\nclass A:\n    def f(self):\n        return self._x, torch.nn.Module.__call__\n"
    )
    assert private_uses(source) == [
        "core.TyperOption._hidden",
        "from sklearn.datasets._base import load_digits",
        "optimizer._device_dtype_check_for_fused",
        "torch._C.TupleType",
        "torch._fused_adam_",
    ]
