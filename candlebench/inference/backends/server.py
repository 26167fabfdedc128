"""The server backend: a model behind an OpenAI-compatible chat-completions endpoint (``vllm serve``,
llama.cpp's server, Ollama), no weights in this process and no key needed.

Each request is one user turn: the task's images as base64 PNG data URLs in the task's order and
layout, then (or before them, ``text_first``) its text; the server applies the checkpoint's chat
template, as the in-process backends do with the same template. The task's sampling settings go
with every request. What else is sent depends on the server's dialect (``DIALECTS``, told by
``/v1/models``' ``owned_by`` or ``backend.dialect``): vLLM gets the answer constraint as
structured-outputs regex, its token ids back, and neutral values for every sampling field its
server would otherwise take from the checkpoint's generation_config.json (so a greedy answer is the
in-process engine's); any other server gets the OpenAI fields only and no constraint, which the
run key records.

Requests run ``backend.concurrency`` at a time (threads: each waits on its socket) and are handed
to the runner as they finish, so every answer is fsynced on arrival. Connection failures, 429 and
5xx are retried with a growing pause; after a lost connection the server must still serve the
model the run started with (:class:`ServerChanged` otherwise), and a server that stays away ends
the run in one line, keeping every answer written. Each reply must name the model the run asked
for (a proxy or a misrouted server answering with another is :class:`ServerChanged`); the name is
in each record. Every request has a deadline for the whole request (``timeout_s``); a run that
stops (Ctrl-C, a fatal error) cuts the requests in flight at once (:class:`Cancel`).
"""

from __future__ import annotations

import base64
import io
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from candlebench.core.errors import UserError
from candlebench.inference.backends.base import Generation, GenerationSpec, Media, PreparedRequest
from candlebench.inference.backends.server_http import (LOUD_WAIT_S, Cancel, ConnectionLost, HTTPFailure, ServedModel,
                                                       ServerChanged, ServerUnreachable, list_models, pick_model,
                                                       with_retries)
from candlebench.inference.backends.settings import ServerSettings
from candlebench.inference.chat import LAYOUTS, reasoning_in_text
from candlebench.inference.models import ModelSpec
from candlebench.rendering.model_input import ENCODED_PNG


@dataclass(frozen=True)
class Dialect:
    """What a kind of server understands beyond OpenAI's chat-completions fields."""

    name: str
    constraint: str | None  # the request field that takes the answer regex; None: the server has none
    # Sent with every request: vLLM's server fills an unset field from generation_config.json
    # (e.g. Qwen2.5-VL's repetition_penalty 1.05, top_k 1); the in-process engine does not.
    neutral: Mapping[str, Any] = field(default_factory=dict)
    token_ids: bool = False  # asks for the generated token ids (``return_token_ids``)
    extra: bool = False  # takes min_tokens, chat_template_kwargs, mm_processor_kwargs


DIALECTS: Mapping[str, Dialect] = {
    # vLLM 0.32: vllm/entrypoints/openai/protocol.py ChatCompletionRequest.
    "vllm": Dialect("vllm", constraint="structured_outputs",
                    neutral={"top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
                             "frequency_penalty": 0.0},
                    token_ids=True, extra=True),
    # llama.cpp's server, Ollama, anything else: the OpenAI fields only.
    "openai": Dialect("openai", constraint=None),
}
# /v1/models' owned_by -> dialect, for backend.dialect=auto.
OWNERS: Mapping[str, str] = {"vllm": "vllm"}


@dataclass(frozen=True)
class Served:
    """The model a server serves (its /v1/models entry) and the dialect we speak to it."""

    model: ServedModel
    dialect: str

    def identity(self, regex: str | None) -> dict[str, Any]:
        """The served model's own fields, the dialect, and where the answer constraint went (none
        when the server has no way to take it). The base URL is not in it: a server restarted on
        another node (a SLURM job's) serves the same answers, and the records name the URL."""
        constraint = None if regex is None else DIALECTS[self.dialect].constraint or "none (the server takes no regex)"
        return {"model": self.model.identity(), "dialect": self.dialect, "constraint": constraint}


def connect(settings: ServerSettings) -> Served:
    """The served model, waiting up to ``startup_wait_s`` for a server that is still loading; a
    one-line error when none answers, the key is refused or the model is not there."""
    endpoint = settings.endpoint()
    deadline = time.monotonic() + float(settings.startup_wait_s)
    said = float(settings.startup_wait_s) <= LOUD_WAIT_S
    while True:
        try:
            models = list_models(endpoint)
            break
        except ConnectionLost as err:
            if time.monotonic() >= deadline:
                waited = f" for {settings.startup_wait_s:g} s" if settings.startup_wait_s else ""
                raise ServerUnreachable(
                    f"backend=server: no server answers at {endpoint.base_url}{waited} ({err}); start one "
                    "(e.g. `vllm serve MODEL`), or set backend.base_url (backend.startup_wait_s waits for one starting)"
                ) from None
            if not said:
                print(f"waiting up to {deadline - time.monotonic():.0f} s for a server at {endpoint.base_url} "
                      f"(backend.startup_wait_s; {err})", file=sys.stderr, flush=True)
                said = True
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))
    model = pick_model(endpoint, models, settings.model)
    dialect = settings.dialect if settings.dialect != "auto" else OWNERS.get(str(model.owned_by), "openai")
    return Served(model, dialect)


