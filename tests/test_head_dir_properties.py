"""Properties of head-directory loading: whatever config.json and weights.pt hold, `load_head` either
rebuilds the saved head (identical logits) or raises the project's own error, never anything else."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laya_inspect.errors import LayaError
from laya_inspect.head_dir import load_head, save_head
from laya_inspect.heads import build_head

WIDTHS = [3, 5]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def original() -> tuple[Path, dict, bytes]:
    root = Path(tempfile.mkdtemp(prefix="head-props-"))
    torch.manual_seed(0)
    d = save_head(root / "head", build_head("laya", WIDTHS, 4, d_star=6, tau=0.9, psi="mlp"), meta={"seed": 0})
    yield d, json.loads((d / "config.json").read_text()), (d / "weights.pt").read_bytes()
    shutil.rmtree(root)


def _inputs() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(7)
    return [torch.randn(6, w, generator=gen) for w in WIDTHS]


def _load_or_laya_error(d: Path):
    """The head, or None after a LayaError whose message is one line; any other exception fails the test."""
    try:
        head, _ = load_head(d)
    except LayaError as e:
        assert "\n" not in str(e) and str(d) in str(e)
        return None
    with torch.no_grad():
        assert torch.isfinite(head(_inputs()).logits).all()
    return head


def _copy(src: Path, tmp: Path, config: str | bytes | None = None, weights: bytes | None = None) -> Path:
    d = Path(tempfile.mkdtemp(dir=tmp))
    (d / "config.json").write_bytes(config.encode() if isinstance(config, str) else config or b"")
    if weights is not None:
        (d / "weights.pt").write_bytes(weights)
    return d


@SETTINGS
@given(value=json_values)
def test_any_json_as_config_loads_or_is_refused(original, tmp_path_factory, value) -> None:
    d, _, weights = original
    text = json.dumps(value)  # NaN and Infinity included: Python's json reads them back
    _load_or_laya_error(_copy(d, tmp_path_factory.mktemp("c"), text, weights))


@SETTINGS
@given(data=st.binary(max_size=300))
def test_any_bytes_as_config_load_or_are_refused(original, tmp_path_factory, data) -> None:
    d, _, weights = original
    _load_or_laya_error(_copy(d, tmp_path_factory.mktemp("c"), data, weights))


@SETTINGS
@given(
    drop=st.sets(st.sampled_from(["schema_version", "kind", "kwargs", "cache_fingerprint"])),
    extra=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    kw_drop=st.sets(
        st.sampled_from(["widths", "num_classes", "d_star", "tau", "psi", "score_width", "init", "standardize"])
    ),
    kw_set=st.dictionaries(
        st.sampled_from(
            ["widths", "num_classes", "d_star", "tau", "psi", "score_width", "init", "standardize", "depth"]
        ),
        json_values | st.lists(st.integers(-3, 10**9), max_size=3),
        max_size=3,
    ),
    top_set=st.dictionaries(st.sampled_from(["schema_version", "kind", "kwargs"]), json_values, max_size=2),
)
def test_edited_configs_load_the_same_head_or_are_refused(
    original, tmp_path_factory, drop, extra, kw_drop, kw_set, top_set
) -> None:
    d, config, weights = original
    edited = {k: v for k, v in config.items() if k not in drop}
    edited.update(extra)
    if isinstance(edited.get("kwargs"), dict):
        edited["kwargs"] = {k: v for k, v in edited["kwargs"].items() if k not in kw_drop} | kw_set
    edited.update(top_set)
    head = _load_or_laya_error(_copy(d, tmp_path_factory.mktemp("c"), json.dumps(edited), weights))
    unchanged = all(edited.get(k) == config[k] for k in ("schema_version", "kind", "kwargs"))
    if unchanged:  # the same head must come back, exactly
        assert head is not None
        reference, _ = load_head(d)
        with torch.no_grad():
            torch.testing.assert_close(head(_inputs()).logits, reference(_inputs()).logits, rtol=0, atol=0)
    elif head is not None:  # loaded with other kwargs: only ones that build the very same shapes
        assert head.config()["widths"] == WIDTHS


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_random_bytes_as_weights_are_refused(original, tmp_path_factory, data) -> None:
    d, config, _ = original
    assert _load_or_laya_error(_copy(d, tmp_path_factory.mktemp("w"), json.dumps(config), data)) is None


@SETTINGS
@given(cut=st.integers(0, 10**6), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=4))
def test_truncated_or_flipped_weights_load_or_are_refused(original, tmp_path_factory, cut, flips) -> None:
    d, config, weights = original
    data = bytearray(weights[: cut % (len(weights) + 1)])
    for pos, xor in flips:
        if data:
            data[pos % len(data)] ^= xor
    head = _load_or_laya_error(_copy(d, tmp_path_factory.mktemp("w"), json.dumps(config), bytes(data)))
    if bytes(data) == weights:
        assert head is not None
