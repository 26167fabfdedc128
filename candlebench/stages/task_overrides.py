"""``task_overrides.<task>.<key>``: a setting for one task only, merged over that task's ``task:`` block when
it runs. A command over several tasks (``run``, ``sweep``) hands every job the same overrides; no
job needs to know which task owns a key. ``task_overrides`` wins over ``task:``: it is the more
specific, except where a config file (an ``experiment=``) set it and the user typed ``task.<key>``:
what the user typed wins over what a file they did not write says.

Every task's overrides are checked in every job, against that task's settings: a typo in another
task's key (``task_overrides.e2a.samples.intervl=5``) fails a forecast-only stage too, rather than
pass unnoticed until the day an E2A job runs."""

from __future__ import annotations

import difflib
import os
from functools import cache
from typing import Sequence

from omegaconf import DictConfig, OmegaConf, open_dict

from candlebench.core.overrides import key_of
from candlebench.core.rules import ConfigError
from candlebench.task_api import registry


def _leaves(node: DictConfig, prefix: str = "") -> list[str]:
    out = []
    for key in node:
        child = node._get_node(key)
        if isinstance(child, DictConfig) and len(child) > 0:
            out += _leaves(child, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}")
    return out


def is_setting(block: DictConfig, key: str) -> bool:
    """``key`` is in ``block``, or falls inside an empty mapping there (one whose keys are the
    user's own: ``task.anchors``, a baseline's params)."""
    node: object = block
    for part in key.split("."):
        if not isinstance(node, DictConfig):
            return False
        if part not in node:
            return len(node) == 0
        node = node._get_node(part)
    return True


def _check_keys(name: str, own: DictConfig, block: DictConfig) -> None:
    for key in _leaves(own):
        if not is_setting(block, key):
            nearest = difflib.get_close_matches(key, _leaves(block), n=3, cutoff=0.6)
            raise ConfigError(f"task_overrides.{name}.{key} is not a setting of task {name}"
                              + (f"; nearest: {', '.join(nearest)}" if nearest else ""))


@cache
def _default_config(name: str, roots: str | None) -> DictConfig:
    """The config of a job of task ``name`` with nothing overridden (``roots``: CANDLEBENCH_TASKS,
    which decides what a name is). Composed once a process: a plan checks dozens of jobs."""
    from hydra import compose

    return compose(config_name="config", overrides=[f"task={name}"])


@cache
def _check_other(name: str, own_yaml: str, roots: str | None) -> None:
    """Task ``name``'s overrides (as YAML) against its settings: the keys, then the values as its
    own jobs will check them. Once per distinct overrides and process."""
    cfg = _default_config(name, roots).copy()
    own = OmegaConf.create(own_yaml)
    _check_keys(name, own, cfg.task)
    with open_dict(cfg):
        cfg.task = OmegaConf.merge(cfg.task, own)
    try:
        registry.get_task(name).settings(cfg.task)
    except ConfigError as err:
        raise ConfigError(f"task_overrides.{name}: {err}") from None


def _typed_wins(own: DictConfig, name: str, typed: Sequence[str]) -> DictConfig:
    """``own`` without the keys the user typed as ``task.<key>`` where they did not type
    ``task_overrides.<name>.<key>`` too: a config file's value for this task would otherwise
    silently replace what they typed (the demo's E2A interval of 240 over a typed 60)."""
    keys = [key_of(o) for o in typed]
    given = {k.removeprefix("task.") for k in keys if k.startswith("task.")}
    mine = [k.removeprefix(f"task_overrides.{name}.") for k in keys if k.startswith(f"task_overrides.{name}.")]

    def typed_here(key: str) -> bool:
        return any(key == g or key.startswith(f"{g}.") for g in given) and not any(
            key == m or key.startswith(f"{m}.") or m.startswith(f"{key}.") for m in mine)

    dropped = [k for k in _leaves(own) if typed_here(k)]
    if not dropped:
        return own
    kept = OmegaConf.to_container(own, resolve=False)
    for key in dropped:
        *path, last = key.split(".")
        node = kept
        for part in path:
            node = node[part]
        del node[last]
    return OmegaConf.create(kept)


def apply_task_overrides(cfg: DictConfig, typed: Sequence[str] = ()) -> DictConfig:
    """``cfg`` with ``task_overrides.<its task>`` merged over ``cfg.task`` (in place, returned), every
    other task's overrides checked against its settings. ``typed``: the command line's overrides."""
    given = cfg.get("task_overrides")
    if not given:
        return cfg
    known = registry.names()
    roots = os.environ.get("CANDLEBENCH_TASKS")
    for name in given:
        if name not in known:
            raise ConfigError(f"task_overrides.{name}: there is no task {name!r}; tasks: {known}")
        own = given.get(name)
        if own is None:
            continue
        if not isinstance(own, DictConfig):
            raise ConfigError(f"task_overrides.{name}={own!r}: must be a mapping of the task's settings")
        if name != cfg.task.name:
            _check_other(name, OmegaConf.to_yaml(own), roots)
    own = given.get(cfg.task.name)
    if not own:
        return cfg
    _check_keys(cfg.task.name, own, cfg.task)
    own = _typed_wins(own, cfg.task.name, typed)
    with open_dict(cfg):
        cfg.task = OmegaConf.merge(cfg.task, own)
    return cfg
