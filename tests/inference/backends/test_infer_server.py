"""backend=server against a real vLLM OpenAI-compatible server on 127.0.0.1 (vLLM's CPU build, the
tiny Qwen2.5-VL fixture; no mock): the in-process engine's greedy answers, a server killed mid-run
and restarted with nothing lost or answered twice, one-line errors, and a key that never reaches a
file. One server for the module, behind a key and under two names (`--served-model-name`), so the
same weights can stand for "another model" without a second start. Runs in the vLLM environment.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from fixtures.vllm_server import VLLMServer, free_port
from helpers import CANDLEBENCH, VLLM_CPU, infer, records, run_dir

pytestmark = pytest.mark.vllm

KEY = "cb-test-key-5e0d1f"  # the server's key: it must never be written anywhere
NAMES = ("tiny-qwen", "tiny-qwen-alias")
FREE = ("model.constrain_answers=false",)


@pytest.fixture(scope="module")
def server(tmp_path_factory, env):
    from candlebench.inference.models import ModelSpec, ensure_built

    path = Path(env["CANDLEBENCH_CACHE"]) / "fixtures" / "tiny_qwen2_5_vl"  # model=tiny_qwen2_5_vl's own fixture
    ensure_built(ModelSpec(name="tiny", path=str(path), dtype="float32", build="qwen2_5_vl", fixture=str(path)))
    log = tmp_path_factory.mktemp("server") / "vllm.log"
    served = VLLMServer(path, env, log, names=NAMES, api_key=KEY)
    served.start()
    yield served
    served.stop()


def client_env(env: dict) -> dict:
    return {**env, "CB_SERVER_KEY": KEY}


def client(server: VLLMServer, *overrides: str) -> tuple[str, ...]:
    return ("backend=server", f"backend.base_url={server.base_url}", f"backend.model={NAMES[0]}",
            "backend.api_key_env=CB_SERVER_KEY", *overrides)


_references: dict[tuple[str, ...], str] = {}


def in_process(workspace: Path, env: dict, extra: tuple[str, ...]) -> str:
    """The in-process vLLM run of the same samples (once per mode), under test_vllm's name for
    the same run: the session's workspace answers it once, for whichever module comes first."""
    if extra not in _references:
        name = f"vllm-tiny_qwen2_5_vl-{'free' if extra else 'constrained'}"
        infer(workspace, env, name, "model=tiny_qwen2_5_vl", *extra, *VLLM_CPU)
        _references[extra] = name
    return _references[extra]


@pytest.mark.parametrize("extra", [(), FREE], ids=["constrained", "free"])
def test_greedy_answers_equal_the_in_process_engine(workspace, env, server, extra):
    """Structured outputs (the fixture's answer regex) and free decoding: the same token ids, text
    and prompt length as vLLM in this process; the run key names the server's model, not the URL."""
    name = f"served-{'free' if extra else 'constrained'}"
    infer(workspace, client_env(env), name, *extra, *client(server))
    reference = in_process(workspace, env, extra)
    got, want = records(workspace, name), records(workspace, reference)
    assert list(got.index) == list(want.index) and len(got) == 27
    assert list(got["token_ids"]) == list(want["token_ids"])
    assert list(got["prompt_tokens"]) == list(want["prompt_tokens"])
    # The text is the server's own: cut at max_tokens inside a multi-byte character, its incremental
    # detokenizer holds the partial bytes back where decoding the ids writes U+FFFD.
    assert [t.rstrip("\ufffd") for t in got["text"]] == [t.rstrip("\ufffd") for t in want["text"]]
    if not extra:
        assert list(got["text"]) == list(want["text"])
    assert (got["backend"] == "server").all() and (got["device"] == f"server {server.base_url}").all()
    served = json.loads((run_dir(workspace, name) / "run.json").read_text())["identity"]["served"]
    assert served["model"] == {"id": NAMES[0], "owned_by": "vllm", "root": str(server.model)}
    assert served["constraint"] == (None if extra else "structured_outputs") and served["dialect"] == "vllm"
    assert server.base_url not in json.dumps(served)


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0, done.stdout[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), done.stderr[-2000:]
    return lines[-1]


