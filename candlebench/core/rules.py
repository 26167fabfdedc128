"""The tests a setting's value must pass, each with what it allows in words, so a bad value is a
one-line error naming the key, the value and what is allowed: every config block's dataclass
declares them on its fields (candlebench.core.settings). And the keys checked on the command line
itself, before Hydra writes anything (:func:`check_early`)."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable

import pandas as pd
from candlebench.core.errors import UserError

Rule = tuple[str, Callable[[Any], bool], str]


class ConfigError(UserError, ValueError):
    pass


def _plain_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def integer(lo: int) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo), f"an integer >= {lo}"


def optional_integer(lo: int) -> tuple[Callable[[Any], bool], str]:
    test, allowed = integer(lo)
    return (lambda v: v is None or test(v)), f"null or {allowed}"


def number(lo: float, low_open: bool = False, hi: float | None = None, high_open: bool = False) -> tuple[Callable[[Any], bool], str]:
    # Finite: YAML reads `inf` as a float, and a deadline or a wait of inf is accepted by every
    # comparison here, then fails each request (a socket timeout of inf) or waits forever.
    def test(v: Any) -> bool:
        return (_plain_number(v) and math.isfinite(v) and (v > lo if low_open else v >= lo)
                and (hi is None or (v < hi if high_open else v <= hi)))
    low = f"{'>' if low_open else '>='} {lo}"
    high = ", not inf" if hi is None else f" and {'<' if high_open else '<='} {hi}"
    return test, f"a number {low}{high}"


def share(closed: bool) -> tuple[Callable[[Any], bool], str]:
    """A share: in [0, 1], or in (0, 1) when not ``closed``."""
    test, _ = number(0, low_open=not closed, hi=1, high_open=not closed)
    return test, "a number in [0, 1]" if closed else "a number in (0, 1)"


def one_of(choices: Any) -> tuple[Callable[[Any], bool], str]:
    return (lambda v: v in choices), f"one of {sorted(choices)}"


def date_or_null(v: Any) -> bool:
    if v is None:
        return True
    try:
        pd.Timestamp(str(v))
    except (ValueError, TypeError):
        return False
    return True


# A variable's name as environment variables are named (capitals, digits, _). A value that is not
# one, or that starts as API keys do, is a key pasted where its variable's name belongs: mixed-case
# keys with no known prefix (most providers') were taken for a name, written into the job's saved
# configs and echoed by the "not set" error.
_VARIABLE = re.compile(r"[A-Z_][A-Z0-9_]*")
_KEY_PREFIXES = ("sk-", "sk_", "hf_", "ghp_", "gsk_", "xai-", "pk-", "api-", "key-")


def variable_name(v: Any) -> bool:
    return v is None or (isinstance(v, str) and _VARIABLE.fullmatch(v) is not None
                         and not v.lower().startswith(_KEY_PREFIXES))


def folder(v: Any) -> bool:
    return isinstance(v, str) and v.strip() != ""


# Keys whose bad values must be refused before Hydra writes anything (its log folder under
# out_dir, its .hydra/ config dumps, which would keep a pasted key), so read from the command line
# itself, and said without the value: a key printed into a SLURM log is on disk too.
EARLY: tuple[Rule, ...] = (
    ("out_dir", folder, "a folder path, not empty (the study's files would land in the working folder, "
                        "Hydra's logs at /logs)"),
    ("backend.api_key_env", variable_name,
     "the NAME of an environment variable holding the key (capitals, digits and _), not the key (the value "
     "given is no such name and was written nowhere): `export MY_KEY=...` and set backend.api_key_env=MY_KEY"),
)


def _unquoted(text: str) -> str | None:
    """A command-line value as Hydra reads it: quotes taken off, its ``null`` as None (a key left unset,
    as ``backend.api_key_env=null`` asks for no key)."""
    text = text.strip()
    if text == "null":
        return None
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


# Keys renamed since (old -> new). One still given fails, naming the new key: on the command line it
# would otherwise be Hydra's "not in struct", and in a config file it would be silently ignored.
RENAMED: tuple[tuple[str, str], ...] = (
    ("per_task", "task_overrides"),
)


def check_early(overrides: Iterable[str], found: Callable[[str], tuple[bool, Any]] | None = None) -> None:
    """Raise :class:`ConfigError` for a :data:`RENAMED` key, or an :data:`EARLY` key set to a value it
    refuses: on the command line (``overrides``) or, given ``found`` (a key -> (whether it is there,
    its value) over a config), in the composed config."""
    given = {o.split("=", 1)[0].lstrip("+~"): _unquoted(o.split("=", 1)[1]) for o in overrides if "=" in o}
    for old, new in RENAMED:
        if found(old)[0] if found is not None else any(k == old or k.startswith(f"{old}.") for k in given):
            raise ConfigError(f"{old} is now named {new}: give the same keys under it ({new}.<...>=...)")
    for key, test, allowed in EARLY:
        present, v = found(key) if found is not None else (key in given, given.get(key))
        if present and not test(v):
            raise ConfigError(f"{key}: must be {allowed}")
