"""``run.json``: what a run is, written once by the stage that creates the run and read by every
stage after it. The run key is the fingerprint of ``identity`` — everything that changes the
answers — so records of another configuration never pass for this run's."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from candlebench.core.errors import CorruptFile
from candlebench.core.io import fingerprint, write_json
from candlebench.core.schema import KEY, stamped, version_of

KINDS = ("model", "baseline", "import")


@dataclass(frozen=True)
class RunInfo:
    task: str
    kind: str  # model | baseline | import
    model_name: str
    identity: dict[str, Any]
    release_date: str | None = None  # for the contamination split of the scores
    random_weights: bool = False  # a pipeline check, not a model: reports say so
    run_key: str = field(default="")

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"run kind {self.kind!r}: one of {KINDS}")
        if not self.run_key:
            object.__setattr__(self, "run_key", fingerprint({"task": self.task, **self.identity}))

    def write(self, path: Path) -> Path:
        return write_json(stamped("run", asdict(self)), path)

    @classmethod
    def read(cls, path: Path) -> "RunInfo":
        """run.json of any schema version this candlebench knows; a newer one is refused (:class:`NewerSchema`)."""
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no run.json; run `candlebench infer` (or baseline / import) first") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise CorruptFile(f"{path}: not a run.json of this candlebench ({err}); re-run the stage that made the run") from None
        if isinstance(data, dict):
            version_of("run", data, path)
            data.pop(KEY, None)
        try:
            return cls(**data)
        except (TypeError, ValueError) as err:
            raise CorruptFile(f"{path}: not a run.json of this candlebench ({err}); re-run the stage that made the run") from None
