"""JointConfig.model_kwargs cannot set what JointConfig's own fields set (library use only)."""

from __future__ import annotations

import pytest

from laya_inspect.errors import InputError
from laya_inspect.training.fit_config import JointConfig


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"init": "torch"}, "must not set init: give JointConfig's own field of that name instead \\(--init on"),
        ({"ln_eps": 1e-5, "hidden": [8]}, "must not set ln_eps: .* \\(--ln-eps on the command line\\)"),
        ({"init": "torch", "ln_eps": 1e-5}, "must not set init, ln_eps: .* \\(--init, --ln-eps on"),
    ],
)
def test_model_kwargs_refuses_a_key_a_field_sets(kwargs, said) -> None:
    """Before: model_kwargs={"init": "torch"} built the backbone with torch's init while the head and the
    recorded config said glorot, and {"ln_eps": …} won over the field without a word."""
    with pytest.raises(InputError, match=f"model_kwargs {said}"):
        JointConfig(model="zoo:cnn", model_kwargs=kwargs)


def test_model_kwargs_still_takes_the_constructor_arguments_no_field_sets() -> None:
    config = JointConfig(model="zoo:mlp", init="torch", ln_eps=1e-5, model_kwargs={"hidden": [8, 4]})
    assert (config.init, config.ln_eps, config.model_kwargs) == ("torch", 1e-5, {"hidden": [8, 4]})


def test_model_kwargs_refuses_num_classes_the_data_decides() -> None:
    """Before: {"num_classes": 3} silently won over the data's class count when train built the backbone."""
    with pytest.raises(InputError, match="model_kwargs must not set num_classes: train takes the class count"):
        JointConfig(model="zoo:mlp", model_kwargs={"num_classes": 3})
