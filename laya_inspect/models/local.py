"""Sources defined on this machine: TorchScript files, ``python:pkg.module:factory`` (or
``python:file.py:factory``) and the zoo."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import torch
from torch import nn

from ..errors import InputError, NotFoundError, suggest
from ..runtime import seeded
from .base import (
    SOURCES,
    Adapter,
    InputSpec,
    LoadedModel,
    LoadOptions,
    Record,
    carries_weights,
    default_blocks,
    freeze,
    keeps_random_init,
    last_linear,
    module_kind,
)
from .traced import refuse_training_graph
from .weights import (
    first_line,
    load_state_dict_strict,
    load_weights,
    read_weights,
    sha256_file,
    sha256_files,
    to_state_dict,
)
from .zoo import DEFAULT_LAYERS, ZOO, build_zoo, is_zoo_checkpoint, model_from_checkpoint

# ---------------------------------------------------------------------------------------------
# TorchScript


class TorchScriptAdapter(Adapter):
    """TorchScript modules refuse Python forward hooks, and run their submodules inside the
    compiled graph. Two ways in remain: a scripted ``nn.Sequential`` is run child by child from
    Python (its children, and nested Sequentials' children, become layers), and a model whose
    ``forward`` returns a tuple exposes its elements as virtual layers ``outputs.K``. Where a tuple
    returns two or more, the order of its elements says nothing about which is deeper (logits often
    come first): none is a default layer, and the cache keeps them in the order ``--layers`` names them."""

    def __init__(self, module: nn.Module) -> None:
        returns = cast("torch.ScriptMethod[..., Any]", module.forward).schema.returns
        rtype = returns[0].type if len(returns) == 1 else None
        self.n_outputs = len(rtype.elements()) if isinstance(rtype, torch.TupleType) else 0
        self.virtual_names = tuple(f"outputs.{k}" for k in range(self.n_outputs))
        self.virtual_in_depth_order = self.n_outputs < 2
        self.virtual_returned = True
        self.sequential = module_kind(module) == "Sequential"
        works = "its children (run one by one)" if self.sequential else "none of its submodules"
        kind = module_kind(module)
        self.hook_hint = (
            f"; TorchScript takes no Python hooks, so for this TorchScript {kind} laya-inspect can read {works}"
            + (f" and the outputs {', '.join(self.virtual_names)}" if self.virtual_names else "")
            + ". Export a forward that returns the tensors you want as a tuple and pick them with "
            "--layers outputs.K, or load the Python model with python:pkg.module:factory --weights FILE"
        )
        if not self.virtual_in_depth_order:
            self.hook_hint += (
                f". Its forward returns {self.n_outputs} tensors ({', '.join(self.virtual_names)}), and the order of "
                "a tuple says nothing about which is deeper, nor which is the logits: name the ones to read with "
                "--layers, shallowest first (the order the cache keeps), and leave out the logits, the output whose "
                "last dimension is the number of classes (--list-layers shows each output's shape)"
            )

    def hookable(self, module: nn.Module) -> list[str]:
        if not self.sequential:
            return []
        names: list[str] = []

        def walk(mod: nn.Module, prefix: str) -> None:
            for name, child in mod.named_children():
                names.append(prefix + name)
                if module_kind(child) == "Sequential":
                    walk(child, prefix + name + ".")

        walk(module, "")
        return names

    def forward(self, module: nn.Module, inputs: Any, names: Sequence[str], record: Record, want_virtual: bool) -> Any:
        if not names:
            return self.call(module, inputs, want_virtual)
        bad = [n for n in names if n not in set(self.hookable(module))]
        if bad:
            raise InputError(f"cannot read layer(s) {', '.join(map(repr, bad))}{self.hook_hint}")
        wanted = set(names)

        def run(mod: nn.Module, x: Any, prefix: str) -> Any:
            for name, child in mod.named_children():
                full = prefix + name
                inside = module_kind(child) == "Sequential" and any(w.startswith(full + ".") for w in wanted)
                x = run(child, x, full + ".") if inside else child(x)
                if full in wanted:
                    record(full, child, x)
            return x

        return run(module, inputs, "")

    def virtual(self, output: Any, name: str) -> Any:
        return output[int(name.split(".", 1)[1])]

    def logits(self, output: Any, num_classes: int | None) -> torch.Tensor | None:
        return None if self.n_outputs else super().logits(output, num_classes)


@SOURCES.register("torchscript")
def load_torchscript(path: str, options: LoadOptions) -> LoadedModel:
    """``torchscript:FILE`` from ``torch.jit.save`` (it holds its weights); ``weights`` (optional)
    are loaded on top, strictly. ``weights_sha256`` covers the archive, then ``weights``."""
    spec = f"torchscript:{path}"
    carries_weights(spec, options)
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"{spec}: {str(p)!r} is a folder; give the TorchScript file (torch.jit.save) inside it")
    if not p.is_file():
        raise NotFoundError(f"no TorchScript file {path!r}")
    try:
        digest = sha256_file(p)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.jit.* deprecation notices
            module = torch.jit.load(str(p), map_location=options.device)
    except OSError as e:
        raise InputError(f"could not read the TorchScript file {str(p)!r}: {e}") from None
    except Exception as e:  # the archive reader fails in several ways on foreign or corrupt bytes
        raise InputError(f"{p} is not a TorchScript archive (torch.jit.save): {first_line(e)}") from None
    refuse_training_graph(module, spec)
    files, digests = [p], [digest]
    if options.weights is not None:
        digests.append(load_weights(module, options.weights, trust_pickle=options.trust_pickle))
        files.append(Path(options.weights))
    adapter = TorchScriptAdapter(module)
    how = ""
    if adapter.virtual_names:  # a tuple of two or more: no default, as its order is not depth
        default = list(adapter.virtual_names) if adapter.virtual_in_depth_order else []
        num_classes = None
    else:
        default, how = default_blocks(module) if adapter.sequential else ([], "")
        head = last_linear(module)
        num_classes = int(head[1].weight.shape[0]) if head else None
    return LoadedModel(
        module=freeze(module, options.device),
        spec=spec,
        source="torchscript",
        input_spec=InputSpec(kind="image"),
        default_layers=default,
        default_layers_how=how,
        num_classes=num_classes,
        weights_path=options.weights or str(p),
        weights_sha256=sha256_files(files, digests),
        device=options.device,
        adapter=adapter,
    )


# ---------------------------------------------------------------------------------------------
# python:pkg.module:factory and python:file.py:factory


@contextmanager
def _importable(folder: str) -> Iterator[None]:
    """Modules in ``folder`` import first, as the current directory's do with ``python -m``;
    sys.path is restored after."""
    sys.path.insert(0, folder)
    importlib.invalidate_caches()  # files written since the last import are found too
    try:
        yield
    finally:
        if folder in sys.path:
            sys.path.remove(folder)  # the first occurrence: ours, unless the module put one before it


def _where(e: BaseException) -> str:
    """``file:line`` of the innermost frame of an error raised by the user's code."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if isinstance(e, SyntaxError) and e.filename:
        return f" at {e.filename}:{e.lineno}"
    return f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""


def _user_file(mod_name: str, folder: str) -> Path | None:
    """The Python file a ``python:`` spec names by its path (a name ending in ``.py``, or holding a
    folder separator), relative to ``folder`` unless absolute; None for a module name."""
    if not (mod_name.endswith(".py") or "/" in mod_name or os.sep in mod_name):
        return None
    return Path(folder) / Path(mod_name).expanduser()


def model_file(spec: str, folder: str | None = None) -> Path | None:
    """The file a model spec names, as an absolute path: a ``python:path/to/file.py:factory``'s (a
    relative path taken from ``folder``, default the current one, as :func:`load_python` takes it) or a
    ``torchscript:FILE``; None for every other spec, a module name's included."""
    source, _, target = spec.partition(":")
    if source == "torchscript" and target:
        return Path(os.path.abspath(Path(target).expanduser()))
    file = _user_file(target.rpartition(":")[0], folder or os.getcwd()) if source == "python" else None
    return None if file is None else Path(os.path.abspath(file))


def _import_file(file: Path, spec_name: str) -> tuple[ModuleType, bytes]:
    """The module run from ``file`` and its bytes. It runs under a name of its own, not
    its stem, so that a ``json.py`` or ``model.py`` of the user's never stands in for an installed module."""
    if file.is_dir():
        raise InputError(f"{spec_name}: {str(file)!r} is a folder; give the .py file that defines the factory")
    if not file.is_file():
        raise NotFoundError(f"{spec_name}: no Python file {str(file)!r}")
    source = file.read_bytes()
    name = f"laya_inspect_user_{hashlib.sha256(source).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise InputError(f"{spec_name}: {str(file)!r} cannot be imported as a Python file (name it *.py)")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickle look a module's classes up there while it runs
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # the user's file failed while it ran
        del sys.modules[name]
        raise InputError(f"importing {str(file)!r} for {spec_name} failed{_where(e)}: {first_line(e)}") from None
    return mod, source


def code_files(file: Path, source: bytes | None = None) -> dict[Path, str]:
    """``file``, then the modules beside it that it imports, recursively (sorted): those in its folder or
    in packages under it, which its folder being searched first for imports makes part of its code. They
    are found by reading the import statements, not by running them: an import inside a function or a
    ``try`` counts, a name built at run time (``importlib.import_module(name)``) is not seen. Each with
    the sha256 of the bytes read (``source``: ``file``'s, already read). A file that cannot be read is
    an InputError naming it and the file that imports it: an import never run (in a function, a
    ``try``) may name a module Python itself never read."""
    root, found, todo, digests = file.parent, {file}, [file], {}
    importer: dict[Path, Path] = {}
    while todo:
        current = todo.pop()
        try:
            read = source if current == file and source is not None else current.read_bytes()
        except OSError as e:
            by = f" (imported by {importer[current]})" if current in importer else ""
            raise InputError(
                f"cannot read {current}{by}, part of the model's code its sha256 covers: {e.strerror or e}"
            ) from None
        digests[current] = hashlib.sha256(read).hexdigest()
        try:
            tree = ast.parse(read)
        except (SyntaxError, ValueError):  # importing it says what is wrong
            continue
        for node in ast.walk(tree):
            for target in _imported(node, current, root):
                if target not in found:
                    found.add(target)
                    todo.append(target)
                    importer[target] = current
    return {p: digests[p] for p in [file, *sorted(found - {file})]}


def _imported(node: ast.AST, current: Path, root: Path) -> list[Path]:
    """The files under ``root`` an import statement in ``current`` runs: each package's ``__init__.py``
    on the way, the module, and in ``from pkg import name`` the submodule ``name`` where it is one."""
    if isinstance(node, ast.Import):
        return [p for alias in node.names for p in _module_files(root, alias.name.split("."))]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = current.parent
    for _ in range(node.level - 1):
        base = base.parent
    if not node.level:
        base = root
    elif base != root and root not in base.parents:
        return []
    parts = node.module.split(".") if node.module else []
    return [*_module_files(base, parts), *(p for a in node.names for p in _module_files(base, [*parts, a.name]))]


def _module_files(base: Path, parts: list[str]) -> list[Path]:
    out = [base.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts) + 1)]
    if parts:
        out.append(base.joinpath(*parts[:-1], parts[-1] + ".py"))
    return [p for p in out if p.is_file()]