def served_identity(settings: ServerSettings, regex: str | None) -> dict[str, Any]:
    """What of the run is the server's: asked of the server when the run starts (the run key), and
    ``opens_reasoning`` when set (it changes the recorded text; absent, older keys stay)."""
    return {**connect(settings).identity(regex), **({"opens_reasoning": True} if settings.opens_reasoning else {})}


def message_text(value: Any, field: str) -> str | None:
    """A message field as text: a string, or OpenAI's list of text parts (``[{"type": "text",
    "text": ...}]``, which several OpenAI-compatible servers send), joined as the API joins them.
    Anything else (an object, a number, a part that is not text) is no answer: the sample's
    failure (:class:`HTTPFailure`, its error record, asked again by the next run), never a value
    stored as if it were the model's text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                                       for p in value):
        return "".join(p["text"] for p in value)
    raise HTTPFailure(200, f"message.{field} is neither text nor a list of text parts: {str(value)[:200]}")


def generation_of(reply: dict, opens_reasoning: bool = False) -> Generation:
    """A chat completion as a generation. Reasoning the server returned apart (vLLM's
    ``reasoning_content``, others' ``reasoning``) goes back into the text inside its block, left
    open when the budget ended the answer without one (finish_reason "length"), as the
    in-process backends record it: every task's parser then flags the cut alike."""
    try:
        choice = reply["choices"][0]
        message = choice["message"]
        content = message_text(message.get("content"), "content")
        reasoning = message_text(message.get("reasoning_content") or message.get("reasoning"), "reasoning")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise HTTPFailure(200, f"not a chat completion: {str(reply)[:200]}") from None
    closed = bool(content) or choice.get("finish_reason") != "length"
    text = reasoning_in_text(content, reasoning, opens_reasoning, closed) or ""
    usage, named = reply.get("usage") or {}, reply.get("model")
    ids = tuple(choice.get("token_ids") or ())
    if ids and choice.get("finish_reason") == "stop":
        ids = ids[:-1]  # the end-of-sequence token that ended it: the in-process backends drop it too
    # Without token ids (not vLLM), the server's count stands in (it may count the end token).
    completion = len(ids) if ids or usage.get("completion_tokens") is None else int(usage["completion_tokens"])
    return Generation(text=text, token_ids=ids, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                      completion_tokens=completion, model=None if named is None else str(named))


def data_url(image: Any) -> str:
    """A PIL image as a PNG data URL: lossless, so the server decodes the very pixels the
    in-process backends are given. A chart the image policy left as rendered goes as its file's
    own bytes: encoding two 800x600 charts again cost 35-70 ms a request on a 2-core machine,
    more than the tiny model's whole answer (bench/infer_vllm.py row (f))."""
    encoded = image.info.get(ENCODED_PNG)
    if encoded is None:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        encoded = buffer.getvalue()
    return "data:image/png;base64," + base64.b64encode(encoded).decode("ascii")


class ServerBackend:
    """Fed continuously (``stream``): at most ``concurrency`` requests in flight."""

    name = "server"
    continuous = True

    def __init__(self, model: ModelSpec, generation: GenerationSpec, backend: ServerSettings, media: Media):
        if media.layout not in LAYOUTS:
            raise ValueError(f"infer.prompt_layout={media.layout}: one of {list(LAYOUTS)}")
        self.settings = backend
        self.endpoint, self.policy = self.settings.endpoint(), self.settings.retry()
        self.target = connect(self.settings)
        self.dialect = DIALECTS[self.target.dialect]
        self.served = self.target.identity(generation.regex)
        self.device = f"server {self.endpoint.base_url}"  # each record names the server that answered it
        self.layout, self.generation = media.layout, generation
        self.template_kwargs, self.processor_kwargs = dict(model.chat_template_kwargs), dict(model.processor_kwargs)
        if generation.regex and self.dialect.constraint is None:
            print(f"note: the server at {self.endpoint.base_url} ({self.dialect.name} dialect) takes no answer regex: "
                  "answers are unconstrained (the run key says so)", file=sys.stderr)
        self.stop = Cancel()

    def body(self, request: PreparedRequest) -> dict[str, Any]:
        images = [{"type": "image_url", "image_url": {"url": data_url(im)}} for im in request.images]
        text = [{"type": "text", "text": request.prompt}]
        g, d = self.generation, self.dialect
        body: dict[str, Any] = {
            "model": self.target.model.id,
            "messages": [{"role": "user", "content": images + text if self.layout == "images_first" else text + images}],
            "max_tokens": g.max_new_tokens, "temperature": g.temperature, "top_p": g.top_p, "seed": g.seed,
            "stream": False,
            **d.neutral,
        }
        if self.template_kwargs:  # vLLM and llama.cpp's server apply them (enable_thinking); others ignore them
            body["chat_template_kwargs"] = self.template_kwargs
        if d.extra:
            body["min_tokens"] = g.min_new_tokens
            if self.processor_kwargs:
                body["mm_processor_kwargs"] = self.processor_kwargs
        if g.regex and d.constraint == "structured_outputs":
            body["structured_outputs"] = {"regex": g.regex}
        if d.token_ids:
            body["return_token_ids"] = True
        return body

    def answer(self, request: PreparedRequest) -> Generation:
        """One request, retried on connection failures, 429 and 5xx."""
        body = self.body(request)
        try:
            reply = with_retries(lambda: self.endpoint.call("/chat/completions", body, cancel=self.stop), self.policy,
                                 self.stop, self.still_same, what=f"{request.sample_id} at {self.endpoint.base_url}")
        except ConnectionLost as err:
            raise ServerUnreachable(
                f"the server at {self.endpoint.base_url} stopped answering ({err}) and is still away after "
                f"{len(self.policy.delays())} retries over {sum(self.policy.delays()):g} s; every answer so far is kept: "
                "run the same command again once it is back to resume (backend.retries / backend.backoff_s wait longer)"
            ) from None
        except HTTPFailure as err:
            if err.status == 404:
                self.still_same()  # a restart with another model: the run's, not this sample's failure
            raise
        generation = generation_of(reply, bool(self.settings.opens_reasoning))
        if generation.model is not None and generation.model != self.target.model.id:
            raise ServerChanged(f"the server at {self.endpoint.base_url} answered as model {generation.model!r}, not "
                                f"{self.target.model.id!r} that its /v1/models serves and this run asks for; no answer "
                                "of it is kept: fix the server (or the proxy in front of it) and run the same command again")
        return generation

    def still_same(self) -> None:
        """After a lost connection: the server back up must serve the model this run started with."""
        try:
            now = connect(ServerSettings(**{**asdict(self.settings), "startup_wait_s": 0.0})).identity(self.generation.regex)
        except ServerUnreachable as err:
            raise ConnectionLost(str(err)) from None
        if now != self.served:
            raise ServerChanged(f"the server at {self.endpoint.base_url} now serves {now['model']}, not {self.served['model']} "
                                "that this run's answers came from; serve that model again to resume, or start a new run "
                                "(infer.run_name=...)")

    def prepare(self, request: PreparedRequest) -> PreparedRequest:
        return request

    def encode(self, batch: list[PreparedRequest]) -> Any:
        return None

    def generate(self, batch: list[PreparedRequest], encoded: Any = None) -> list[Generation]:
        raise TypeError("the server backend is fed continuously (stream): the runner never batches it")

    def stream(self, requests: Iterable[PreparedRequest]) -> Iterator[list[tuple[str, Generation | Exception]]]:
        """(sample_id, generation or error) of the requests that finished, as they finish, with at
        most ``concurrency`` in flight. A sample's own failure (a 4xx, a timeout, a 5xx past the
        retries) is its record; a server that went away or changed model ends the stream (raised)."""
        self.stop.clear()
        pending = iter(requests)
        active: dict[Future, str] = {}
        pool = ThreadPoolExecutor(int(self.settings.concurrency), thread_name_prefix="server")
        try:
            while True:
                while len(active) < int(self.settings.concurrency):
                    request = next(pending, None)
                    if request is None:
                        break
                    active[pool.submit(self.answer, request)] = request.sample_id
                if not active:
                    return
                finished, _ = wait(active, return_when=FIRST_COMPLETED)
                step: list[tuple[str, Generation | Exception]] = []
                fatal: UserError | None = None
                for future in finished:
                    sample_id = active.pop(future)
                    err = future.exception()
                    if isinstance(err, UserError):  # the server's failure, not the sample's: the run stops
                        fatal = err
                    else:
                        step.append((sample_id, err if err is not None else future.result()))
                if step:
                    yield step  # written before the run stops
                if fatal is not None:
                    raise fatal
        finally:
            self.stop.set()  # pauses between retries and requests in flight end now (Ctrl-C: exit within 2 s)
            pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.stop.set()
