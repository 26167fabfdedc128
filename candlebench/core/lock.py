"""One writer per run: a lock file that says who holds it.

Every command that writes into a run holds a lock of that run (:class:`RunLock`): ``infer`` one per
shard, ``import``, ``baseline`` and ``score`` the whole run; ``render`` holds one per task and chunk.
Shards of one count (the units a SLURM array splits a run into, each writing files of its own) run
side by side; any other pair of writers of one run is refused, whatever the shard counts: shard
0/1 and shard 0/2 would both answer the same samples, an import would delete the folder under a
running infer. A second command is refused at once, naming the holder's pid and host: waiting would
hide that the same work was started twice, and the holder may run for hours. The file holds the
pid, host and start of its holder, and the holder keeps an ``flock`` on it for as long as it runs:
the kernel drops that lock however the holder ends (SIGKILL included), so a lock file left by a
killed process is stale the moment it is read, and the next command takes it over (saying so)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
import functools
import re
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TypeVar


from candlebench.core.errors import UserError
from candlebench.core.layout import TaskPaths


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

    def hold(self):
        return held(self.lock, self.what, self.instead)


WHOLE = "whole"
_UNIT = re.compile(r"whole|shard\d+of(\d+)")


@dataclass(frozen=True)
class RunLock(WriterLock):
    """A writer of one run (its lock file: ``TaskPaths.run_lock``): of its shard ``shard``'s unit
    "shard<i>of<n>", or of the whole run (``shard`` None: import, baseline, score)."""

    shard: tuple[int, int] | None = None
    paths: TaskPaths | None = None  # the task folder whose locks the run's writers hold
    run: str = ""

    @classmethod
    def of(cls, paths: TaskPaths, run: str, shard: tuple[int, int] | None, what: str, instead: str) -> "RunLock":
        unit = WHOLE if shard is None else f"shard{shard[0]}of{shard[1]}"
        return cls(paths.run_lock(run, unit), what, instead, shard, paths, run)

    def _beside(self, unit: re.Match) -> bool:
        """Whether the holder of another lock of the same run, of ``unit``, may write beside this
        one: two shards of one count (distinct: one unit is one file)."""
        return bool(unit.group(1) and self.shard and int(unit.group(1)) == self.shard[1])

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Under the run's gate (held only while it looks, so two writers never both look and both
        take), refuses when a live writer of the run may not write beside this one, then holds its
        own unit's lock until the block ends."""
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        with ExitStack() as stack:
            gate = os.open(self.paths.run_gate(self.run), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(gate, fcntl.LOCK_EX)  # a moment: its holders only look and take
                for name, other in self.paths.run_locks(self.run).items():
                    unit = _UNIT.fullmatch(name)
                    if other != self.lock and unit and not self._beside(unit) and _live(other):
                        holder = _holder(other)
                        raise Held(f"{self.what} is being written by another command: pid {holder.get('pid', '?')} "
                                   f"on {holder.get('host', '?')} since {holder.get('since', '?')} ({other}); wait "
                                   f"for it to end, or {self.instead}")
                stack.enter_context(held(self.lock, self.what, self.instead))
            finally:
                os.close(gate)
            yield


def run_lock(paths: TaskPaths, run: str, shard: tuple[int, int] | None = None,
             instead: str = "give this one another infer.run_name") -> RunLock:
    """The lock a command holds while it writes into run ``run`` of the task in ``paths`` (its shard
    ``shard`` = (index, count), or the whole run)."""
    what = f"run {paths.run(run).root}" + ("" if shard is None else f" (shard {shard[0]}/{shard[1]})")
    return RunLock.of(paths, run, shard, what, instead)


def _live(path: Path) -> bool:
    """Whether a command holds ``path``'s flock now (a file left by a killed one is not live)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False


J = TypeVar("J")  # a stage's job config


def one_writer(lock: Callable[[J], WriterLock]) -> Callable[[Callable[[J], None]], Callable[[J], None]]:
    """A stage job that holds the lock of what it writes while it runs. Where that folder does not
    exist yet (no samples) there is nothing to guard: the job fails at once, leaving no lock
    folder behind."""
    def decorate(job: Callable[[J], None]) -> Callable[[J], None]:
        @functools.wraps(job)
        def locked(config: J) -> None:
            writer = lock(config)
            if not writer.lock.parent.parent.exists():
                return job(config)
            with writer.hold():
                return job(config)
        return locked
    return decorate
