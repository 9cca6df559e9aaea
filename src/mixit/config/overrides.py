"""Settings from text: dotted overrides from the command line, and a stored config.json read
back into a RunConfig, both converted and checked field by field."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from mixit.common.errors import UsageError, did_you_mean
from mixit.config.identity import ADDED_LATER
from mixit.config.schema import RunConfig, check_choice

# A setting's value as the command line gives it (text) or a program does (a number, a flag,
# or None), before ``convert`` makes it its field's type; every config field is a scalar.
Setting = str | int | float | bool | None
# Dotted settings, ``{"model.n_layer": 4, "train.lr": "3e-3"}``: overrides, presets, choices.
Settings = Mapping[str, Setting]


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``["model.n_layer=4", ...]`` -> ``{"model.n_layer": "4"}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            raise UsageError(
                f"override '{item}' is not of the form section.key=value "
                "(sections: model, task, train)"
            )
        out[key.strip()] = value.strip()
    return out


def with_settings(config: RunConfig, settings: Settings) -> RunConfig:
    """A new config: ``config`` with the dotted ``settings`` set, each converted to its
    field's type (``config`` is frozen, and stays as it was)."""
    sections = {"model": config.model, "task": config.task, "train": config.train}
    changes: dict[str, dict[str, object]] = {}
    for key, raw in settings.items():
        section_name, _, name = key.partition(".")
        if section_name not in sections:
            raise UsageError(f"unknown section in '{key}'; sections are: model, task, train")
        types_by_name = _field_types(type(sections[section_name]))
        valid = list(types_by_name)
        if name not in valid:
            guess = did_you_mean(name, valid, prefix=f"{section_name}.")
            raise UsageError(
                f"unknown key '{key}'{guess}; valid {section_name} keys: {', '.join(valid)}"
            )
        changes.setdefault(section_name, {})[name] = convert(key, raw, types_by_name[name])
    if not changes:
        return config
    changed = {part: dataclasses.replace(sections[part], **new) for part, new in changes.items()}
    return dataclasses.replace(config, **changed)


@functools.cache
def _field_types(section: type) -> dict[str, Any]:
    """A section's field names (in declaration order) and types, resolved once per class: the
    string annotations of ``from __future__ import annotations`` are slow to evaluate, and a
    reproduction's plan resolves thousands of overrides."""
    hints = typing.get_type_hints(section)
    return {f.name: hints[f.name] for f in dataclasses.fields(section)}


def convert(key: str, raw: Any, target: Any) -> Any:
    """Convert ``raw`` (a string from the command line, or a Python value) to ``target``."""
    if typing.get_origin(target) is Literal:
        check_choice(key, raw, typing.get_args(target))
        return raw
    allowed = typing.get_args(target) if _is_union(target) else (target,)
    if not isinstance(raw, str):
        if any(_isinstance(raw, t) for t in allowed):
            return float(raw) if float in allowed and isinstance(raw, int) else raw
        raise UsageError(f"{key}={raw!r} has the wrong type; expected {_type_name(target)}")
    if type(None) in allowed and raw.lower() in ("none", "null"):
        return None
    for t in allowed:
        if t is bool and raw.lower() in ("true", "false", "1", "0", "yes", "no"):
            return raw.lower() in ("true", "1", "yes")
        if t is int:
            try:
                return int(raw)
            except ValueError:
                continue
        if t is float:
            try:
                return float(raw)
            except ValueError:
                continue
        if t is str:
            return raw
    raise UsageError(f"{key}={raw!r} is not a valid {_type_name(target)}")


def _is_union(t: Any) -> bool:
    return typing.get_origin(t) in (typing.Union, types.UnionType)


def _isinstance(value: Any, t: Any) -> bool:
    if t is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, t)


def _type_name(t: Any) -> str:
    if _is_union(t):
        return " or ".join(_type_name(a) for a in typing.get_args(t))
    return "none" if t is type(None) else t.__name__


def from_dict(data: Mapping[str, Any], task_spec: Any, variant_spec: Any) -> RunConfig:
    """Rebuild a RunConfig from ``config.json`` (the inverse of ``RunConfig.to_dict``), carrying
    the ``task_spec`` and ``variant_spec`` its names were looked up as.

    Each stored value is checked as the command line's are (``with_settings``): a stored
    config holding a key or a type mixit does not write is a UsageError naming it.
    """
    if not isinstance(data, Mapping):
        raise UsageError("expected a JSON object of a run's settings")
    config = RunConfig(
        task_name=_stored(data, "task_name", str),
        variant=_stored(data, "variant", str),
        preset=_stored(data, "preset", str),
        seed=_stored(data, "seed", int),
        task=task_spec.config_cls(),
        task_spec=task_spec,
        variant_spec=variant_spec,
    )
    settings: dict[str, Setting] = {}
    for section in ("model", "task", "train"):
        stored = data.get(section)
        if not isinstance(stored, Mapping):
            raise UsageError(f"'{section}' is not a section of settings")
        settings |= {f"{section}.{key}": value for key, value in stored.items()}
        # A config written before a setting existed ran at the setting's original value.
        for (where, key), original in ADDED_LATER.items():
            if where == section and key not in stored and hasattr(getattr(config, section), key):
                settings[f"{section}.{key}"] = original
    return with_settings(config, settings)


def _stored(data: Mapping[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if not _isinstance(value, kind):
        raise UsageError(f"'{key}' must be a {kind.__name__}, got {value!r}")
    return value
