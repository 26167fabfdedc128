"""Settings as frozen dataclasses, built and checked once per job from a config block.

The config files stay the source of the defaults (Hydra composes and overrides them); each block a
job reads (a task's ``task:``, ``infer:``, ``render:``, ...) is mirrored by a dataclass whose fields
declare their checks (:func:`setting`) and whose ``__post_init__`` checks what spans fields.
:func:`build` turns the block into that dataclass, so a bad or unknown key is one line naming the
key, the value and what is allowed, and code reads typed fields instead of string lookups.
"""

from __future__ import annotations

import difflib
import typing
from dataclasses import MISSING, field, fields, is_dataclass
from typing import Any, Callable, Mapping

from omegaconf import OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from candlebench.core.rules import ConfigError, date_or_null

Check = tuple[Callable[[Any], bool], str]  # (test of the plain value, what is allowed)
DATE: Check = (date_or_null, "a date (YYYY-MM-DD) or null")


def setting(check: Check | None = None, key_of: str | None = None, default: Any = MISSING) -> Any:
    """A field whose value, as the config gives it (lists still lists), must pass ``check``, or be
    a key of the mapping field ``key_of`` declared before it (``language`` of ``prompts``);
    ``default``: for the runtime types that code also makes without a config (a ``Shard()``)."""
    return field(default=default,
                 metadata={k: v for k, v in (("check", check), ("key_of", key_of)) if v is not None})


def _frozen(value: Any) -> Any:
    """Lists as tuples, all the way down: a setting cannot be changed in place."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value


def _value(values: Any, name: str, key: str) -> Any:
    """``values[name]`` as plain Python, interpolations resolved now: field by field in their
    order, so ``language`` is checked before the ``prompt`` that interpolates it fails to resolve."""
    try:
        value = values[name]
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except MissingMandatoryValue:  # a ??? left unset: the command says which key to set
        raise
    except OmegaConfBaseException as err:
        raise ConfigError(f"{key}: does not resolve: {str(err).splitlines()[0]}") from None


def build(cls: type, values: Mapping[str, Any], prefix: str = "task") -> Any:
    """``cls`` from the mapping ``values`` (a composed config block or a plain mapping; ``prefix``:
    where it sits in the config, for the errors): nested dataclass fields from nested mappings,
    each value checked by its field's check."""
    names = [f.name for f in fields(cls) if f.init]
    for key in values:
        if key not in names:
            nearest = difflib.get_close_matches(str(key), names, n=3, cutoff=0.6)
            raise ConfigError(f"{prefix}.{key}: not a setting here; "
                              + (f"nearest: {', '.join(nearest)}" if nearest else f"the settings: {names}"))
    hints = typing.get_type_hints(cls)
    given = {}
    for f in fields(cls):
        if not f.init:
            continue
        key = f"{prefix}.{f.name}"
        if OmegaConf.is_config(values) and OmegaConf.is_missing(values, f.name):
            values[f.name]  # a ??? left unset: MissingMandatoryValue, which the command says in one line
        if f.name not in values:
            if f.default is MISSING and f.default_factory is MISSING:
                where = "the task's config.yaml" if prefix.split(".")[0] == "task" else f"conf/{prefix.split('.')[0]}/"
                raise ConfigError(f"{key}: missing; {where} gives every setting a default")
            continue
        kind = hints[f.name]
        if is_dataclass(kind):
            value = values[f.name]
            if not isinstance(value, Mapping):
                raise ConfigError(f"{key}={value!r}: must be a mapping of {[g.name for g in fields(kind)]}")
            given[f.name] = build(kind, value, key)
            continue
        value = _value(values, f.name, key)
        check, key_of = f.metadata.get("check"), f.metadata.get("key_of")
        if check is not None and not check[0](value):
            raise ConfigError(f"{key}={value!r}: must be {check[1]}")
        if key_of is not None and value not in given[key_of]:
            raise ConfigError(f"{key}={value!r}: must be one of {sorted(given[key_of])} ({prefix}.{key_of})")
        given[f.name] = _frozen(value)
    return cls(**given)
