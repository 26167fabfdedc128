"""HTTP to an OpenAI-compatible server (``vllm serve``, llama.cpp's server, Ollama): one JSON call,
its failures sorted into what a retry can fix and what it cannot, and the models the server serves.

The standard library only (``urllib``): the project declares no HTTP client, and the one call
shape here (a JSON POST or GET with a timeout) needs none. One connection per request: on a
loopback or cluster network a TCP connect costs well under a millisecond, against tens of
milliseconds for a VLM answer (bench/infer_vllm.py measures the whole HTTP path), and nothing
keep-alive can go stale between a server's restart and our next request.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from candlebench.core.errors import UserError

T = TypeVar("T")


class ServerUnreachable(UserError, ConnectionError):
    """No server answers at the base URL (at start, or no longer after every retry)."""


class ServerRefused(UserError, PermissionError):
    """The server refuses us (401/403): a missing or wrong key."""


class NoSuchModel(UserError, LookupError):
    """The model asked for is not among those the server serves."""


class ServerChanged(UserError, RuntimeError):
    """The server now serves another model than the one this run's answers came from."""


class HTTPFailure(Exception):
    """The server answered with an error status; ``retryable`` for 429 and 5xx (overload, a restart
    under way, a crashed worker), not for a request the server will refuse again (400, 404, 422)."""

    def __init__(self, status: int, message: str, retry_after: float | None = None):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.retry_after = status, retry_after

    @property
    def retryable(self) -> bool:
        return self.status == 429 or self.status >= 500


class ConnectionLost(Exception):
    """The connection could not be made or broke before an answer: the server is down or restarting."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # ".../v1"
    api_key_env: str | None = None  # the environment variable holding the key, never the key
    timeout_s: float = 600.0  # per request: a generation that takes longer fails its sample

    def key(self) -> str | None:
        """Read at each call, never kept on an object that could be printed or pickled into a record."""
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise UserError(f"backend.api_key_env={self.api_key_env}: that environment variable is not set (or empty); "
                            "export it, or set backend.api_key_env=null for a server without a key")
        return value

    def call(self, path: str, body: dict | None = None, timeout_s: float | None = None) -> Any:
        """One GET (``body`` None) or JSON POST; the decoded JSON answer. Raises
        :class:`ConnectionLost`, :class:`HTTPFailure` or ``TimeoutError``."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url.rstrip("/") + path, data=data, headers=headers,
                                         method="GET" if body is None else "POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s or self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            raise HTTPFailure(err.code, _error_text(err), _retry_after(err)) from None
        except urllib.error.URLError as err:
            if isinstance(err.reason, (TimeoutError, socket.timeout)):
                raise TimeoutError(f"no answer within {timeout_s or self.timeout_s:g} s") from None
            raise ConnectionLost(str(err.reason)) from None
        except (TimeoutError, socket.timeout):
            raise TimeoutError(f"no answer within {timeout_s or self.timeout_s:g} s") from None
        except (ConnectionError, http.client.HTTPException) as err:  # reset, or closed before the answer
            raise ConnectionLost(f"{type(err).__name__}: {err}") from None
        except json.JSONDecodeError as err:
            raise HTTPFailure(200, f"not JSON ({err})") from None


def _error_text(err: urllib.error.HTTPError) -> str:
    """The server's own message (OpenAI's {"error": {"message": ...}}), on one line and short."""
    try:
        raw = err.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 (a body that cannot be read leaves the status)
        raw = ""
    try:
        payload = json.loads(raw)
        detail = payload.get("error", payload)
        raw = detail.get("message", raw) if isinstance(detail, dict) else str(detail)
    except (ValueError, AttributeError):
        pass
    return " ".join(str(raw or err.reason).split())[:300]


def _retry_after(err: urllib.error.HTTPError) -> float | None:
    try:
        return float(err.headers.get("Retry-After", ""))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 5  # after the first attempt
    backoff_s: float = 1.0  # doubled after each retry, up to max_backoff_s
    max_backoff_s: float = 30.0

    def delays(self) -> list[float]:
        return [min(self.backoff_s * 2 ** i, self.max_backoff_s) for i in range(self.retries)]


