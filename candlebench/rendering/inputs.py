"""A task's samples table as the input stages read it, and the names of its input columns."""

from __future__ import annotations

import pandas as pd

from candlebench.core.errors import CorruptFile, OutdatedFile
from candlebench.core.layout import TaskPaths

# The text input (OHLCV blocks of rendering/text.py) is one file per (code, cutoff) beside its charts.
TEXT_INPUT = "ohlcv"
# A white image of a chart's size, drawn in place of a chart where a task names this input among
# its charts: the image-free control (what a model answers with no chart to read).
BLANK_INPUT = "blank"


def text_column() -> str:
    return f"text_{TEXT_INPUT}"


def read_samples(paths: TaskPaths, required: tuple[str, ...] = ()) -> pd.DataFrame:
    """The task's samples table; ``required``, the columns the task's stages read (its
    ``Task.sample_columns``): samples built before the task added one are refused in one line (the
    stage would fail on a KeyError deep inside)."""
    if not paths.samples.exists():
        raise FileNotFoundError(
            f"{paths.samples}: no samples yet; run `candlebench samples task={paths.task}` with the same out_dir"
        )
    try:
        samples = pd.read_parquet(paths.samples)
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise CorruptFile(
            f"{paths.samples}: unreadable ({type(err).__name__}: {err}); re-run `candlebench samples task={paths.task}`"
        ) from None
    missing = [c for c in required if c not in samples.columns]
    if missing:
        raise OutdatedFile(f"{paths.samples}: built by an older version of the {paths.task} task (no column "
                           f"{', '.join(missing)}); run `candlebench samples task={paths.task} …` again with the "
                           f"same data and out_dir")
    return samples
