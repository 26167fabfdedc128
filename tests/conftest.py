from __future__ import annotations

import csv
from pathlib import Path

import pytest

from rendering.market import Market, load_market

DATA_DIR = Path(__file__).parent / "data"
SLICE = DATA_DIR / "pse_slice.csv"


@pytest.fixture(scope="session")
def slice_path() -> Path:
    return SLICE


@pytest.fixture(scope="session")
def slice_market() -> Market:
    return load_market([SLICE], name="PSE")


@pytest.fixture(scope="session")
def slice_rows() -> list[dict[str, str]]:
    """The committed slice read with the csv module only: the independent side of hand checks."""
    with SLICE.open(newline="") as fh:
        return list(csv.DictReader(fh))


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path