def with_retries(attempt: Callable[[], T], policy: RetryPolicy, stop: threading.Event,
                 reconnected: Callable[[], None] = lambda: None) -> T:
    """``attempt()`` until it succeeds, retrying connection failures, 429 and 5xx after a growing
    pause (a 429's Retry-After when it gives one). Before resending after a lost connection,
    ``reconnected()`` runs (the caller checks the server still serves the same model). A 4xx other
    than 429 and a timeout are raised at once: resending gives the same answer. ``stop`` cuts the
    pauses short (the run is ending). The last failure is raised when the retries are spent."""
    delays = policy.delays()
    for retry in range(len(delays) + 1):
        try:
            return attempt()
        except (ConnectionLost, HTTPFailure) as err:
            if (isinstance(err, HTTPFailure) and not err.retryable) or retry == len(delays):
                raise
            pause = err.retry_after if isinstance(err, HTTPFailure) and err.retry_after is not None else delays[retry]
            if stop.wait(pause):
                raise
            if isinstance(err, ConnectionLost):
                try:
                    reconnected()
                except ConnectionLost:
                    continue  # still down: the next attempt fails or finds it back
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class ServedModel:
    """One entry of ``GET /v1/models``, the fields that say which weights answer. vLLM gives
    ``root`` (the checkpoint path or repo it loaded; for a LoRA module the adapter's path) and
    ``parent`` (a LoRA module's base); llama.cpp a ``meta`` block (parameters, size, vocabulary of
    its GGUF); Ollama only the tag. ``created`` and ``permission`` change with every request and
    ``max_model_len`` does not change an answer: they are left out."""

    id: str
    owned_by: str | None = None
    root: str | None = None
    parent: str | None = None
    meta: dict | None = None

    @classmethod
    def from_card(cls, card: dict) -> "ServedModel":
        meta = card.get("meta")
        return cls(id=str(card["id"]), owned_by=card.get("owned_by"), root=card.get("root"),
                   parent=card.get("parent"), meta=meta if isinstance(meta, dict) else None)

    def identity(self) -> dict[str, Any]:
        return {k: v for k, v in (("id", self.id), ("owned_by", self.owned_by), ("root", self.root),
                                  ("parent", self.parent), ("meta", self.meta)) if v is not None}


def list_models(endpoint: Endpoint, timeout_s: float = 10.0) -> list[ServedModel]:
    """The server's models; one-line errors for no server, a refused key, and an answer that is not
    an OpenAI model list."""
    try:
        payload = endpoint.call("/models", timeout_s=timeout_s)
    except HTTPFailure as err:
        if err.status in (401, 403):
            raise ServerRefused(f"the server at {endpoint.base_url} refuses us ({err}); set backend.api_key_env to the "
                                "name of the environment variable holding its key") from None
        raise ServerUnreachable(f"{endpoint.base_url}/models: {err}; is backend.base_url an OpenAI-compatible "
                                "server's /v1?") from None
    except TimeoutError as err:
        raise ConnectionLost(str(err)) from None
    cards = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(cards, list) or not all(isinstance(c, dict) and "id" in c for c in cards):
        raise ServerUnreachable(f"{endpoint.base_url}/models did not answer with an OpenAI model list; "
                                "is backend.base_url an OpenAI-compatible server's /v1?")
    return [ServedModel.from_card(c) for c in cards]


def pick_model(endpoint: Endpoint, models: list[ServedModel], wanted: str | None) -> ServedModel:
    """The model asked for (``backend.model``), or the server's only one when none is named."""
    ids = [m.id for m in models]
    if wanted is not None:
        for model in models:
            if model.id == wanted:
                return model
        raise NoSuchModel(f"backend.model={wanted}: the server at {endpoint.base_url} serves {ids}, not that one")
    if len(models) != 1:
        raise NoSuchModel(f"the server at {endpoint.base_url} serves {len(models)} models ({ids}): "
                          "name one with backend.model=...")
    return models[0]
