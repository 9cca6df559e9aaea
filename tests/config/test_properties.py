"""Properties of the override parser and of config validation, over generated input: any
command-line text either becomes a config whose values are all in range, or is one UsageError;
nothing else ever escapes."""

import dataclasses
import math

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mixit.common.errors import UsageError  # noqa: E402
from mixit.config.overrides import parse_overrides  # noqa: E402
from mixit.config.schema import ModelConfig, TrainConfig  # noqa: E402
from mixit.training.resolve import resolve_config  # noqa: E402

KEYS = [f"model.{f.name}" for f in dataclasses.fields(ModelConfig)] + [
    f"train.{f.name}" for f in dataclasses.fields(TrainConfig)
]
# Values a careless or hostile user types: numbers of every size and sign, non-finite
# spellings, booleans, words, empty text, control and non-ASCII characters.
VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "none", "true", "false", "", "1e309", "0x10", "½"]),
    st.text(max_size=12),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=5))
def test_the_override_parser_returns_pairs_or_one_usage_error(items):
    try:
        parsed = parse_overrides(items)
    except UsageError:
        assert any("=" not in item or "." not in item.partition("=")[0] for item in items)
        return
    last = {}
    for item in items:
        key, _, value = item.partition("=")
        assert "." in key
        last[key.strip()] = value.strip()
    assert parsed == last  # every pair kept, the later of two equal keys winning


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4))
def test_any_override_values_give_a_valid_config_or_a_usage_error(overrides):
    try:
        config = resolve_config("addition", "mixit", "tiny", 0, overrides)
    except UsageError:
        return
    for section in (config.model, config.train):
        for option in dataclasses.fields(section):
            value = getattr(section, option.name)
            assert not isinstance(value, float) or math.isfinite(value), option.name
    assert config.train.lr > 0 and 0 <= config.train.beta1 < 1 and config.train.grad_clip > 0
    assert config.model.n_embd % config.model.n_head == 0 and config.model.rope_base > 0


def test_every_option_given_its_own_resolved_value_resolves_to_it():
    """The other side of the property above: a resolver that refused everything would pass
    it, so every key typed back as the text of the value it resolves to is accepted."""
    base = resolve_config("addition", "mixit", "tiny", 0)
    for key in KEYS:
        section, _, name = key.partition(".")
        value = getattr(getattr(base, section), name)
        text = (
            "none"
            if value is None
            else str(value).lower()
            if isinstance(value, bool)
            else str(value)
        )
        config = resolve_config("addition", "mixit", "tiny", 0, {key: text})
        assert getattr(getattr(config, section), name) == value, key


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_any_seed_is_accepted_in_range_or_refused(seed):
    try:
        resolve_config("addition", "standard", "tiny", seed)
    except UsageError as error:
        assert not 0 <= seed < 2**62 and "--seed" in str(error)
        return
    assert 0 <= seed < 2**62
