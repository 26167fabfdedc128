"""Building tables of many small Python objects at once (a run's records, their verdicts).

Python's cyclic garbage collector walks every live container each time enough new ones have been
allocated; while a table of 200k records is built, all of them stay alive, so its passes find
nothing to free and cost more than the build itself (judging 200k forecast answers into the parsed
table: 1.7 s with it, 0.9 s without; bench/score.py). Such a build runs with it paused.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block (reference counting still frees what is dropped), and
    back as it was after it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