def test_one_line_errors(workspace, env, server):
    """No server at the URL, a model the server does not serve, a missing key, two models and none
    named: each one line, before a run directory exists."""
    cases = {
        "no server answers at": client(server, f"backend.base_url=http://127.0.0.1:{free_port()}/v1"),
        "backend.model=nope: the server at": client(server, "backend.model=nope"),
        "refuses us (HTTP 401": client(server, "backend.api_key_env=null"),
        "serves 2 models": client(server, "backend.model=null"),
    }
    for expected, overrides in cases.items():
        done = infer(workspace, client_env(env), "refused", *overrides, check=False)
        assert expected in one_line_error(done)
        assert not run_dir(workspace, "refused").exists()


def test_a_run_resumes_only_against_the_model_it_started_with(workspace, env, server):
    """Part of a run from one served model; resumed against another (the alias: its own id), it
    is refused in one line, naming both."""
    part = ("infer.shard.count=9", "infer.shard.index=0")
    infer(workspace, client_env(env), "swapped", *part, *client(server))
    done = infer(workspace, client_env(env), "swapped", *client(server, f"backend.model={NAMES[1]}"), check=False)
    line = one_line_error(done)
    assert "its answers so far came from the server's model" in line and NAMES[1] in line and NAMES[0] in line


def test_a_server_killed_mid_run_then_restarted_resumes_with_each_sample_answered_once(workspace, env, server):
    """SIGKILL to the whole server while a run is under way (one request at a time, so it lands
    between answers): the client retries, then stops in one line keeping every answer; the server
    restarted, the run resumed at another concurrency ends with the in-process engine's records
    and no sample answered twice."""
    parts = run_dir(workspace, "killed") / "parts"

    def lines() -> list[dict]:
        return [json.loads(x) for p in sorted(parts.glob("*.jsonl")) for x in p.read_text().splitlines() if x.strip()]

    command = [CANDLEBENCH, "infer", "data=slice", f"out_dir={workspace}", "infer.run_name=killed",
               *client(server, "backend.concurrency=1", "backend.retries=2", "backend.backoff_s=0.2")]
    proc = subprocess.Popen(command, env=client_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while proc.poll() is None and (not parts.exists() or len(lines()) < 3) and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before the server could be killed"
    server.kill()
    stdout, stderr = proc.communicate(timeout=120)
    line = one_line_error(subprocess.CompletedProcess(command, proc.returncode, stdout, stderr))
    assert "stopped answering" in line and "run the same command again" in line
    before = len(lines())
    assert 3 <= before < 27

    server.start()
    infer(workspace, client_env(env), "killed", *client(server, "backend.concurrency=8"))
    got, want = records(workspace, "killed"), records(workspace, in_process(workspace, env, ()))
    assert list(got.index) == list(want.index) and got.index.is_unique
    assert list(got["token_ids"]) == list(want["token_ids"]) and list(got["text"]) == list(want["text"])
    answered = [r["sample_id"] for r in lines() if r["error"] is None]
    assert sorted(answered) == sorted(got.index)  # each sample answered exactly once across both attempts


def test_the_key_is_never_written(workspace, env, server):
    """Every file the runs above wrote (records, run.json, parsed tables, Hydra's config dumps and
    logs) and the config a job prints: no trace of the key, only the variable's name."""
    leaked = [p for p in workspace.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []
    printed = subprocess.run([CANDLEBENCH, "infer", "data=slice", f"out_dir={workspace}", *client(server), "--cfg", "job"],
                             capture_output=True, text=True, env=client_env(env), timeout=300)
    assert printed.returncode == 0 and "api_key_env: CB_SERVER_KEY" in printed.stdout
    assert KEY not in printed.stdout + printed.stderr
