"""HTTP to an OpenAI-compatible server (``vllm serve``, llama.cpp's server, Ollama): one JSON call,
its failures sorted into what a retry can fix and what it cannot, and the models the server serves.

The standard library only (``http.client``): the project declares no HTTP client, and the one call
shape here (a JSON POST or GET) needs none. One connection per request: on a loopback or cluster
network a TCP connect costs well under a millisecond, against tens of milliseconds for a VLM
answer (bench/infer_vllm.py measures the whole HTTP path), and nothing keep-alive can go stale
between a server's restart and our next request.

Every call has a deadline for the whole request, connect to last byte: a socket timeout bounds
each read only, and a reply trickled a byte at a time would renew it forever. At the deadline, or
when the run stops (:class:`Cancel`: Ctrl-C), the call's socket is shut, which ends whatever read
or write its thread is blocked in at once.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import urlsplit

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


class Cancelled(Exception):
    """The run is stopping (Ctrl-C): the request was cut off, not failed."""


class Cancel:
    """Ends every wait of a run that is stopping: the pauses between retries (``wait``) and the
    requests in flight, whose sockets are shut so their threads return at once instead of after
    ``timeout_s`` (600 s by default)."""

    def __init__(self) -> None:
        self._event, self._lock = threading.Event(), threading.Lock()
        self._open: set[socket.socket] = set()

    def set(self) -> None:
        with self._lock:
            self._event.set()
            for sock in self._open:
                _shut(sock)

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)

    @contextmanager
    def holding(self, sock: socket.socket) -> Iterator[None]:
        with self._lock:
            if self._event.is_set():
                raise Cancelled("the run is stopping")
            self._open.add(sock)
        try:
            yield
        finally:
            with self._lock:
                self._open.discard(sock)


def _shut(sock: socket.socket) -> None:
    """Shut a socket from another thread: a read or write blocked on it returns now. (Not the
    connection's ``sock``: http.client lets go of it once a reply that closes the connection
    starts, while the reply still reads from it.)"""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def http_url(value: object) -> bool:
    """An http:// or https:// URL with a host: what ``backend.base_url`` must be. Nothing around it:
    urlsplit drops a leading space, but the URL kept and printed in every later message would
    still carry it, invisible."""
    if not isinstance(value, str) or value != value.strip():
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises for a port that is not a number)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # ".../v1"
    api_key_env: str | None = None  # the environment variable holding the key, never the key
    timeout_s: float = 600.0  # per request, connect to last byte: a generation that takes longer fails its sample

    def key(self) -> str | None:
        """Read at each call, never kept on an object that could be printed or pickled into a record."""
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise UserError(f"backend.api_key_env={self.api_key_env}: that environment variable is not set (or empty); "
                            "export it, or set backend.api_key_env=null for a server without a key")
        return value

    def call(self, path: str, body: dict | None = None, timeout_s: float | None = None,
             cancel: Cancel | None = None) -> Any:
        """One GET (``body`` None) or JSON POST; the decoded JSON answer, whole within ``timeout_s``
        (default: the endpoint's) of the start. Raises :class:`ConnectionLost`, :class:`HTTPFailure`,
        ``TimeoutError``, or :class:`Cancelled` once ``cancel`` is set."""
        limit = float(timeout_s or self.timeout_s)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = urlsplit(self.base_url.rstrip("/") + path)
        kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        connection = kind(url.hostname, url.port, timeout=limit)  # the connect alone is bounded by its socket timeout
        expired, opened = threading.Event(), []

        def expire() -> None:
            expired.set()
            for sock in opened:
                _shut(sock)

        timer = threading.Timer(limit, expire)
        timer.daemon = True
        timer.start()
        try:
            connection.connect()
            opened.append(connection.sock)
            if expired.is_set():
                raise TimeoutError
            with cancel.holding(connection.sock) if cancel is not None else nullcontext():
                connection.request("GET" if body is None else "POST", url.path + (f"?{url.query}" if url.query else ""),
                                   None if body is None else json.dumps(body).encode(), headers)
                response = connection.getresponse()
                raw = response.read()
            if expired.is_set():  # a reply without a length, cut at the deadline
                raise TimeoutError
            if cancel is not None and cancel.is_set():
                raise Cancelled("the run is stopping")
            if response.status >= 400:
                raise HTTPFailure(response.status, _error_text(raw, response.reason),
                                  _retry_after(response.getheader("Retry-After")))
            if response.status >= 300:  # not followed: a POST's body and a bearer key must not go elsewhere unasked
                raise HTTPFailure(response.status, f"a redirect to {response.getheader('Location') or '(no Location)'}: "
                                  "set backend.base_url to where the server answers")
            return json.loads(raw)
        except (OSError, http.client.HTTPException) as err:
            if expired.is_set() or isinstance(err, (TimeoutError, socket.timeout)):
                raise TimeoutError(f"no whole answer within {limit:g} s (backend.timeout_s)") from None
            if cancel is not None and cancel.is_set():
                raise Cancelled("the run is stopping") from None
            raise ConnectionLost(f"{type(err).__name__}: {err}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise HTTPFailure(200, f"not JSON ({err})") from None
        finally:
            timer.cancel()
            connection.close()


def _error_text(raw_bytes: bytes, reason: str) -> str:
    """The server's own message (OpenAI's {"error": {"message": ...}}), on one line and short."""
    raw = raw_bytes.decode("utf-8", "replace")
    try:
        payload = json.loads(raw)
        detail = payload.get("error", payload)
        raw = detail.get("message", raw) if isinstance(detail, dict) else str(detail)
    except (ValueError, AttributeError):
        pass
    return " ".join(str(raw or reason).split())[:300]


def _retry_after(header: str | None) -> float | None:
    try:
        return max(0.0, float(header or ""))
    except ValueError:
        return None


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 5  # after the first attempt
    backoff_s: float = 1.0  # doubled after each retry, up to max_backoff_s
    max_backoff_s: float = 30.0

    def delays(self) -> list[float]:
        return [min(self.backoff_s * 2 ** i, self.max_backoff_s) for i in range(self.retries)]


# A pause longer than this is said on stderr, with what it waits for: a silent wait looks like a hang.
LOUD_WAIT_S = 5.0


def with_retries(attempt: Callable[[], T], policy: RetryPolicy, stop: threading.Event | Cancel,
                 reconnected: Callable[[], None] = lambda: None, what: str = "the server") -> T:
    """``attempt()`` until it succeeds, retrying connection failures, 429 and 5xx after a growing
    pause (a 429's or 503's Retry-After when it gives one, capped by ``max_backoff_s``: a server
    asking for a day would otherwise hold the run a day). Before resending after a lost
    connection, ``reconnected()`` runs (the caller checks the server still serves the same model).
    A 4xx other than 429 and a timeout are raised at once: resending gives the same answer.
    ``stop`` cuts the pauses short (the run is ending). The last failure is raised when the
    retries are spent. A pause over :data:`LOUD_WAIT_S` is said on stderr, naming ``what``."""
    delays = policy.delays()
    for retry in range(len(delays) + 1):
        try:
            return attempt()
        except (ConnectionLost, HTTPFailure) as err:
            if (isinstance(err, HTTPFailure) and not err.retryable) or retry == len(delays):
                raise
            asked = err.retry_after if isinstance(err, HTTPFailure) else None
            pause = delays[retry] if asked is None else min(asked, policy.max_backoff_s)
            if pause > LOUD_WAIT_S:
                because = "" if asked is None else f"; it asked for {asked:g} s (Retry-After)" + (
                    ", capped by backend.max_backoff_s" if asked > pause else "")
                print(f"waiting {pause:g} s to retry {what} ({err}; retry {retry + 1} of {len(delays)}{because})",
                      file=sys.stderr, flush=True)
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
    if not isinstance(cards, list) or not all(isinstance(c, dict) for c in cards):
        raise ServerUnreachable(f"{endpoint.base_url}/models did not answer with an OpenAI model list; "
                                "is backend.base_url an OpenAI-compatible server's /v1?")
    for card in cards:  # a null id was once taken as the model "None", and sent as such with every request
        if not isinstance(card.get("id"), str) or not card["id"].strip():
            raise ServerUnreachable(f"{endpoint.base_url}/models lists a model without a name as its id "
                                    f"({str(card)[:200]}); fix the server's model list (e.g. its --served-model-name)")
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
