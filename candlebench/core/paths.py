"""Where the configs are (``candlebench/conf``: the checkout's conf/ through its link, or the
installed package's copy) and, in a checkout, the repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

PACKAGE_DIR = Path(__file__).resolve().parents[1]
CONF_DIR = PACKAGE_DIR / "conf"
# The checkout's root (tests/data, .git); for an installed wheel, the folder above site-packages'
# candlebench, which holds neither: only the slice data config and provenance's git commit read it.
ROOT_DIR = PACKAGE_DIR.parent


@dataclass(frozen=True, kw_only=True)
class PathSettings:
    """``paths:``: the checkout, the cache of models and downloads, and where studies go by default."""

    root_dir: str
    cache_dir: str
    output_root: str


def study_name(path: str | None, fallback: str) -> str:
    """The study folder a data path gets by default: a file's name without its suffix
    (``my.csv`` -> ``my``), a folder's name, a glob's folder's name (``exports/*.csv`` ->
    ``exports``); ``fallback`` (the data config's name) when there is no path yet."""
    if not path:
        return fallback
    named = Path(str(path))
    while any(ch in named.name for ch in "*?["):  # the folder the glob looks in
        named = named.parent
    name = named.stem if named.suffix and not named.is_dir() else named.name
    return name or fallback


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("cb.root"):
        OmegaConf.register_new_resolver("cb.root", lambda: str(ROOT_DIR))
    if not OmegaConf.has_resolver("cb.max"):
        # The larger of a model's and a task's token budget (a thinking model on a long-answer task).
        OmegaConf.register_new_resolver("cb.max", lambda *values: max(int(v) for v in values))
    if not OmegaConf.has_resolver("cb.study"):
        OmegaConf.register_new_resolver("cb.study", study_name)
    if not OmegaConf.has_resolver("cb.pass"):
        # A run name's suffix for its pass: none for the first ("direct"), "-verify" for a second.
        OmegaConf.register_new_resolver("cb.pass", lambda method: "" if method == "direct" else f"-{method}")
