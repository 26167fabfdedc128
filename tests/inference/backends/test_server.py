"""backend=server without a server: the retry rule, a closed port at start, the settings and the run
identity. Against a real vLLM server: tests/inference/backends/test_infer_server.py (vLLM environment)."""

from __future__ import annotations

import threading
import time

import pytest

from candlebench.core.errors import UserError
from candlebench.inference.backends import BACKENDS, check_weights
from candlebench.inference.backends.server import DIALECTS, Served, ServerSettings, connect
from candlebench.inference.backends.server_http import (ConnectionLost, HTTPFailure, RetryPolicy, ServedModel, ServerUnreachable,
                                            with_retries)
from candlebench.inference.models import ModelSpec

pytestmark = pytest.mark.unit


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on leaving: nothing listens there


def test_retries_connection_losses_429_and_5xx_but_not_a_refused_request():
    calls: list[int] = []

    def failing(errors):
        def attempt():
            calls.append(1)
            if errors:
                raise errors.pop(0)
            return "answer"
        return attempt

    policy, stop = RetryPolicy(retries=3, backoff_s=0.001), threading.Event()
    errors = [ConnectionLost("refused"), HTTPFailure(503, "loading"), HTTPFailure(429, "busy", retry_after=0.001)]
    reconnected: list[int] = []
    assert with_retries(failing(errors), policy, stop, lambda: reconnected.append(1)) == "answer"
    assert len(calls) == 4 and len(reconnected) == 1  # the model is checked again only after a lost connection
    calls.clear()
    with pytest.raises(HTTPFailure, match="HTTP 400"):
        with_retries(failing([HTTPFailure(400, "too long")]), policy, stop)
    assert len(calls) == 1
    with pytest.raises(ConnectionLost):  # spent: the last failure is raised
        with_retries(failing([ConnectionLost("x")] * 5), policy, stop)
    assert policy.delays() == [0.001, 0.002, 0.004]
    assert RetryPolicy(retries=6, backoff_s=1, max_backoff_s=10).delays() == [1, 2, 4, 8, 10, 10]


def test_a_closed_port_is_one_line_at_start_after_waiting_startup_wait_s():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(ServerUnreachable, match=f"no server answers at {url} \\(.*refused") as err:
        connect(ServerSettings(base_url=url))
    assert "\n" not in str(err.value)
    started = time.monotonic()
    with pytest.raises(ServerUnreachable, match="for 1 s"):
        connect(ServerSettings(base_url=url, startup_wait_s=1))
    assert 1 <= time.monotonic() - started < 5


def test_the_key_comes_from_the_variable_named_and_a_missing_one_is_one_line(monkeypatch):
    settings = ServerSettings(api_key_env="CB_TEST_KEY")
    monkeypatch.delenv("CB_TEST_KEY", raising=False)
    with pytest.raises(UserError, match="backend.api_key_env=CB_TEST_KEY: that environment variable is not set"):
        settings.endpoint().key()
    monkeypatch.setenv("CB_TEST_KEY", "s3cret")
    assert settings.endpoint().key() == "s3cret"
    assert "s3cret" not in repr(settings) + repr(settings.endpoint())


def test_the_run_identity_names_the_served_model_and_where_the_constraint_went():
    card = {"id": "qwen", "object": "model", "created": 1, "owned_by": "vllm", "root": "/ckpt/qwen", "parent": None,
            "max_model_len": 4096, "permission": [{"id": "modelperm-1", "created": 2}]}
    model = ServedModel.from_card(card)
    assert model.identity() == {"id": "qwen", "owned_by": "vllm", "root": "/ckpt/qwen"}  # nothing that changes per call
    assert Served(model, "vllm").identity("<score>.*</score>")["constraint"] == "structured_outputs"
    assert Served(model, "openai").identity("<score>.*</score>")["constraint"] == "none (the server takes no regex)"
    assert Served(model, "openai").identity(None)["constraint"] is None
    assert set(DIALECTS) == {"vllm", "openai"}


def test_a_server_backend_needs_no_checkpoint_here():
    missing = ModelSpec(name="m", path="/nowhere/at/all")
    check_weights("server", missing)  # the server's weights are the server's
    with pytest.raises(FileNotFoundError):
        check_weights("transformers", missing)
    assert not BACKENDS["server"].local_weights and BACKENDS["server"].requires is None
    assert BACKENDS["vllm"].served is None and BACKENDS["server"].served is not None


