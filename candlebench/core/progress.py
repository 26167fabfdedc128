"""Progress of a long stage: a live bar on a terminal, plain periodic lines anywhere else (a log, a
SLURM output file, a pipe), where a bar's carriage returns would pile up into one line of
thousands of characters."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from typing import Iterator, TextIO

from tqdm import tqdm

EVERY_S = 30.0  # a line at most this often in a log (and one at the end)


class Lines:
    """``desc: done/total unit (percent)``, at most every ``every_s`` seconds and once at the end."""

    def __init__(self, total: int, unit: str, desc: str, stream: TextIO, every_s: float):
        self.total, self.unit, self.desc, self.stream, self.every_s = total, unit, desc, stream, every_s
        self.done, self.start = 0, time.monotonic()
        self.last = self.start

    def update(self, n: int) -> None:
        self.done += n
        if time.monotonic() - self.last >= self.every_s:
            self.line()

    def line(self) -> None:
        self.last = time.monotonic()
        share = f" ({self.done / self.total:.0%})" if self.total else ""
        print(f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s{share}, {self.last - self.start:.0f} s",
              file=self.stream, flush=True)


@contextmanager
def progress(total: int, unit: str, desc: str, stream: TextIO | None = None) -> Iterator[tqdm | Lines]:
    """What reports a stage's progress: ``.update(n)`` as ``n`` more items are done."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty():
        with tqdm(total=total, unit=unit, desc=desc, file=stream) as bar:
            yield bar
        return
    lines = Lines(total, unit, desc, stream, EVERY_S)
    yield lines
    if total:
        lines.line()


def library_bars_off_terminal() -> None:
    """The same rule for the libraries' bars (transformers' "Loading weights", the hub's downloads):
    read once when huggingface_hub is first imported, so set before it is."""
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
