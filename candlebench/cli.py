"""``candlebench <command> [key=value ...]``: each command is a Hydra job over ``conf/config.yaml``.

Everything after the command is handed to Hydra, so overrides, ``--multirun``, ``--cfg job``
(printed resolved) and ``hydra/launcher=...`` work as in any Hydra app, Hydra's flags before or
after the overrides.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping

import hydra
from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig
from omegaconf.errors import MissingMandatoryValue

from candlebench.commands import run as run_command
from candlebench.commands import sweep as sweep_command
from candlebench.core.errors import UserError
from candlebench.core.extras import require
from candlebench.core.interrupts import second_interrupt_exits
from candlebench.core.overrides import key_of, open_key, shared_out_dir
from candlebench.core.progress import library_bars_off_terminal
from candlebench.core.paths import CONF_DIR, register_resolvers
from candlebench.core.rules import ConfigError, check_early
from candlebench.market.market import MarketDataError
from candlebench.stages import samples as data_jobs
from candlebench.stages.graph import STAGES, check_added_keys, composition_error, prepare
from candlebench.stages.job import JobConfig
from candlebench.stages.task_overrides import apply_task_overrides
from candlebench.commands.status import status_command
from candlebench.commands.view import view_command
from candlebench.commands.sweep import SweepError
from candlebench.inference.backends import BACKEND_REQUIRES
from candlebench.inference.runner import RunAborted
from candlebench.task_api.registry import get_task, store_configs
from candlebench.task_api.registry import names as task_names


@dataclass(frozen=True)
class Command:
    job: Callable[[JobConfig], None]
    help: str
    # Leading positional words, each turned into an override (`data prepare demo` -> data=demo).
    positional: tuple[str, ...] = ()
    # Overrides applied unless the user sets the same key.
    defaults: tuple[str, ...] = ()
    # ... nor any key under these prefixes (your own data= replaces the demo experiment whole).
    unless: tuple[str, ...] = ()
    # Covers every task (tasks=[...]): each job takes its task's own settings from task_overrides.<task>.
    every_task: bool = False


# One rule for where a study lives: a command that names no data= (nor experiment=) works on the
# demo study, as `run` (`make demo`) builds it, so a stage, `import` or `report` after `make demo`
# finds what it made (outputs/demo-run); naming your data replaces the demo experiment whole.
DEMO, UNLESS = ("experiment=demo",), ("data", "experiment")

COMMANDS: Mapping[str, Command] = {
    "data prepare": Command(
        data_jobs.data_prepare, "download and convert a prepared market (demo) once", ("data",)
    ),
    "data check": Command(data_jobs.data_check, "load and validate market data, report defects", ("data",)),
    **{stage.name: Command(stage.job, stage.help, stage.positional, DEMO, UNLESS) for stage in STAGES},
    "run": Command(
        run_command.run,
        "the main job: every stage for every task (tasks=[...]); the demo unless you name data=",
        defaults=DEMO,
        unless=UNLESS,
        every_task=True,
    ),
    "sweep": Command(sweep_command.sweep, "every stage on SLURM (arrays, dependencies) for sweep.models, one report",
                     defaults=DEMO, unless=UNLESS, every_task=True),
}


def convert_llava_command(args: list[str]) -> None:
    """Not a Hydra job: a one-off rewrite of a checkpoint, so plain arguments."""
    import argparse

    from candlebench.inference.convert.llava import ConversionError, convert_llava

    parser = argparse.ArgumentParser(
        prog="candlebench convert llava",
        description="Rewrite an original LLaVA-repo checkpoint (e.g. FinLLaVA) to the transformers Llava layout.",
    )
    parser.add_argument("src", type=Path, help="checkpoint in the original LLaVA layout")
    parser.add_argument("dst", type=Path, help="output directory (transformers LlavaForConditionalGeneration)")
    parser.add_argument("--vision-tower", type=Path, default=None, help="CLIP checkpoint (default: mm_vision_tower)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty dst")
    ns = parser.parse_args(args)
    try:
        out = convert_llava(ns.src, ns.dst, ns.vision_tower, overwrite=ns.overwrite)
    except ConversionError as err:
        raise SystemExit(f"error: {err}") from None
    print(f"converted {ns.src} -> {out}")


PLAIN_COMMANDS: Mapping[str, Callable[[list[str]], None]] = {
    "convert llava": convert_llava_command,
    "status": status_command,
    "view": view_command,
}


def usage() -> str:
    lines = ["usage: candlebench <command> [group=option] [key=value ...]", "", "commands:"]
    for name, command in COMMANDS.items():
        args = " ".join(f"[{p.upper()}]" for p in command.positional)
        lines.append(f"  {f'{name} {args}'.strip():<26} {command.help}")
    lines.append(f"  {'convert llava SRC DST':<26} rewrite an original LLaVA checkpoint to the transformers layout")
    lines.append(f"  {'status RUN_DIR':<26} per-stage and per-shard progress of a run directory")
    lines.append(f"  {'view OUT_DIR [--port N]':<26} serve the report on 127.0.0.1 (a large study's sample browser needs it)")
    lines.append("")
    lines.append("e.g. candlebench samples data=slice task.samples.interval=20 out_dir=/tmp/run")
    return "\n".join(lines)


def _quoted(value: str) -> str:
    """A word as a Hydra value: quoted unless plain, so paths with spaces, colons or non-ASCII
    letters (which Hydra's grammar rejects unquoted) pass as users type them."""
    if re.fullmatch(r"[A-Za-z0-9_./-]+", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _as_typed(argument: str) -> str:
    """``key=value`` with a value Hydra cannot read unquoted (a space, a non-ASCII letter) quoted;
    lists, dicts, interpolations, sweeps and quoted values are left as they are."""
    key, sep, value = argument.partition("=")
    if not sep or not value or value[0] in "'\"[{$" or "," in value or key.startswith("-"):
        return argument
    if value.isascii() and " " not in value:
        return argument
    return f"{key}={_quoted(value)}"


def parse(argv: list[str]) -> tuple[str, Command, list[str]]:
    for words in (2, 1):
        name = " ".join(argv[:words])
        if len(argv) >= words and name in COMMANDS:
            command, rest = COMMANDS[name], argv[words:]
            overrides = []
            for group in command.positional:
                if rest and "=" not in rest[0] and not rest[0].startswith("-"):
                    overrides.append(f"{group}={_quoted(rest.pop(0))}")
            given = {key_of(a) for a in overrides + rest if "=" in a or a.startswith("~")}
            given_args = overrides + [_as_typed(a) for a in rest] + first_task(command, given, rest)
            if any(g.split(".", 1)[0] in command.unless for g in given):
                return name, command, given_args
            return name, command, [d for d in command.defaults if key_of(d) not in given] + given_args
    raise SystemExit(usage() if not argv or argv[0] in {"-h", "--help"} else f"unknown command {argv[:2]}\n\n{usage()}")


def first_task(command: Command, given: set[str], args: list[str]) -> list[str]:
    """A command over several tasks (``tasks=[e2a]``) composes its own config with the first of
    them, so a key of that task (``task.language``) is one of its settings."""
    chosen = [a.split("=", 1)[1] for a in args if key_of(a) == "tasks" and "=" in a]
    if not command.every_task or "task" in given or not chosen:
        return []
    first = chosen[-1].strip("[]'\" ").split(",")[0].strip("'\" ")
    return [f"task={first}"] if first in task_names() else []  # an unknown one: the registry names it


# What a command writes into a study before its work: Hydra's log folder and the resolved configs.
BEFORE_WORK = frozenset({"logs", "configs"})


def forget_empty_study(out: Path, since: float) -> None:
    """After a failed command: the study folder it made holding nothing but what it wrote before
    its work (its logs and configs) goes, so a typo (``data.path=nosuch.csv``) leaves no
    ``outputs/nosuch`` that `status` then reads as a study with no samples yet. Anything older
    than the command, or any other file, keeps the folder as it is."""
    try:
        entries = list(out.iterdir())
        files = [p for e in entries for p in e.rglob("*") if not p.is_dir()]
        ours = all(e.name in BEFORE_WORK and e.is_dir() for e in entries) and all(
            p.lstat().st_mtime >= since - 1 for p in files)  # 1 s: file systems with coarse timestamps
    except OSError:
        return
    if entries and ours:
        for entry in entries:
            shutil.rmtree(entry, ignore_errors=True)
        try:
            out.rmdir()  # only now empty; never a folder with anything of the user's in it
        except OSError:
            pass


def fail(message: str) -> None:
    # Inside a SLURM task submitit must see an exception it can pickle back to the sweep (it would
    # wait and then report a lost job for SystemExit); on a terminal, a message and exit code 1.
    if "SUBMITIT_EXECUTOR" in os.environ:
        raise RuntimeError(message)
    raise SystemExit(message)


# Hydra's own flags that take a value (the next word); ``--info`` may take one too.
_FLAG_VALUES = frozenset({"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                          "--config-dir", "-cd", "--experimental-rerun", "--info", "-i"})


def hydra_flags(args: list[str]) -> tuple[list[str], list[str]]:
    """(Hydra's flags with their values, the overrides), wherever the flags stand among them. The
    config a flag such as ``--cfg job`` prints is resolved (``--resolve``): the values a stage would
    run with, not the interpolations they come from."""
    flags: list[str] = []
    overrides: list[str] = []
    words = iter(args)
    for word in words:
        if not word.startswith("-"):
            overrides.append(word)
            continue
        flags.append(word)
        if word in _FLAG_VALUES:
            value = next(words, None)
            if value is not None and (word not in ("--info", "-i") or "=" not in value):
                flags.append(value)
            elif value is not None:
                overrides.append(value)
    if {"--cfg", "-c"} & set(flags) and "--resolve" not in flags:
        flags.append("--resolve")
    return flags, overrides


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    library_bars_off_terminal()
    for words in (2, 1):
        if " ".join(argv[:words]) in PLAIN_COMMANDS:
            return PLAIN_COMMANDS[" ".join(argv[:words])](argv[words:])
    name, command, given = parse(argv)
    flags, overrides = hydra_flags(given)
    overrides = [open_key(o) for o in overrides]
    if {"--multirun", "-m"} & set(flags) or "hydra.mode=MULTIRUN" in overrides:
        check_multirun(overrides)
    try:
        check_early(overrides)  # before Hydra writes its folder and config dumps
    except ConfigError as err:
        fail(f"error: {err}")
    register_resolvers()
    store_configs()
    try:
        check_added_keys(overrides)
    except ConfigError as err:
        fail(f"error: {err}")
    second_interrupt_exits()
    job_name = name.replace(" ", "_")
    # hydra.main reads sys.argv; give it only the overrides and Hydra's flags, and name the job after the command.
    sys.argv = [f"candlebench {name}", f"hydra.job.name={job_name}", *overrides, *flags]

    started, since = [], time.time()

    def run(cfg: DictConfig) -> None:
        started.append(True)
        try:
            apply_task_overrides(cfg, overrides)
            job = prepare(name, cfg)
            check_extras(name, command, job)
            command.job(job)
        except (UserError, MarketDataError, FileNotFoundError, RunAborted, SweepError) as err:
            # Bad data, a missing input or checkpoint, too many failed samples: the user's to fix.
            # The message names the file; a traceback would only bury it.
            forget_empty_study(Path(str(cfg.out_dir)), since)
            fail(f"error: {err}")
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: every stage resumes from what it wrote, so no traceback is owed.
            print("interrupted: what was written is kept; run the same command again to resume", file=sys.stderr)
            raise SystemExit(130) from None
        except MissingMandatoryValue as err:
            fail(f"error: {err.full_key} has no value; set it, e.g. {err.full_key}=...")

    # Hydra's composition errors reach this process whole (not printed by Hydra over several lines),
    # so they can be said in one.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        with mode_from_flags(flags, overrides):
            hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")(run)()
    except (ConfigCompositionException, MissingConfigException, OverrideParseException) as err:
        fail(f"error: {composition_error(err, overrides)}")
    except OSError as err:
        if started:  # the job's own: its traceback is owed
            raise
        # Hydra's log folder under out_dir, made before the job starts: a folder that cannot be written
        fail(f"error: cannot write {err.filename}: {err.strerror}; out_dir must be a folder you can create and write")


def check_multirun(overrides: list[str]) -> None:
    """Before any job: a sweep that changes samples, charts or answers needs an out_dir per job."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except OverrideParseException:
        return  # Hydra says what is wrong with it, in one line (main)
    swept = [o.key_or_group for o in parsed if o.is_sweep_override()]
    shared = shared_out_dir(swept, overrides)
    if shared:
        fail(f"error: --multirun over {', '.join(shared)} would write every job into one out_dir, each overwriting "
             f"the last's samples, charts or answers; give each job its own, e.g. "
             f"out_dir='outputs/sweep-${{{shared[0]}}}' (or sweep out_dir along with it)")


# What can set hydra.mode besides --multirun: the key itself, or configs from elsewhere.
_MODE_FLAGS = frozenset({"--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd"})
_MODE_KEYS = ("hydra.mode", "hydra.searchpath")


@contextmanager
def mode_from_flags(flags: list[str], overrides: list[str]) -> Iterator[None]:
    """hydra.main composes the whole config twice: once only to read ``hydra.mode`` (Hydra.get_mode),
    then to run. No config under conf/ sets hydra.mode (tests/test_cli.py holds them to it), so unless
    this command line can (the key, another config folder or search path), the mode is what
    --multirun says and the first composition is skipped: 0.1 CPU s of a light command's 0.65."""
    if _MODE_FLAGS & set(flags) or any(o.lstrip("~+").startswith(_MODE_KEYS) for o in overrides):
        yield
        return
    from hydra._internal.hydra import Hydra

    composed = Hydra.get_mode
    Hydra.get_mode = lambda self, config_name, overrides: None  # None: the flags' mode, as for a config without one
    try:
        yield
    finally:
        Hydra.get_mode = composed


# Commands that load a model: they need their backend's packages.
MODEL_COMMANDS = frozenset({"infer", "run", "sweep"})


def check_extras(name: str, command: Command, job: JobConfig) -> None:
    """Every optional package the command will need, before it does any work."""
    tasks = run_command.chosen_tasks(job) if command.every_task else [job.task.name]
    for task in tasks:
        require(f"task {task}", get_task(task).requires)
    if name in MODEL_COMMANDS:
        require(f"backend={job.backend.name}", BACKEND_REQUIRES.get(job.backend.name))


if __name__ == "__main__":
    main()