@SOURCES.register("python")
def load_python(target: str, options: LoadOptions) -> LoadedModel:
    """``python:pkg.module:factory`` or ``python:path/to/file.py:factory``: import the module (or run
    the file), call ``factory()`` (no arguments) → ``nn.Module``.

    The module is looked up in the current directory (``options.search_dir`` when given) first,
    then on ``sys.path`` (as ``python -m`` does); a relative file path is taken from that folder, and
    the file's own folder is searched first for what it imports. A file's sha256, then those of the
    modules beside it that it imports (:func:`code_files`, recorded in ``code_files``), are part of
    ``weights_sha256`` (before ``weights``'), so a cache or a resume tells a changed file as it tells a
    changed checkpoint. The model may carry ``input_spec`` (an
    :class:`InputSpec` or a dict of its fields), ``default_layers`` and ``num_classes``; otherwise:
    image input, the default blocks of :func:`~.base.blocks_of` (a plain Sequential: one per unit),
    and the last ``nn.Linear``'s width as the class count. Without
    ``weights`` only with ``random_init``.
    """
    mod_name, sep, attr = target.rpartition(":")
    if not sep or not mod_name or not attr:
        raise InputError(
            f"python model spec {target!r} must look like python:pkg.module:factory or python:path/to/file.py:factory"
        )
    spec_name = f"python:{target}"
    random_init = keeps_random_init(spec_name, options)
    folder = options.search_dir or os.getcwd()
    file = _user_file(mod_name, folder)
    source = None
    with _importable(folder if file is None else str(file.parent)):
        if file is not None:
            mod, source = _import_file(file, spec_name)
            mod_name = str(file)
        else:
            try:
                mod = importlib.import_module(mod_name)
            except ImportError as e:
                where = "the current directory" if options.search_dir is None else "the folder"
                raise NotFoundError(
                    f"cannot import {mod_name!r} for {spec_name}: {e} (looked in {where} {folder} and on sys.path)"
                ) from None
            except Exception as e:  # the user's module failed while it was imported
                raise InputError(f"importing {mod_name!r} for {spec_name} failed{_where(e)}: {first_line(e)}") from None
        factory = getattr(mod, attr, None)
        if not callable(factory):
            public = [n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))]
            raise NotFoundError(f"module {mod_name!r} has no factory {attr!r}; {suggest(attr, public)}")
        try:
            with seeded():
                model = factory()
        except Exception as e:  # the user's factory failed
            raise InputError(f"{spec_name}: {attr}() failed{_where(e)}: {first_line(e)}") from None
    if not isinstance(model, nn.Module):
        raise InputError(f"{spec_name} returned a {type(model).__name__}, not a torch.nn.Module")
    sha = None if options.weights is None else load_weights(model, options.weights, trust_pickle=options.trust_pickle)
    code: dict[str, str] = {}
    if file is not None and source is not None:  # the code is part of what the features come from
        found = code_files(file, source)
        files, digests = list(found), list(found.values())
        code = {p.relative_to(file.parent).as_posix(): d for p, d in found.items()}
        if options.weights is not None and sha is not None:
            files.append(Path(options.weights))
            digests.append(sha)
        sha = sha256_files(files, digests)
    spec = getattr(model, "input_spec", None)
    if isinstance(spec, dict):
        try:
            spec = InputSpec(**spec)
        except TypeError as e:
            raise InputError(f"{spec_name}: the model's input_spec {spec!r} is not valid: {e}") from None
    num_classes = getattr(model, "num_classes", None)
    if not isinstance(num_classes, int):
        head = last_linear(model)
        num_classes = head[1].out_features if head else None
    given = getattr(model, "default_layers", None)
    default, how = (given, "") if given else default_blocks(model)
    return LoadedModel(
        module=freeze(model, options.device),
        spec=spec_name,
        source="python",
        input_spec=spec if isinstance(spec, InputSpec) else InputSpec(kind="image"),
        default_layers=list(default),
        default_layers_how=how,
        num_classes=num_classes,
        weights_path=options.weights,
        weights_sha256=sha,
        code_files=code,
        device=options.device,
        random_init=random_init,
    )


