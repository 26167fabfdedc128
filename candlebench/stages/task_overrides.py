"""``task_overrides.<task>.<key>``: a setting for one task only, merged over that task's ``task:`` block when
it runs. A command over several tasks (``run``, ``sweep``) hands every job the same overrides; no
job needs to know which task owns a key. ``task_overrides`` wins over ``task:``: it is the more specific."""

from __future__ import annotations

import difflib

from omegaconf import DictConfig, OmegaConf, open_dict

from candlebench.task_api import registry
from candlebench.core.rules import ConfigError


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


def apply_task_overrides(cfg: DictConfig) -> DictConfig:
    """``cfg`` with ``task_overrides.<its task>`` merged over ``cfg.task`` (in place, returned)."""
    given = cfg.get("task_overrides")
    if not given:
        return cfg
    known = registry.names()
    for name in given:
        if name not in known:
            raise ConfigError(f"task_overrides.{name}: there is no task {name!r}; tasks: {known}")
    own = given.get(cfg.task.name)
    if not own:
        return cfg
    if not isinstance(own, DictConfig):
        raise ConfigError(f"task_overrides.{cfg.task.name}={own!r}: must be a mapping of the task's settings")
    for key in _leaves(own):
        if not is_setting(cfg.task, key):
            keys = _leaves(cfg.task)
            nearest = difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
            raise ConfigError(f"task_overrides.{cfg.task.name}.{key} is not a setting of task {cfg.task.name}"
                              + (f"; nearest: {', '.join(nearest)}" if nearest else ""))
    with open_dict(cfg):
        cfg.task = OmegaConf.merge(cfg.task, own)
    return cfg

