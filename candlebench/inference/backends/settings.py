"""``backend:``, one settings class per backend kind (conf/backend/<kind>.yaml as typed values),
chosen by the kind's entry in ``candlebench.inference.backends.BACKENDS`` and built by
candlebench.core.settings.build. Light: no backend's packages are imported here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from candlebench.core.rules import integer, number, one_of
from candlebench.inference.backends.server_http import Endpoint, RetryPolicy, http_url
from candlebench.core.settings import setting

DIALECT_NAMES = ("auto", "vllm", "openai")  # auto: asked of the server (server.DIALECTS holds the others)


@dataclass(frozen=True, kw_only=True)
class TransformersSettings:
    name: str = "transformers"
    device_map: str | None = None
    pixels_ahead: bool = True
    static_cache: bool | None = None
    # The batch it asks for when infer.batch_size is null: none of its own (the job's rule decides).
    batch_size: ClassVar[int | None] = None


@dataclass(frozen=True, kw_only=True)
class VLLMSettings:
    name: str = "vllm"
    feed: str = "chunks"  # or continuous
    in_flight: int = 256
    batch_size: int = 256  # a chunk, with feed=chunks
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False
    merged_dir: str
    cpu_kvcache_space_gb: float = 1
    # bench/infer_vllm.py only: random ("dummy") weights at a real checkpoint's size.
    load_format: str | None = None


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """``conf/backend/server.yaml`` as typed values; the key is only ever read from the environment."""

    name: str = "server"
    base_url: str = setting((http_url, "an http:// or https:// URL with a host and no spaces around it, "
                                       "e.g. http://127.0.0.1:8000/v1"), default="http://127.0.0.1:8000/v1")
    model: str | None = None  # the served model's id; None: the server's only one
    dialect: str = setting(one_of(DIALECT_NAMES), default="auto")
    # Checked before Hydra writes anything (candlebench.core.rules.EARLY), without echoing the value.
    api_key_env: str | None = None
    concurrency: int = setting(integer(1), default=8)
    timeout_s: float = setting(number(0, low_open=True), default=600.0)
    retries: int = setting(integer(0), default=5)
    backoff_s: float = setting(number(0), default=1.0)
    max_backoff_s: float = setting(number(0), default=30.0)
    # How long to wait for a server that is still starting (a SLURM job's).
    startup_wait_s: float = setting(number(0), default=0.0)
    # The served chat template opens a reasoning block in the prompt (Qwen3-VL-Thinking): the
    # answer starts inside it. A server cannot say so; it is in the run key when set.
    opens_reasoning: bool = setting(one_of((True, False)), default=False)

    @property
    def batch_size(self) -> int:
        """A batch is what is in flight at once."""
        return self.concurrency

    def endpoint(self) -> Endpoint:
        return Endpoint(self.base_url.rstrip("/"), self.api_key_env, float(self.timeout_s))

    def retry(self) -> RetryPolicy:
        return RetryPolicy(int(self.retries), float(self.backoff_s), float(self.max_backoff_s))


BackendSettings = TransformersSettings | VLLMSettings | ServerSettings
