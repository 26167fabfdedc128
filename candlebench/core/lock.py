"""One writer per run: a lock file that says who holds it.

``infer`` takes one per run and shard, ``render`` one per task and chunk (the units that SLURM array
tasks already split between them, each with files of its own). A second command on the same unit
is refused at once, naming the holder's pid and host: waiting would hide that the same work was
started twice, and the holder may run for hours. The file holds the pid, host and start of its
holder, and the holder keeps an ``flock`` on it for as long as it runs: the kernel drops that
lock however the holder ends (SIGKILL included), so a lock file left by a killed process is stale
the moment it is read, and the next command takes it over (saying so)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
import functools
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from omegaconf import DictConfig

from candlebench.core.errors import UserError


class Held(UserError, RuntimeError):
    """Another command is writing the same run (or chunk of charts) now."""


def _holder(path: Path) -> dict:
    try:
        found = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


class NoLockFile(UserError, OSError):
    """The lock's path cannot be a file (a folder stands there, or a file where its folder belongs)."""


def _open(path: Path, what: str) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except (IsADirectoryError, NotADirectoryError, FileExistsError) as err:
        raise NoLockFile(f"{path}: the lock file of {what} cannot be written there ({err.strerror}); nothing of ours "
                         "puts a folder or file there: move it away and run the same command again") from None


@contextmanager
def held(path: Path, what: str, instead: str) -> Iterator[None]:
    """Hold ``path`` while the block runs, or raise :class:`Held` naming the holder of ``what``
    (``instead``: what the user can do other than wait)."""
    while True:
        fd = _open(path, what)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = _holder(path)
            raise Held(f"{what} is being written by another command: pid {holder.get('pid', '?')} on "
                       f"{holder.get('host', '?')} since {holder.get('since', '?')} ({path}); wait for it to end, "
                       f"or {instead}") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed the file between our open and our lock: take the new one
    stale = _holder(path)
    if stale.get("pid"):
        print(f"note: {path}: taking over the lock of pid {stale['pid']} on {stale.get('host', '?')}, which ended "
              "without releasing it (killed?)", file=sys.stderr)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
        yield
    finally:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        os.close(fd)


@dataclass(frozen=True)
class WriterLock:
    """What one command writes alone: its lock file, how to name it, what else the user can do."""

    lock: Path
    what: str
    instead: str


def one_writer(lock: Callable[[DictConfig], WriterLock]) -> Callable:
    """A stage job that holds the lock of what it writes while it runs. Where that folder does not
    exist yet (no samples) there is nothing to guard: the job fails at once, leaving no lock
    folder behind."""
    def decorate(job: Callable[[DictConfig], None]) -> Callable[[DictConfig], None]:
        @functools.wraps(job)
        def locked(cfg: DictConfig) -> None:
            writer = lock(cfg)
            if not writer.lock.parent.parent.exists():
                return job(cfg)
            with held(writer.lock, writer.what, writer.instead):
                return job(cfg)
        return locked
    return decorate
