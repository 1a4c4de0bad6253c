"""A cache's fingerprint: what defines its feature space, hashed. :func:`fingerprint_inputs` gathers
what it is computed from (the attributes in FINGERPRINT_KEYS, the layer widths, ``compute_dtype``
and ``fingerprint_version``), :func:`fingerprint_of` hashes them under the rules of that version, and
:func:`differences` names what differs between two caches' inputs, for a refusal to say. Also the record
of a ``python:pkg.module`` model's code that a resumed extraction compares (:func:`module_code`)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .schema import FINGERPRINT_KEYS, PROVENANCE

# fingerprint_version → what its fingerprint adds to, or leaves out of, the inputs hashed before it:
#   none  FINGERPRINT_KEYS and widths;
#   2     also compute_dtype when it is not float32 (--amp);
#   3     also leaves out PROVENANCE: where a setting came from (transforms.normalize's from, why),
#         which does not change a row.
AMP_FROM, PROVENANCE_FROM = 2, 3


def fingerprint_inputs(attrs: Mapping[str, Any], widths: Sequence[int]) -> dict[str, Any]:
    """What a cache's fingerprint is computed from, as the cache records it (JSON-able)."""
    out = {k: attrs.get(k) for k in FINGERPRINT_KEYS}
    out["widths"] = [int(w) for w in widths]
    out["compute_dtype"] = attrs.get("compute_dtype")
    out["fingerprint_version"] = attrs.get("fingerprint_version")
    return out


def _version(inputs: Mapping[str, Any]) -> int:
    v = inputs.get("fingerprint_version")
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def fingerprint_of(inputs: Mapping[str, Any]) -> str:
    """16 hex digits of the sha256 of ``inputs`` (:func:`fingerprint_inputs`) under the rules of their
    ``fingerprint_version``: a cache written before a rule keeps the fingerprint it had, and its heads."""
    version = _version(inputs)
    ident = {k: inputs.get(k) for k in FINGERPRINT_KEYS}
    ident["widths"] = inputs.get("widths")
    compute = inputs.get("compute_dtype")
    if version >= AMP_FROM and compute and compute != "float32":
        ident["compute_dtype"] = compute
    if version >= PROVENANCE_FROM:
        ident["transforms"] = without_provenance(ident["transforms"])
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def same_features(inputs: Mapping[str, Any]) -> set[str]:
    """Every fingerprint a cache of these inputs carries under the rules of any version: its own, the
    one with compute_dtype (version 2) and the one without provenance (version 3). A head records
    the fingerprint of the cache it was fitted on; a re-extraction of that cache by this version
    (version 3), or a cache of the same rows whose transforms only say another provenance, is the same
    feature space. Never the version-1 rule for another cache: it leaves out --amp's compute_dtype."""
    return {fingerprint_of(inputs), *(fingerprint_of({**inputs, "fingerprint_version": v}) for v in (2, 3))}


def without_provenance(transforms: Any) -> Any:
    """``transforms`` less what only says where a setting came from (PROVENANCE)."""
    if not isinstance(transforms, dict):
        return transforms
    out = copy.deepcopy(transforms)
    for part, keys in PROVENANCE.items():
        if isinstance(out.get(part), dict):
            for key in keys:
                out[part].pop(key, None)
    return out


