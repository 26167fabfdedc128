"""Every config value checked when a job starts, so a bad one is a one-line error naming the key,
the value and what is allowed — not a traceback after the model loaded, nor a run that does
nothing and exits 0.

The shared stages' rules are a table (candlebench.core.rules); the task's keys are checked by its
settings dataclass (``Task.settings``, candlebench.task_api.settings), built here once for the job. A
key that is absent from the config (a backend without that block) is not checked.
"""

from __future__ import annotations

from omegaconf import DictConfig

from candlebench.core.rules import (ConfigError, Rule, check, check_early, integer, number, one_of, optional_integer,
                                    share, value)
from candlebench.market.market import OnDefect
from candlebench.inference.backends.server_http import http_url
from candlebench.rendering.render import COLOR_CONVENTIONS, RENDERERS
from candlebench.task_api.registry import get_task

__all__ = ["ConfigError", "validate"]

RULES: tuple[Rule, ...] = (
    # backend=server (absent under the other backends: not checked there);
    # first: infer.batch_size takes backend.concurrency
    ("backend.concurrency", *integer(1)),
    ("backend.timeout_s", *number(0, low_open=True)),
    ("backend.retries", *integer(0)),
    ("backend.backoff_s", *number(0)),
    ("backend.max_backoff_s", *number(0)),
    ("backend.startup_wait_s", *number(0)),
    ("backend.dialect", *one_of(("auto", "vllm", "openai"))),
    ("backend.opens_reasoning", *one_of((True, False))),
    ("backend.base_url", http_url, "an http:// or https:// URL with a host and no spaces around it, "
                                   "e.g. http://127.0.0.1:8000/v1"),
    ("report.embed", lambda v: v is True or v is False or v == "auto", "true, false or auto"),
    ("report.embed_max_mb", *number(0)),
    ("report.bundle", *one_of((True, False))),
    # The browser's own settings (report/browser/settings.py checks them too, as a library: here
    # they are a one-line error before any work rather than a traceback at the end of the report).
    ("report.page_size", *integer(1)),
    ("report.thumb_px", *integer(16)),
    ("report.split_above", *integer(0)),
    ("infer.batch_size", *optional_integer(1)),
    ("infer.prefetch_batches", *integer(0)),
    ("infer.loader_threads", *integer(1)),
    ("infer.max_error_rate", *share(closed=True)),
    ("infer.min_samples_for_error_rate", *integer(0)),
    ("infer.shard.count", *integer(1)),
    ("infer.shard.index", *integer(0)),
    ("infer.generation.max_new_tokens", *integer(1)),
    ("infer.generation.min_new_tokens", *integer(0)),
    ("infer.generation.temperature", *number(0)),
    ("infer.generation.top_p", *number(0, low_open=True, hi=1)),
    ("infer.prompt_layout", lambda v: v in ("images_first", "text_first"), "images_first or text_first"),
    ("render.colors", *one_of(COLOR_CONVENTIONS)),
    ("render.renderer", *one_of(RENDERERS)),
    ("data.on_defect", *one_of([d.value for d in OnDefect])),
    ("render.workers", *optional_integer(1)),
    ("render.chunk.count", *integer(1)),
    ("render.chunk.index", *integer(0)),
    ("render.width", *integer(200)),
    ("render.height", *integer(150)),
    ("score.n_boot", *integer(0)),
    ("sweep.render_chunks", *integer(1)),
    ("sweep.infer_shards", *integer(1)),
)


def validate(cfg: DictConfig) -> None:
    """Raise :class:`ConfigError` for the first value a job cannot run with."""
    check(cfg, RULES)
    check_early((), lambda key: value(cfg, key))  # set in a config file rather than on the command line
    for block in ("infer.shard", "render.chunk"):
        present, part = value(cfg, block)
        if present and part["index"] >= part["count"]:
            raise ConfigError(f"{block}.index={part['index']}: must be < {block}.count={part['count']}")
    get_task(str(cfg.task.name)).settings(cfg.task)
