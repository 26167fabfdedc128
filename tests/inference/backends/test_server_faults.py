"""backend=server under faults, through the CLI, against the fake OpenAI-compatible server of
tests/fixtures/fake_openai.py (127.0.0.1, a bounded lifetime): Ctrl-C while requests hang, a
second Ctrl-C while the first is still being handled, and one writer per run (a second infer or
render refused while the first works, a killed holder's lock taken over)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

from fixtures.fake_openai import FakeServer, wait_for
from helpers import cli, run_dir, start
from candlebench.inference.records import RecordStore


def test_ctrl_c_cuts_hung_requests_exits_within_2_s_and_keeps_the_answers(workspace, env):
    """Three answers, then every request hangs (the default timeout_s is 600 s): Ctrl-C ends the
    command within 2 s, exit 130, the three answers on disk with the model the replies named."""
    parts = run_dir(workspace, "hung") / "parts"

    def answered() -> list[dict]:
        lines = [x for p in sorted(parts.glob("*.jsonl")) for x in p.read_text().splitlines() if x.strip()]
        return [json.loads(x) for x in lines]

    with FakeServer(script=("answer",) * 3 + ("hang",), lifetime_s=60) as fake:
        proc = start("infer", "data=slice", f"out_dir={workspace}", "infer.run_name=hung", "backend=server",
                     f"backend.base_url={fake.base_url}", "backend.concurrency=2", env=env)
        assert wait_for(lambda: parts.exists() and len(answered()) >= 3 and fake.calls >= 5, 60), "no answers yet"
        time.sleep(0.2)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        ended = wait_for(lambda: proc.poll() is not None, 5)
        took = time.monotonic() - sent
        if not ended:  # still waiting on its requests: end it, and fail
            os.killpg(proc.pid, signal.SIGKILL)
        done = proc.wait()
    assert done.rc == 130 and "run the same command again" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert took < 2, f"{took:.1f} s to end after Ctrl-C"
    records = answered()
    assert len(records) == 3 and all(r["error"] is None and r["served_model"] == "tiny" for r in records)


SCRIPT = """
import sys, time
from candlebench.core.interrupts import second_interrupt_exits
second_interrupt_exits()
try:
    print("ready", flush=True)
    time.sleep(30)
except KeyboardInterrupt:
    print("stopping", flush=True)
    time.sleep(30)  # a stop that takes its time: the second Ctrl-C must not wait for it
"""


def test_a_second_ctrl_c_exits_at_once():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline().strip() == "stopping"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 130 and time.monotonic() - sent < 1
        assert "interrupted again: exiting now" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_one_command_writes_a_run_at_a_time_and_a_killed_holders_lock_is_taken_over(workspace, env):
    """A second infer on a run whose infer is waiting on its server is refused at once, naming the
    holder's pid and host; the holder killed (SIGKILL: its lock file stays), the next infer takes
    the stale lock over and answers."""
    args = ("infer", "data=slice", f"out_dir={workspace}", "infer.run_name=locked", "backend=server")
    lock = workspace / "forecast" / "locks" / "run.locked.shard0of1.lock"
    with FakeServer(script=("hang",), lifetime_s=60) as fake:
        holder = start(*args, f"backend.base_url={fake.base_url}", env=env)
        assert wait_for(lambda: fake.calls >= 1 or holder.poll() is not None, 60) and holder.poll() is None, \
            holder.wait().stderr[-2000:]
        second = cli(*args, f"backend.base_url={fake.base_url}", env=env, check=False)
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    said = second.stderr.strip()
    assert second.returncode != 0 and len(said.splitlines()) == 1, said
    assert said.startswith(f"error: run {run_dir(workspace, 'locked')} (shard 0/1) is being written by another command: "
                           f"pid {holder.pid} on {socket.gethostname()} since ") and "another infer.run_name" in said
    assert json.loads(lock.read_text())["pid"] == holder.pid  # left by the killed holder
    with FakeServer(lifetime_s=60) as fake:
        third = cli(*args, f"backend.base_url={fake.base_url}", env=env)
    assert f"taking over the lock of pid {holder.pid}" in third.stderr and "0 errors" in third.stdout
    assert not lock.exists()


def test_a_second_render_of_a_chunk_is_refused_naming_the_holder(workspace, env):
    from candlebench.core.lock import held

    common = ("render", "data=slice", f"out_dir={workspace}", "data.codes=[AC,ALI,PHN,SM]", "task.samples.interval=90",
              "render.workers=1")
    lock = workspace / "forecast" / "locks" / "render.chunk0of1.lock"
    with held(lock, "the test's", "wait"):
        refused = cli(*common, env=env, check=False)
    assert refused.returncode != 0 and f"is being written by another command: pid {os.getpid()} on " in refused.stderr
    assert "(chunk 0/1)" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not lock.exists()


def test_import_refuses_a_model_runs_name_unless_told_to_replace_it(workspace, env, tmp_path):
    """A model run (answered through the fake server) stays whole when an import names it; with
    import_replace=true the run becomes the import, none of the model's answers left in it."""
    common = ("data=slice", f"out_dir={workspace}", "infer.run_name=modelrun")
    with FakeServer(lifetime_s=60) as fake:
        cli("infer", *common, "backend=server", f"backend.base_url={fake.base_url}", env=env)
    run = run_dir(workspace, "modelrun")
    before = RecordStore(run).merged()  # the run's records (infer writes them; score merges responses.jsonl)
    first = before[0].sample_id
    answers = tmp_path / "five.jsonl"
    answers.write_text(json.dumps({"sample_id": first, "text": "<score>0.1</score>"}) + "\n")
    refused = cli("import", str(answers), *common, env=env, check=False)
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1
    assert f"{run} is a model run, not an import" in refused.stderr and "import_replace=true" in refused.stderr
    assert RecordStore(run).merged() == before and json.loads((run / "run.json").read_text())["kind"] == "model"
    cli("import", str(answers), *common, "import_replace=true", env=env)
    replaced = RecordStore(run).merged()
    assert [r.sample_id for r in replaced] == [first] and replaced[0].backend == "import"
    assert json.loads((run / "run.json").read_text())["kind"] == "import"


def test_replies_that_are_no_text_are_failures_counted_apart_and_asked_again(workspace, env):
    """A server whose content is an object: every sample is its error record, infer's last line
    counts none of them as answered, and the next infer asks them again; a server that sends its
    content as text parts then answers them all."""
    from helpers import stage

    common = ["data=slice", f"out_dir={workspace}", "infer.run_name=nontext", "backend=server",
              "infer.max_error_rate=1"]
    with FakeServer(text={"oops": 1}, lifetime_s=60) as fake:
        said = stage("infer", *common, f"backend.base_url={fake.base_url}", env=env)
    assert "27 errors; 0 of 27 samples answered so far (27 failed: asked again by the next infer)" in said, said
    with FakeServer(text=[{"type": "text", "text": "<score>0.5</score>"}], lifetime_s=60) as fake:
        said = stage("infer", *common, f"backend.base_url={fake.base_url}", env=env)
    assert "27 generated, 0 already done, 0 errors; 27 of 27 samples answered so far ->" in said, said