def _leaves(a: Any, b: Any, path: str) -> list[tuple[str, Any, Any]]:
    """(dotted path, a's value, b's value) of each place where ``a`` and ``b`` differ, into dicts."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            out += _leaves(a.get(k, _ABSENT), b.get(k, _ABSENT), f"{path}.{k}")
        return out
    return [] if a == b else [(path, a, b)]


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()


def _shown(value: Any, limit: int = 70) -> str:
    text = value if isinstance(value, str) else repr(value) if value is _ABSENT else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def differences(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> tuple[list[str], bool]:
    """What differs between two caches' fingerprint inputs, one phrase each ("transforms.normalize.from:
    unknown (head's cache) vs option (this cache)"), and whether all of it is provenance, which a
    fingerprint of version 3 leaves out. compute_dtype absent and float32 are the same rows."""
    found: list[tuple[str, Any, Any]] = []
    for key in (*FINGERPRINT_KEYS, "widths", "compute_dtype"):
        a, b = theirs.get(key), ours.get(key)
        if key == "compute_dtype":
            a, b = a or "float32", b or "float32"
        found += _leaves(a, b, key)
    paths = {p for p, _, _ in found}
    # "why" only words "from": said once
    found = [f for f in found if not (f[0].endswith(".why") and f[0][: -len("why")] + "from" in paths)]
    provenance = {f"transforms.{part}.{key}" for part, keys in PROVENANCE.items() for key in keys}
    return _phrases(found), bool(found) and all(p in provenance for p, _, _ in found)


def _phrases(found: Sequence[tuple[str, Any, Any]]) -> list[str]:
    return [f"{p}: {_shown(a)} (head's cache) vs {_shown(b)} (this cache)" for p, a, b in found]


def version_note(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> str:
    """The two fingerprint versions, said when they differ ("" otherwise)."""
    a, b = _version(theirs), _version(ours)
    if a == b:
        return ""
    name = {1: "none (written before it existed)"}
    return f"fingerprint_version {name.get(a, a)} (head's cache) vs {name.get(b, b)} (this cache)"


OTHER_PARTS = "layer_pooling, transforms, data_spec, widths or compute_dtype (--amp)"
SHOW = "python -c \"from laya_inspect import FeatureStore as S; print(S('CACHE').fingerprint_inputs)\""


def mismatch_said(theirs: Mapping[str, Any] | None, ours: Mapping[str, Any], known: Mapping[str, Any]) -> str:
    """Which part of two caches' fingerprints differs, for a head of one refused on the other:
    ``theirs`` are the inputs of the head's cache when known (the head recorded them, or its cache
    was found), else ``known`` holds the few of them an older head recorded (model_spec, …)."""
    if theirs is None:
        said = _phrases([leaf for key, value in known.items() for leaf in _leaves(value, ours.get(key), key)])
        if said:
            return "the cache's " + _listed(said)
        return (
            f"the caches' {', '.join(known)} are the same, so their {OTHER_PARTS} differs; the head (written "
            "before heads recorded those) does not say which, nor is its cache found from here (run where it was "
            f"fitted, or compare both caches with {SHOW})"
        )
    said, provenance_only = differences(theirs, ours)
    note = version_note(theirs, ours)
    if not said:
        return f"the same inputs, fingerprinted under other rules ({note}); fit the head again on this cache"
    if provenance_only:
        return (
            f"only where a setting came from differs ({_listed(said)}), not the features, which are the same: "
            f"caches written before fingerprint_version {PROVENANCE_FROM} count it in their fingerprint "
            "(fit the head again on this cache to match it)"
        )
    return "the cache's " + _listed(said) + (f" ({note})" if note else "")


def _listed(said: Sequence[str], most: int = 4) -> str:
    more = f"; and {len(said) - most} more" if len(said) > most else ""
    return "; ".join(said[:most]) + more


# What reads a cache's rows beside the data itself: two caches that differ here give other features
# for the very same inputs. The data's own parts of `transforms` (how its files decode and scale,
# where the sizes come from, the model folder's path) may differ between two data sets read alike.
EXTRACTION_KEYS = ("model_spec", "weights_sha256", "layer_pooling", "transforms", "compute_dtype")
DATA_OWN = ("transforms.decode", "transforms.scale", "transforms.resize.from", "transforms.name_or_path")


def extraction_differences(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """ "path: ours vs theirs" for each place two caches' attributes say they were extracted otherwise
    (model, weights, pooling, input transforms, --amp), provenance and the data's own parts left out."""
    found: list[tuple[str, Any, Any]] = []
    for key in EXTRACTION_KEYS:
        a, b = ours.get(key), theirs.get(key)
        if key == "compute_dtype":
            a, b = a or "float32", b or "float32"
        if key == "transforms":
            a, b = _resize_compared(without_provenance(a), without_provenance(b))
        found += [f for f in _leaves(a, b, key) if f[0] not in DATA_OWN]
    return [f"{p}: {_shown(a)} vs {_shown(b)}" for p, a, b in found]


def extracted_otherwise(path: Any, ours: Mapping[str, Any], other: Any, theirs: Mapping[str, Any]) -> list[str]:
    """A warning when the cache at ``other`` was read through another model, weights, pooling or
    input transforms than the one at ``path`` (diagnose --against): the same images may then give other
    features, and a shift read between the two caches is partly that."""
    said = extraction_differences(ours, theirs)
    if not said:
        return []
    return [
        f"{other} was extracted otherwise than {path} ({_listed(said)}; this cache's value first): the same inputs "
        "may give other features there, so a shift read between them may be partly the extraction's, not the "
        "data's; extract both with the same model, --weights, --pool and input settings"
    ]