# ---------------------------------------------------------------------------------------------
# zoo


def _zoo_input_spec(model: nn.Module, source: str) -> InputSpec:
    kw = cast(dict[str, Any], model.kwargs)  # every zoo model sets .kwargs
    if model.arch == "bilstm":
        return InputSpec(kind="tokens", max_length=kw["max_len"], vocab_size=kw["vocab_size"])
    shape = kw["in_shape"]
    if len(shape) != 3:
        raise InputError(f"{source}: a zoo {model.arch} for extraction takes images (C, H, W); its in_shape is {shape}")
    c, h, w = shape  # both sides: non-square images resized to a square would not fit the first layer
    # `train` scales to [0, 1] only
    return InputSpec(kind="image", channels=c, size=h, width=None if w == h else w, unnormalized=True)


@SOURCES.register("zoo")
def load_zoo(name: str, options: LoadOptions) -> LoadedModel:
    """``zoo:mlp|cnn|bilstm``: a zoo checkpoint (kwargs rebuilt from it) or a plain state dict for
    the default kwargs; without ``weights`` only with ``random_init`` (default kwargs, seeded
    Keras-style random weights)."""
    ZOO.get(name)
    random_init = keeps_random_init(f"zoo:{name}", options)
    weights = options.weights
    sha, vocab, trained = None, None, []
    if weights is None:
        with seeded():
            model = build_zoo(name)
    else:
        obj, sha = read_weights(weights, trust_pickle=options.trust_pickle)
        if is_zoo_checkpoint(obj):
            model = model_from_checkpoint(obj, expected=name, source=str(weights))
            # what `train` warned about this backbone (near chance) travels into every cache of it
            said = (obj.get("metrics") or {}).get("warnings") or []
            trained = [f"{weights} (from `laya-inspect train`): {w}" for w in said if isinstance(w, str)]
            if obj.get("vocab"):  # word ids of a text model trained by `laya-inspect train`
                from ..data.words import WordVocab

                words = obj["vocab"]
                if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
                    raise InputError(f"{weights}: the zoo checkpoint's vocab is not a list of words")
                vocab = WordVocab(tuple(words))
        else:
            kwargs = (
                getattr(obj, "kwargs", {}) if isinstance(obj, nn.Module) and getattr(obj, "arch", None) == name else {}
            )
            model = build_zoo(name, **{k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()})
            load_state_dict_strict(model, to_state_dict(obj, source=str(weights)), source=str(weights))
    return LoadedModel(
        module=freeze(model, options.device),
        spec=f"zoo:{name}",
        source="zoo",
        input_spec=_zoo_input_spec(model, str(weights or f"zoo:{name}")),
        default_layers=DEFAULT_LAYERS[name](model),
        num_classes=cast(dict[str, Any], model.kwargs)["num_classes"],
        tokenizer=vocab,
        weights_path=weights,
        weights_sha256=sha,
        device=options.device,
        random_init=random_init,
        warnings=trained,
    )
