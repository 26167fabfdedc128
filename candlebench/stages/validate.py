"""Every config value checked when a job starts, so a bad one is a one-line error naming the key,
the value and what is allowed — not a traceback after the model loaded, nor a run that does
nothing and exits 0.

The rules are a table: (key, test, what is allowed). A key that is absent from the config (a
task without that block) is not checked.
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd
from omegaconf import DictConfig, ListConfig, OmegaConf

from candlebench.core.errors import UserError
from candlebench.market.market import OnDefect
from rendering.render import COLOR_CONVENTIONS, RENDERERS


class ConfigError(UserError, ValueError):
    pass


def _int(lo: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo), f"an integer >= {lo}"


def _optional_int(lo: int) -> tuple[Callable[[Any], bool], str]:
    test, allowed = _int(lo)
    return (lambda v: v is None or test(v)), f"null or {allowed}"


def _share(inclusive_low: bool) -> tuple[Callable[[Any], bool], str]:
    if inclusive_low:
        return (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1), "a number in [0, 1]"
    return (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1), "a number in (0, 1)"


def _horizons(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in v)


def _number(lo: float, low_open: bool = False, hi: float | None = None) -> tuple[Callable[[Any], bool], str]:
    def test(v: Any) -> bool:
        return (isinstance(v, (int, float)) and not isinstance(v, bool) and (v > lo if low_open else v >= lo)
                and (hi is None or v <= hi))
    return test, f"a number {'>' if low_open else '>='} {lo}" + (f" and <= {hi}" if hi is not None else "")


def _one_of(choices: Any) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: v in choices), f"one of {sorted(choices)}"


def _date_or_null(v: Any) -> bool:
    if v is None:
        return True
    try:
        pd.Timestamp(str(v))
    except (ValueError, TypeError):
        return False
    return True


RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    # backend=server (absent under the other backends: not checked there);
    # first: infer.batch_size takes backend.concurrency
    ("backend.concurrency", *_int(1)),
    ("backend.timeout_s", *_number(0, low_open=True)),
    ("backend.retries", *_int(0)),
    ("backend.backoff_s", *_number(0)),
    ("backend.max_backoff_s", *_number(0)),
    ("backend.startup_wait_s", *_number(0)),
    ("backend.dialect", *_one_of(("auto", "vllm", "openai"))),
    ("infer.batch_size", *_optional_int(1)),
    ("infer.prefetch_batches", *_int(0)),
    ("infer.loader_threads", *_int(1)),
    ("infer.max_error_rate", *_share(True)),
    ("infer.min_samples_for_error_rate", *_int(0)),
    ("infer.shard.count", *_int(1)),
    ("infer.shard.index", *_int(0)),
    ("infer.generation.max_new_tokens", *_int(1)),
    ("infer.generation.min_new_tokens", *_int(0)),
    ("infer.generation.temperature", *_number(0)),
    ("infer.generation.top_p", *_number(0, low_open=True, hi=1)),
    ("infer.prompt_layout", lambda v: v in ("images_first", "text_first"), "images_first or text_first"),
    ("render.colors", *_one_of(COLOR_CONVENTIONS)),
    ("render.renderer", *_one_of(RENDERERS)),
    ("data.on_defect", *_one_of([d.value for d in OnDefect])),
    ("render.workers", *_optional_int(1)),
    ("render.chunk.count", *_int(1)),
    ("render.chunk.index", *_int(0)),
    ("render.max_bars", *_int(1)),
    ("render.width", *_int(200)),
    ("render.height", *_int(150)),
    ("samples.interval", *_int(1)),
    ("samples.horizons", _horizons, "a non-empty list of integers >= 1"),
    ("samples.min_bars", *_int(1)),
    ("samples.max_stale_days", *_int(0)),
    ("samples.regime_threshold", *_share(False)),
    ("samples.trend_threshold", *_share(False)),
    ("samples.start", _date_or_null, "a date (YYYY-MM-DD) or null"),
    ("samples.end", _date_or_null, "a date (YYYY-MM-DD) or null"),
    ("task.horizon", *_int(1)),
    ("score.n_boot", *_int(0)),
    ("sweep.render_chunks", *_int(1)),
    ("sweep.infer_shards", *_int(1)),
)


def _value(cfg: DictConfig, key: str) -> tuple[bool, Any]:
    node = OmegaConf.select(cfg, key, default="\0missing")
    if isinstance(node, str) and node == "\0missing":
        return False, None
    if isinstance(node, (DictConfig, ListConfig)):
        return True, OmegaConf.to_container(node, resolve=True)
    return True, node


def validate(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` for the first value a job cannot run with."""
    for key, test, allowed in RULES:
        present, value = _value(cfg, key)
        if present and not test(value):
            raise ConfigError(f"{key}={value!r}: must be {allowed}")
    for block in ("infer.shard", "render.chunk"):
        present, part = _value(cfg, block)
        if present and part["index"] >= part["count"]:
            raise ConfigError(f"{block}.index={part['index']}: must be < {block}.count={part['count']}")
    _, windows = _value(cfg, "render.ma_windows")
    _, colors = _value(cfg, "render.ma_colors")
    if windows is not None and colors is not None and len(windows) != len(colors):
        raise ConfigError(f"render.ma_windows={windows} and render.ma_colors={colors}: must be as long as each other "
                          "(one colour per moving average)")
    _, horizons = _value(cfg, "samples.horizons")
    present, horizon = _value(cfg, "task.horizon")
    if present and horizons is not None and horizon not in horizons:
        raise ConfigError(f"task.horizon={horizon}: must be one of samples.horizons={horizons} (its label is scored)")
    present, language = _value(cfg, "task.language")
    _, prompts = _value(cfg, "task.prompts")
    if present and prompts is not None and language not in prompts:
        raise ConfigError(f"task.language={language!r}: must be one of {sorted(prompts)} (task.prompts)")
    _, start = _value(cfg, "samples.start")
    _, end = _value(cfg, "samples.end")
    if start is not None and end is not None and pd.Timestamp(str(start)) >= pd.Timestamp(str(end)):
        raise ConfigError(f"samples.start={start} is not before samples.end={end}: the window holds no cutoff")