@pytest.mark.parametrize(("override", "message"), [
    ("backend.concurrency=0", "backend.concurrency=0: must be an integer >= 1"),
    ("backend.timeout_s=0", "backend.timeout_s=0: must be a number > 0"),
    ("backend.dialect=ollama", "backend.dialect='ollama': must be one of"),
    ("backend.opens_reasoning=maybe", "backend.opens_reasoning='maybe': must be one of"),
    ("backend.base_url=notaurl", "backend.base_url='notaurl': must be an http:// or https:// URL"),
    ("backend.base_url=http://127.0.0.1:port/v1", "backend.base_url='http://127.0.0.1:port/v1': must be an http://"),
    # urlsplit drops the space; every later message would carry it, invisible
    ("backend.base_url=' http://127.0.0.1:8000/v1'", "backend.base_url=' http://127.0.0.1:8000/v1': must be an http://"),
    ("backend.timeout_s=inf", "backend.timeout_s=inf: must be a number > 0, not inf"),
    ("backend.max_backoff_s=inf", "backend.max_backoff_s=inf: must be a number >= 0, not inf"),
    ("report.page_size=0", "report.page_size=0: must be an integer >= 1"),
])
def test_server_settings_are_checked_up_front(override, message):
    from candlebench.core.rules import ConfigError
    from candlebench.stages.graph import compose_job

    compose_job(["backend=server"])
    with pytest.raises(ConfigError, match=message.replace("(", "\\(")):
        compose_job(["backend=server", override])


@pytest.mark.parametrize("task", ["forecast", "e2a", "caption"])
def test_a_servers_reasoning_answer_cut_by_its_budget_is_flagged_by_every_task_as_in_process(task):
    """The reasoning a server returns apart (reasoning_content), or an answer that starts inside a
    block the served template opened (backend.opens_reasoning), is recorded inside the block as the
    in-process backends record it: cut by the budget, every task's parser flags it."""
    from candlebench.stages.graph import compose_job
    from helpers import SLICE
    from candlebench.inference.backends.server import generation_of
    from candlebench.task_api.registry import get_task
    from candlebench.task_api.base import REASONING_CUT

    parse = get_task(task).parser(compose_job([f"data.path={SLICE}", f"task={task}"]).job.settings)
    thought = "The close rose 5%, so I would BUY; the score is 0.12 and"
    apart = {"choices": [{"message": {"content": None, "reasoning_content": thought}, "finish_reason": "length"}]}
    inside = {"choices": [{"message": {"content": thought}, "finish_reason": "length"}]}
    for reply, opens in ((apart, False), (inside, True)):
        parsed = parse(generation_of(reply, opens).text)
        assert parsed.answer is None and REASONING_CUT in str(parsed.reason), (reply, opens)
    assert parse(generation_of(inside).text).answer is not None  # the same text read as an answer without the flag
    done = {"choices": [{"message": {"content": "<score>0.3</score>", "reasoning": "up"}, "finish_reason": "stop"}]}
    assert generation_of(done).text == "<think>\nup</think>\n<score>0.3</score>"


# Against a fake OpenAI-compatible server (tests/fixtures/fake_openai.py): 127.0.0.1, bounded lifetime.

def backend_for(url: str, **settings):
    from candlebench.inference.backends.base import GenerationSpec, Media
    from candlebench.inference.backends.server import ServerBackend

    config = ServerSettings(base_url=url, timeout_s=5, retries=0, **settings)
    return ServerBackend(ModelSpec(name="m", path="/nowhere"), GenerationSpec(), config, Media(1))


def one_request():
    from PIL import Image

    from candlebench.inference.backends.base import PreparedRequest

    return PreparedRequest("s1", "What next?", (Image.new("RGB", (8, 8), "white"),))


def in_thread(call, limit_s: float):
    """``call()`` in a thread, given ``limit_s`` to end: (result or exception, seconds, ended)."""
    box: list = []
    started = time.monotonic()

    def run():
        try:
            box.append(call())
        except BaseException as err:  # noqa: BLE001 (the test looks at it)
            box.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit_s)
    return (box[0] if box else None), time.monotonic() - started, not thread.is_alive()


def test_a_trickled_reply_is_bounded_by_the_whole_request_deadline():
    """One body byte every 0.3 s renews a per-read socket timeout forever; the deadline counts from
    the start of the request to its last byte."""
    from fixtures.fake_openai import FakeServer
    from candlebench.inference.backends.server_http import Endpoint

    with FakeServer(script=("trickle",), trickle_s=0.3, lifetime_s=8) as fake:
        got, took, ended = in_thread(lambda: Endpoint(fake.base_url, timeout_s=1).call("/chat/completions", {}), 6)
    assert ended and isinstance(got, TimeoutError) and "no whole answer within 1 s" in str(got), got
    assert took < 2, f"{took:.1f} s"


