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
OPEN_MAPPINGS = ("model.chat_template_kwargs.", "model.processor_kwargs.", "task_overrides.")


def open_key(override: str) -> str:
    return f"++{override}" if override.startswith(OPEN_MAPPINGS) and "=" in override else override


# Keys whose sweep changes a study's samples, charts or a run's answers under the same run name:
# a --multirun over one of them needs an out_dir per job (else each job overwrites the last's).
STUDY_KEYS = ("task.", "task_overrides.", "render.", "data.", "infer.generation.", "infer.image.", "infer.prompt_layout")


def shared_out_dir(swept: Iterable[str], overrides: Iterable[str]) -> list[str]:
    """The ``swept`` keys of a --multirun whose jobs would share one out_dir: keys of
    :data:`STUDY_KEYS`, unless out_dir is given with an interpolation (``out_dir=outputs/i${task.samples.interval}``)
    or swept itself. The default out_dir is named after data= and data.path, so sweeping those
    gives each job its own."""
    given = {key_of(o): o.split("=", 1)[1] for o in overrides if "=" in o}
    if "out_dir" in swept or "${" in given.get("out_dir", ""):
        return []
    own = () if "out_dir" in given else ("data", "data.path")
    return [k for k in swept if (k == "data" or k.startswith(STUDY_KEYS)) and k not in own]