def _resize_compared(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b``, less ``resize`` where one records none: that source's arrays were at the
    model's size already (an npz: of the same images as an image folder resized to that size), and
    the output shape, compared, says the size."""
    if isinstance(a, dict) and isinstance(b, dict) and (a.get("resize") is None or b.get("resize") is None):
        return {k: v for k, v in a.items() if k != "resize"}, {k: v for k, v in b.items() if k != "resize"}
    return a, b


# The folders of installed packages: a module found there is recorded by its package's version.
INSTALLED = ("site-packages", "dist-packages")


def module_code(spec: str) -> dict[str, str]:
    """``model_code`` for a ``python:pkg.module:factory`` model, once it is imported: where the module is
    the user's own (a source file outside the installed packages' folders and the standard library, such
    as one on PYTHONPATH or in the working folder), {path from the folder its top package lies in: sha256}
    of it, the packages it is imported through and the modules under that folder it imports, recursively
    (read from its import statements, as a ``python:FILE.py`` model's code is); where it lies in an
    installed package, {"NAME (installed package)": version} (:data:`~.partial.PACKAGE`). {} for every
    other spec (a ``python:FILE.py`` model's is the loader's ``code_files``), and for the standard library."""
    import importlib.util
    import sysconfig

    from ..models.local import model_file

    source, _, target = spec.partition(":")
    name = target.rpartition(":")[0]
    if source != "python" or not name or model_file(spec) is not None:
        return {}
    try:
        found = importlib.util.find_spec(name)  # the module already imported: its own spec
    except (ImportError, ValueError):
        return {}
    if found is None or not found.has_location or not found.origin or not Path(found.origin).is_file():
        return {}
    origin = Path(found.origin).resolve()
    if any(part in INSTALLED for part in origin.parts):
        return _installed(name)
    stdlib = {Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib")}
    if stdlib & set(origin.parents):
        return {}
    parts = name.split(".")
    root = origin.parents[len(parts) - (0 if origin.stem == "__init__" else 1)]
    return {p.relative_to(root).as_posix(): d for p, d in _local_code(origin, parts, root).items()}


def _installed(name: str) -> dict[str, str]:
    """{"NAME (installed package)": version} of the distribution(s) that install the module ``name``."""
    import importlib.metadata

    from .partial import PACKAGE

    top = name.split(".")[0]
    try:  # most packages are named as they are imported: the map of every one is read only where not (1 s)
        return {top + PACKAGE: importlib.metadata.version(top)}
    except importlib.metadata.PackageNotFoundError:
        dists = importlib.metadata.packages_distributions().get(top) or [top]
    out = {}
    for dist in dists:
        try:
            out[dist + PACKAGE] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist + PACKAGE] = "unknown"
    return out


def _local_code(origin: Path, parts: list[str], root: Path) -> dict[Path, str]:
    """``origin`` (the module named ``parts``), the packages' ``__init__.py`` it is imported through, and
    every module under ``root`` they import, recursively, each with its sha256; ``origin`` first."""
    import ast

    found = {origin, *_under(root, parts[:-1])}
    todo, digests = sorted(found), {}
    while todo:
        current = todo.pop()
        read = current.read_bytes()
        digests[current] = hashlib.sha256(read).hexdigest()
        inner = list(current.relative_to(root).with_suffix("").parts)
        package = ".".join(inner[:-1])  # what its relative imports start from (a package's __init__: itself)
        try:
            tree = ast.parse(read)
        except (SyntaxError, ValueError):  # importing it says what is wrong
            continue
        for node in ast.walk(tree):
            for dotted in _names(node, package):
                for target in _under(root, dotted.split(".")):
                    if target not in found:
                        found.add(target)
                        todo.append(target)
    return {p: digests[p] for p in [origin, *sorted(found - {origin})]}


def _names(node: Any, package: str) -> list[str]:
    """The dotted names an import statement in a module of ``package`` may run: ``import a.b``'s ``a.b``;
    ``from .x import y``'s ``package.x`` and ``package.x.y`` (where ``y`` is a submodule)."""
    import ast
    import importlib.util

    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    try:
        base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
    except (ImportError, ValueError):  # beyond the top package: not code under its folder
        return []
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _under(root: Path, parts: list[str]) -> list[Path]:
    """The files under ``root`` that importing the module ``parts`` runs: each package's ``__init__.py``
    on the way, then the module's own file."""
    if not parts:
        return []
    steps = [root.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts) + 1)]
    return [p for p in [*steps, root.joinpath(*parts[:-1], parts[-1] + ".py")] if p.is_file()]
