"""Ctrl-C twice: the first stops the command in order (KeyboardInterrupt: requests in flight are
cut, what was written stays, the run's tables are brought up to date); a second one, while that
is still under way, ends the process at once. Everything a command writes is fsynced batch by
batch and a torn last line is ignored on resume, so the quick exit loses nothing already written."""

from __future__ import annotations

import os
import signal
import threading

EXIT_CODE = 130  # a shell's code for a process ended by SIGINT


def _second(signum, frame) -> None:
    os.write(2, b"interrupted again: exiting now; what was written is kept\n")
    os._exit(EXIT_CODE)


def _first(signum, frame) -> None:
    signal.signal(signal.SIGINT, _second)
    raise KeyboardInterrupt


def second_interrupt_exits() -> None:
    """Install the two-step Ctrl-C handling for this process (the main thread's job only: Python
    takes signal handlers there alone)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _first)
