"""Where the repository and its configs are, for an editable install or a source checkout."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

ROOT_DIR = Path(__file__).resolve().parents[2]
CONF_DIR = ROOT_DIR / "conf"


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("cb.root"):
        OmegaConf.register_new_resolver("cb.root", lambda: str(ROOT_DIR))
    if not OmegaConf.has_resolver("cb.max"):
        # The larger of a model's and a task's token budget (a thinking model on a long-answer task).
        OmegaConf.register_new_resolver("cb.max", lambda *values: max(int(v) for v in values))
    if not OmegaConf.has_resolver("cb.pass"):
        # A run name's suffix for its pass: none for the first ("direct"), "-verify" for a second.
        OmegaConf.register_new_resolver("cb.pass", lambda method: "" if method == "direct" else f"-{method}")
