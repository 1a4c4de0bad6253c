"""laya-inspect and its tests use other packages through their public API only: a private name
(``_x``) of torch, typer or matplotlib can change or vanish in any release, and a tool that leans on
one breaks for its users on an upgrade nobody tested. The scan reads the source (ast), imports nothing."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("laya_inspect", "tests", "bench")
# The project's own modules, private names and all: the package, and the modules of tests/ and bench/
# that import each other by their file names (helpers, _bench).
OWN = {"laya_inspect", "tests", "bench"} | {p.stem for top in ("tests", "bench") for p in (ROOT / top).glob("*.py")}
# The packages whose objects the code and tests hold: a name bound by importing one of them (``torch``,
# ``np``, ``nn``, ``plt``, ``Tensor``) may not be followed by a private attribute, nor have one set on it.
WATCHED = {"torch", "numpy", "sklearn", "scipy", "h5py", "matplotlib", "typer", "click", "PIL", "transformers"}
# Private attributes of torch and matplotlib objects that code reaches without naming the package (a
# module's hook dicts, the function behind Module.__call__, a figure's title): caught as attributes and
# as strings (getattr(m, "_forward_hooks"), a tuple of frame names).
KNOWN_PRIVATE = {
    "_forward_hooks",
    "_forward_pre_hooks",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_call_impl",
    "_wrapped_call_impl",
    "_suptitle",
}
# Names the scan would flag that are documented API, each with why it is allowed (a documented switch
# such as torch.backends.cudnn.deterministic, set by assignment, would go here too).
ALLOWED = {
    "os._exit",  # documented: leave a forked or signalled process at once, without cleanup
    "sys._getframe",  # documented (CPython): the caller's frame
}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def dotted(node: ast.expr) -> list[str] | None:
    """``torch.nn.Module._call_impl`` as its parts, or None when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def watched_names(tree: ast.Module) -> set[str]:
    """The names a file binds by importing a watched package or something from one."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in WATCHED:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in WATCHED:
                names.update(alias.asname or alias.name for alias in node.names)
    return names


def private_imports(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.ImportFrom) and (node.level > 0 or node.module is None):
        return  # a relative import: the project's own
    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for module in modules:
        parts = module.split(".")
        if parts[0] not in OWN and any(private(p) for p in parts):
            yield f"imports private module {module}"
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in OWN:
        for alias in node.names:
            if private(alias.name) and f"{node.module}.{alias.name}" not in ALLOWED:
                yield f"imports private name {node.module}.{alias.name}"


def findings(source: str, where: str = "<source>") -> Iterator[str]:
    """Each use of another package's private name in ``source``, as ``where:line: what``."""
    tree = ast.parse(source)
    watched = watched_names(tree)
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from (f"{line}: {said}" for said in private_imports(node))
        elif isinstance(node, ast.Attribute):
            chain = dotted(node)
            if node.attr in KNOWN_PRIVATE:
                yield f"{line}: reads private attribute .{node.attr}"
            elif chain is not None and chain[0] in watched and ".".join(chain) not in ALLOWED:
                if private(node.attr):
                    yield f"{line}: reaches private {'.'.join(chain)}"
                elif isinstance(node.ctx, (ast.Store, ast.Del)):
                    yield f"{line}: replaces {'.'.join(chain)}, another package's attribute"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KNOWN_PRIVATE:
            yield f"{line}: names private attribute {node.value!r}"
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            # getattr(torch.x, "_y"), setattr(typer.core.TyperOption, "z", ...), monkeypatch.setattr(nn.Module, ...)
            target, name = node.args[0], node.args[1]
            chain = dotted(target)
            if chain is None or chain[0] not in watched or not isinstance(name, ast.Constant):
                continue
            func = dotted(node.func) or []
            if isinstance(name.value, str) and private(name.value):
                yield f"{line}: reaches private {'.'.join(chain)}.{name.value}"
            elif func in (["setattr"], ["delattr"]):
                yield f"{line}: replaces {'.'.join(chain)}.{name.value}, another package's attribute"


def scanned_files() -> Iterator[Path]:
    for top in SCANNED:
        # this file names the private attributes it looks for
        yield from (p for p in sorted((ROOT / top).rglob("*.py")) if p != Path(__file__).resolve())


def test_no_private_names_of_other_packages() -> None:
    found = [f for path in scanned_files() for f in findings(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "\n".join(found)


def test_the_scan_catches_each_kind_of_reach() -> None:
    caught = {
        "import torch.nn._reduction": "private module",
        "from torch._C import Graph": "private module",
        "from matplotlib.figure import _AxesStack": "private name",
        "import torch\ntorch.cuda._lazy_init()": "reaches private torch.cuda._lazy_init",
        "from torch import nn\nnn.Module._call_impl": "private attribute ._call_impl",
        "import numpy as np\nnp.random._bit_generator": "reaches private np.random._bit_generator",
        "from torch import Tensor\nTensor._version": "reaches private Tensor._version",
        "len(layer._forward_hooks)": "private attribute ._forward_hooks",
        "assert not fig._suptitle": "private attribute ._suptitle",
        "NAMES = ('_call_impl', 'inner')": "names private attribute '_call_impl'",
        "import typer\ntyper.core.TyperOption.display_type_rich = f": "replaces typer.core.TyperOption",
        "import typer\nx = getattr(typer.core, '_x', None)": "reaches private typer.core._x",
        "import click\nsetattr(click.Option, 'shown', f)": "replaces click.Option.shown",
        "from torch import nn\nmonkeypatch.setattr(nn.Module, '_apply', f)": "reaches private nn.Module._apply",
    }
    for source, said in caught.items():
        found = list(findings(source))
        assert len(found) == 1 and said in found[0], (source, found)


def test_the_scan_lets_public_and_own_names_through() -> None:
    allowed = [
        "import os\nos._exit(1)",  # documented, and os is not watched
        "import sys\nsys._getframe(1)",
        "from torch import nn\nnn.Module.__call__.__code__",  # dunders are the language's, not private
        "import torch\ntorch.nn.Module.register_forward_hook",
        "from laya_inspect.cli.app import _Group",  # the project's own private names
        "from .app import _stopped",
        "from helpers import _tiny",
        "import torch\nmonkeypatch.delattr(torch, 'OutOfMemoryError', raising=False)",
        "self._cache = {}",  # an attribute of the code's own object
    ]
    for source in allowed:
        assert not list(findings(source)), source
