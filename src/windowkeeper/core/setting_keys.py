"""Dotted keys over a tree of pydantic section models (see :mod:`.settings`).

The settings are nested sections; the file, the environment and error reports name a
value by its dotted path (``compression.threshold``). These helpers walk the model tree
for those paths: which paths are leaves, what an environment variable's text means for a
leaf's type, where a value came from, and how a validation error reads.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from .errors import ConfigError

_NULL_WORDS = frozenset({"", "null", "none", "~"})


def _submodel(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def flatten_keys(raw: Mapping[str, Any], model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted keys of the leaves in ``raw`` (unknown keys included, for error reports)."""
    keys: list[str] = []
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        field = model.model_fields.get(str(key))
        sub = _submodel(field.annotation) if field is not None else None
        if sub is not None and isinstance(value, Mapping):
            keys.extend(flatten_keys(value, sub, dotted + "."))
        else:
            keys.append(dotted)
    return keys


def leaves(root: type[BaseModel], data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The leaf values of ``data`` (a dump of ``root``) by dotted key."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        field_model = _model_at(root, f"{prefix}{key}".split("."))
        if isinstance(value, dict) and field_model is not None:
            out.update(leaves(root, value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _model_at(root: type[BaseModel], path: list[str]) -> type[BaseModel] | None:
    """The section model at a dotted path, None for leaves and unknown paths."""
    model: type[BaseModel] | None = root
    for name in path:
        field = model.model_fields.get(name) if model is not None else None
        model = _submodel(field.annotation) if field is not None else None
    return model


def _leaf_annotation(root: type[BaseModel], path: list[str]) -> tuple[bool, object]:
    """(known leaf?, its annotation) for a path of field names."""
    section = _model_at(root, path[:-1]) if len(path) > 1 else None
    field = section.model_fields.get(path[-1]) if section is not None else None
    if field is None or _submodel(field.annotation) is not None:
        return False, None
    return True, field.annotation


def _is_text(annotation: object) -> bool:
    if annotation is str:
        return True
    return get_origin(annotation) in (Union, types.UnionType) and str in get_args(annotation)


def env_overrides(
    root: type[BaseModel], env: Mapping[str, str], prefix: str
) -> list[tuple[str, str, Any]]:
    """(variable, dotted key, parsed value) for each ``<prefix><A>__<B>`` variable."""
    out: list[tuple[str, str, Any]] = []
    for name in sorted(env):
        if not name.startswith(prefix) or "__" not in name:
            continue
        path = name[len(prefix) :].lower().split("__")
        known, annotation = _leaf_annotation(root, path)
        if not known:
            raise ConfigError(f"{name}: no setting {'.'.join(path)} (check the spelling)")
        out.append((name, ".".join(path), _parse_env_value(env[name], annotation)))
    return out


def _parse_env_value(text: str, annotation: object) -> Any:
    if text.strip().lower() in _NULL_WORDS:
        return None
    if _is_text(annotation):
        return text  # verbatim: a model named "on" or "1.0" stays a string
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text  # validation reports it with the variable's name


def assign(raw: dict[str, Any], dotted: str, value: Any, config_file: Path | None) -> None:
    """Set ``dotted`` in the raw mapping read from ``config_file``."""
    *sections, leaf = dotted.split(".")
    node = raw
    for depth, name in enumerate(sections):
        child = node.setdefault(name, {})
        if not isinstance(child, dict):
            where = ".".join(sections[: depth + 1])
            raise ConfigError(f"{where} in {config_file} must be a mapping, got {child!r}")
        node = child
    node[leaf] = value


def describe(exc: ValidationError, sources: Mapping[str, str], default: str) -> str:
    """A validation error as one line: each key, what is wrong, the value, its source."""
    problems = []
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        source = _source_of(key, sources, default)
        message = "unknown setting" if error["type"] == "extra_forbidden" else error["msg"]
        problems.append(f"{key}: {message}, got {error['input']!r} (from {source})")
    return "invalid configuration: " + "; ".join(problems)


def _source_of(key: str, sources: Mapping[str, str], default: str) -> str:
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        found = sources.get(".".join(parts[:end]))
        if found is not None:
            return found
    return default