def test_cancel_cuts_a_hung_request_at_once():
    from fixtures.fake_openai import FakeServer
    from candlebench.inference.backends.server_http import Cancel, Cancelled, Endpoint

    cancel = Cancel()
    with FakeServer(script=("hang",), lifetime_s=8) as fake:
        threading.Timer(0.3, cancel.set).start()
        got, took, ended = in_thread(lambda: Endpoint(fake.base_url, timeout_s=600).call("/chat/completions", {},
                                                                                         cancel=cancel), 5)
    assert ended and isinstance(got, Cancelled) and took < 1.5, (got, took)


def test_retry_after_is_capped_by_max_backoff_s_and_a_long_wait_is_said(capsys):
    """A 429 asking for a day waits max_backoff_s; a wait over 5 s says what it waits for."""
    from fixtures.fake_openai import FakeServer
    from candlebench.inference.backends.server_http import Endpoint

    with FakeServer(script=("429", "answer", "429"), lifetime_s=10) as fake:
        endpoint = Endpoint(fake.base_url, timeout_s=5)
        attempt = lambda: endpoint.call("/chat/completions", {})  # noqa: E731
        got, took, ended = in_thread(lambda: with_retries(attempt, RetryPolicy(2, 0.01, 0.2), threading.Event()), 5)
        assert ended and isinstance(got, dict) and took < 2, (got, took)
        assert capsys.readouterr().err == ""  # 0.2 s: not worth a line
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()  # the run ends during the long pause
        got, took, ended = in_thread(lambda: with_retries(attempt, RetryPolicy(2, 1, 60), stop, what="s1 at the fake"), 5)
    assert ended and isinstance(got, HTTPFailure) and got.status == 429 and took < 2
    said = capsys.readouterr().err
    assert "waiting 60 s to retry s1 at the fake (HTTP 429: slow down; retry 1 of 2; it asked for 86400 s " \
           "(Retry-After), capped by backend.max_backoff_s)" in said, said


def test_each_reply_names_the_served_model_or_the_run_stops_naming_both():
    from fixtures.fake_openai import FakeServer
    from candlebench.inference.backends.server_http import ServerChanged

    with FakeServer(lifetime_s=10) as fake:
        [[(sample, generation)]] = list(backend_for(fake.base_url).stream([one_request()]))
    assert sample == "s1" and generation.model == "tiny" and generation.text == "<score>0.5</score>"
    with FakeServer(reply_model="totally-different-model", lifetime_s=10) as fake:
        with pytest.raises(ServerChanged, match="answered as model 'totally-different-model', not 'tiny' that its "
                                                "/v1/models serves"):
            list(backend_for(fake.base_url).stream([one_request()]))


@pytest.mark.parametrize(("content", "text"), [
    ([{"type": "text", "text": "<score>"}, {"type": "text", "text": "0.5</score>"}], "<score>0.5</score>"),
    ({"text": "<score>0.5</score>"}, None),
    (42, None),
    ([{"type": "image_url", "image_url": {"url": "data:"}}], None),
])
def test_a_reply_whose_content_is_not_text_is_joined_when_text_parts_and_else_that_samples_error(content, text):
    """Several OpenAI-compatible servers send ``content`` as a list of text parts: that is an
    answer. An object, a number or a part that is not text is the sample's error record (asked
    again by the next run), never stored as if it were the model's text."""
    from fixtures.fake_openai import FakeServer
    from candlebench.inference.backends.base import Generation

    with FakeServer(text=content, lifetime_s=10) as fake:
        [[(sample, got)]] = list(backend_for(fake.base_url).stream([one_request()]))
    if text is not None:
        assert isinstance(got, Generation) and got.text == text
    else:
        assert isinstance(got, HTTPFailure) and "message.content is neither text nor a list of text parts" in str(got), got


def test_a_redirect_says_where_to_and_a_model_without_a_name_is_refused():
    """A 302 was read as "HTTP 200: not JSON"; a /v1/models entry whose id is null was used as the
    model "None"."""
    from fixtures.fake_openai import FakeServer

    with FakeServer(redirect_to="https://elsewhere.example/v1/models", lifetime_s=10) as fake:
        with pytest.raises(ServerUnreachable, match="HTTP 302: a redirect to https://elsewhere.example/v1/models: "
                                                    "set backend.base_url to where the server answers"):
            connect(ServerSettings(base_url=fake.base_url))
    with FakeServer(model=None, lifetime_s=10) as fake:
        with pytest.raises(ServerUnreachable, match="lists a model without a name as its id") as err:
            connect(ServerSettings(base_url=fake.base_url))
    assert "\n" not in str(err.value)
