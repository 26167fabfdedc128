"""A stage's progress: a live bar on a terminal only; in a log, plain lines a few per minute."""

from __future__ import annotations

import io
import os

import pytest

from candlebench.core.progress import progress

pytestmark = pytest.mark.unit


def test_a_log_gets_plain_lines_and_no_carriage_returns(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr("candlebench.core.progress.EVERY_S", 0.0)
    with progress(3, "file", "render", log) as bar:
        for _ in range(3):
            bar.update(1)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and lines[0].startswith("render: 1/3 files (33%)")
    assert lines[-1].startswith("render: 3/3 files (100%)")


def test_a_terminal_gets_the_live_bar():
    import select

    leader, follower = os.openpty()
    with open(follower, "w") as tty, open(leader, "rb", buffering=0) as screen:
        with progress(2, "sample", "tiny shard 0/1", tty) as bar:
            bar.update(2)
        tty.flush()
        shown = b""
        while select.select([screen], [], [], 0.5)[0]:  # all the bar wrote, however the pty hands it over
            shown += screen.read(4096)
    shown = shown.decode()
    assert "\r" in shown and "tiny shard 0/1" in shown and "2/2" in shown, shown
