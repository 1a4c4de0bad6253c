"""Properties of the layer selector: any request either resolves to a non-empty list of distinct,
valid layer names or raises the project's own one-line error."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from laya_inspect.errors import InputError, LayaError, NotFoundError
from laya_inspect.layers import resolve_layers

NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,5}(\.[a-z0-9_]{1,3}){0,2}", fullmatch=True) | st.from_regex(
    r"[0-9]{1,2}(\.[0-9]){0,1}", fullmatch=True
)  # dotted module paths, and the digit names of Sequential children


@st.composite
def models(draw) -> tuple[list[str], list[str]]:
    """(candidates, default): default layers are usually candidates, sometimes virtual extras."""
    candidates = draw(st.lists(NAME, max_size=12, unique=True))
    picked = draw(st.lists(st.sampled_from(candidates), unique=True)) if candidates else []
    extra = draw(st.lists(NAME.map(lambda n: f"outputs.{n}"), max_size=2, unique=True))
    return candidates, picked + extra


def items(candidates: list[str], default: list[str]) -> st.SearchStrategy[str]:
    ints = st.integers(-15, 15).map(str)
    bound = st.one_of(st.none(), st.integers(-15, 15))
    ranges = st.tuples(bound, bound, st.one_of(st.none(), st.integers(-4, 4))).map(
        lambda t: (
            f"{'' if t[0] is None else t[0]}:{'' if t[1] is None else t[1]}" + ("" if t[2] is None else f":{t[2]}")
        )
    )
    known = st.sampled_from(candidates + default) if candidates + default else st.just("all")
    garbage = st.text(max_size=8)
    return st.one_of(st.just("all"), ints, ranges, known, NAME, garbage, st.sampled_from(["", " ", "-", ":", "::"]))


@st.composite
def requests(draw) -> tuple[object, list[str], list[str]]:
    candidates, default = draw(models())
    parts = draw(st.lists(items(candidates, default), max_size=6))
    if draw(st.booleans()):
        sep = draw(st.sampled_from([",", ", ", " ,", ",,"]))
        return sep.join(parts), candidates, default
    return parts, candidates, default  # a list, as the Python API takes it


@settings(max_examples=150, deadline=None)
@given(requests())
def test_any_request_resolves_to_valid_distinct_layers_or_raises_a_laya_error(case):
    request, candidates, default = case
    try:
        names = resolve_layers(request, candidates, default)
    except LayaError as e:
        assert isinstance(e, (InputError, NotFoundError))
        assert str(e) and "\n" not in str(e)
        return
    assert names, "an empty selection must be an error"
    assert len(set(names)) == len(names)
    assert set(names) <= set(candidates) | set(default)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40), models())
def test_arbitrary_text_never_escapes_the_error_family(text, model):
    candidates, default = model
    try:
        names = resolve_layers(text, candidates, default)
    except LayaError as e:
        assert "\n" not in str(e)
    else:
        assert names and len(set(names)) == len(names) and set(names) <= set(candidates) | set(default)


@settings(max_examples=100, deadline=None)
@given(models(), st.data())
def test_distinct_plain_names_come_back_as_asked(model, data):
    candidates, default = model
    plain = [n for n in candidates + default if not n.lstrip("-").isdigit() and n != "all"]
    assume(plain)
    asked = data.draw(st.lists(st.sampled_from(plain), min_size=1, unique=True))
    assert resolve_layers(",".join(asked), candidates, default) == asked


@settings(max_examples=100, deadline=None)
@given(models(), st.integers(-20, 20), st.integers(-20, 20), st.sampled_from([None, 1, 2, -1, -2]))
def test_indices_and_ranges_follow_python_indexing_over_the_default_layers(model, a, b, step):
    candidates, default = model
    assume(default)
    if -len(default) <= a < len(default):
        assert resolve_layers(str(a), candidates, default) == [default[a]]
    else:
        with pytest.raises(NotFoundError, match="out of range"):
            resolve_layers(str(a), candidates, default)
    request = f"{a}:{b}" + ("" if step is None else f":{step}")
    expected = default[slice(a, b, step)]
    if expected:
        assert resolve_layers(request, candidates, default) == expected
    else:
        with pytest.raises(InputError, match="selects none"):
            resolve_layers(request, candidates, default)
    assert resolve_layers("all", candidates, default) == default


@settings(max_examples=100, deadline=None)
@given(models(), st.data())
def test_naming_a_layer_twice_is_refused(model, data):
    candidates, default = model
    named = [n for n in default if not n.isdigit()]  # a digit item is an index, not a name
    assume(named)
    name = data.draw(st.sampled_from(named))
    with pytest.raises(InputError, match="more than once"):
        resolve_layers(f"all,{name}", candidates, default)
    with pytest.raises(InputError, match="more than once"):
        resolve_layers([name, name], candidates, default)


@settings(max_examples=100, deadline=None)
@given(st.lists(NAME, max_size=6, unique=True), st.sampled_from(["all", "0", "-1", "0:2", "::-1"]))
def test_positional_items_on_a_model_without_default_layers_are_refused(candidates, item):
    with pytest.raises(InputError, match="has none.*--list-layers"):
        resolve_layers(item, candidates, [])
