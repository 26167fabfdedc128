"""Command-line overrides (``key=value``, ``+key=value``, ``~key``, ``group=option``), read in one place."""

from __future__ import annotations

from typing import Iterable


def key_of(override: str) -> str:
    """The dotted key an override sets: ``+a.b=1`` -> ``a.b``."""
    return override.split("=", 1)[0].lstrip("+~")


def with_overrides(base: Iterable[str], *extra: str) -> tuple[str, ...]:
    """``base`` with ``extra`` replacing any override of the same key."""
    replaced = {key_of(o) for o in extra}
    return (*(o for o in base if key_of(o) not in replaced), *extra)


def without_keys(overrides: Iterable[str], *keys: str, prefix: str | None = None) -> list[str]:
    """``overrides`` minus those of ``keys`` and of any key starting with ``prefix``."""
    return [o for o in overrides if key_of(o) not in keys and not (prefix and key_of(o).startswith(prefix))]


# Mappings whose keys are the user's own (chat template and processor arguments, one task's settings): a
# key set there is added or replaced, as the README and the error messages write it, with no Hydra "+" to know.
OPEN_MAPPINGS = ("model.chat_template_kwargs.", "model.processor_kwargs.", "per_task.")


def open_key(override: str) -> str:
    return f"++{override}" if override.startswith(OPEN_MAPPINGS) and "=" in override else override
