"""backend=server under faults, through the CLI, against the fake OpenAI-compatible server of
tests/fixtures/fake_openai.py (127.0.0.1, a bounded lifetime): Ctrl-C while requests hang, and a
second Ctrl-C while the first is still being handled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from fixtures.fake_openai import FakeServer, wait_for
from helpers import run_dir, start


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
