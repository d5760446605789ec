"""Command-line interface (``cloudsched``): parse, build the spec, call the API, write files.

One module per command group, each with a ``register(app)`` that attaches its commands:
:mod:`~cloudsched.cli.dispatch` (``predict``, ``fluid``, ``simulate``),
:mod:`~cloudsched.cli.compare` (``compare``), :mod:`~cloudsched.cli.trace` (``trace``),
:mod:`~cloudsched.cli.place` (``place``), :mod:`~cloudsched.cli.experiments` (``sweep``,
``reproduce``, ``demo``); shared helpers (output, progress, tables) in
:mod:`~cloudsched.cli.common`.  Errors are rendered here, in one place: bad input prints
one line ``error: ...`` naming the parameter and its allowed range on standard error and
exits with status 2, never a traceback; a failure outside the program (a file, a worker)
exits with 1.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from cloudsched.cli import (
    advise,
    checklb,
    compare,
    dispatch,
    experiments,
    lab,
    place,
    policies,
    stale,
    theory,
    trace,
    tune,
    verdict,
    warmup,
)
from cloudsched.cli._sigint import interruptible, stopped_by
from cloudsched.cli.console import one_line
from cloudsched.cli.options import opt
from cloudsched.errors import ExternalError, InputError, ParameterError

__all__ = ["app", "main"]

app = typer.Typer(
    name="cloudsched",
    help="Choose and tune schedulers for cloud services by analysis and simulation.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich's help renderer costs every --help 0.08 s
)


def _show_version(value: bool) -> None:
    if value:
        from cloudsched import __version__

        sys.stdout.write(f"cloudsched {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _options(
    *,
    version: Annotated[
        bool,
        opt("--version", help="Print the version and exit.", is_eager=True, callback=_show_version),
    ] = False,
    max_memory: Annotated[
        str | None,
        opt(
            "--max-memory",
            help="Refuse work whose memory estimate exceeds this (8G, 512M; "
            "default: 80% of the available memory, or CLOUDSCHED_MAX_MEMORY).",
        ),
    ] = None,
) -> None:
    """Choose and tune schedulers for cloud services by analysis and simulation."""
    if max_memory is not None:
        from cloudsched.resources import parse_memory

        os.environ["CLOUDSCHED_MAX_MEMORY"] = str(parse_memory(max_memory, "--max-memory"))


for _group in (
    theory,
    dispatch,
    policies,
    compare,
    tune,
    advise,
    stale,
    verdict,
    checklb,
    experiments,
    trace,
    place,
    lab,
    warmup,
):
    _group.register(app)


def _cli_name(error: ParameterError) -> str:
    """Name the parameter as the command line spells it (``--max-tasks``, ``POLICY``).

    A message that is not the standard ``name must be allowed (got value)`` is complete as
    it stands (a file and line, a plug-in's problem) and is shown unchanged; so is one that
    already names a flag or an argument.
    """
    standard = f"{error.name} must be {error.allowed} (got {error.value!r}){error.hint}"
    if str(error) != standard or error.name.startswith("-") or error.name.isupper():
        return str(error)
    name = "POLICY" if error.name == "policy" else "--" + error.name.replace("_", "-")
    return str(ParameterError(name, error.value, error.allowed))


#: Commands that start no process, server or thread that outlives them: the console script
#: ends them without the interpreter's teardown (0.15-0.3 s of freeing numba's and llvmlite's
#: state), once their output is written and flushed.
_QUICK_EXIT = frozenset({"predict", "fluid", "simulate", "trace", "compare"})


def _subcommand(args: Sequence[str]) -> str | None:
    """Return the command named in ``args`` (the first word that is not a global option)."""
    words = iter(args)
    for word in words:
        if word == "--max-memory":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _exit(code: int, quick: bool) -> None:
    if quick:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


#: Where a repeated option's error points a user who wanted several values.
_SEVERAL = {
    "--load": "use cloudsched compare for several loads",
    "--policy": "run one policy per command, or a sweep for several",
}


def _reject_repeats(root: Any, args: Sequence[str]) -> None:
    """Refuse an option given twice unless it is repeatable (never keep just the last).

    Options that take several values say so in their help ("repeatable"); every other one
    given twice is an error naming it, in every command.
    """
    command, words = root, list(args)
    for i, word in enumerate(words):
        sub = getattr(command, "commands", {}).get(word)
        if sub is not None:
            command, start = sub, i + 1
            if not hasattr(sub, "commands"):
                break
    else:
        return
    rest = words[start:]
    if "--" in rest:
        rest = rest[: rest.index("--")]
    for param in getattr(command, "params", []):
        if (
            not getattr(param, "opts", None)
            or getattr(param, "multiple", False)
            or param.param_type_name != "option"
        ):
            continue
        names = [*param.opts, *getattr(param, "secondary_opts", [])]
        at = [
            i for i, w in enumerate(rest) if w in names or any(w.startswith(n + "=") for n in names)
        ]
        if len(at) > 1:
            name = param.opts[0]
            values = [
                rest[i].partition("=")[2]
                if "=" in rest[i]
                else (rest[i + 1] if i + 1 < len(rest) and not param.is_flag else "")
                for i in at
            ]
            shown = ", ".join(v for v in values if v)
            hint = _SEVERAL.get(name, "this option takes one value")
            raise InputError(
                name, f"given {len(at)} times{f' ({shown})' if shown else ''}, allowed once: {hint}"
            )


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``cloudsched`` console script (``argv``: for tests, in-process)."""
    quick = argv is None and _subcommand(sys.argv[1:]) in _QUICK_EXIT
    command = typer.main.get_command(app)
    try:
        _reject_repeats(command, sys.argv[1:] if argv is None else argv)
        with interruptible():
            code = command.main(args=argv, prog_name="cloudsched", standalone_mode=False)
    except ParameterError as exc:
        sys.stderr.write(f"error: {one_line(_cli_name(exc))}\n")
        _exit(2, quick)
    except ExternalError as exc:
        sys.stderr.write(f"error: {one_line(str(exc))}\n")
        _exit(1, quick)
    except typer.TyperException as exc:  # usage errors (exit code 2) and other CLI errors
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group without its command
            sys.stdout.write(exc.format_message() + "\n")
            message = ""
        else:
            message = one_line(exc.format_message()).strip()
        if not message:  # no command: the help above lists them
            message = "a command is needed (the list is above; cloudsched COMMAND --help)"
        sys.stderr.write(f"error: {message}\n")
        _exit(exc.exit_code, quick)
    except (typer.Abort, KeyboardInterrupt):
        code = 130
    if code == 130 and stopped_by() == signal.SIGTERM:  # the conventional 128 + 15
        code = 143
        sys.stderr.write(
            "terminated: stopped by SIGTERM before finishing (no file is left half-written)\n"
        )
    elif code == 130:  # Typer turns Ctrl-C into a silent Exit(130)
        sys.stderr.write("interrupted: stopped before finishing (no file is left half-written)\n")
    if code in (130, 143) and argv is None and _solve_abandoned():
        quick = True  # a solver thread left in C++ aborts the interpreter's shutdown (SIGABRT)
    _exit(code if isinstance(code, int) else 0, quick)


def _solve_abandoned() -> bool:
    """Say whether a solve that Ctrl-C left behind is still running (``solve_quietly``)."""
    import threading

    from cloudsched._quiet import SOLVER_THREAD

    return any(t.is_alive() and t.name.startswith(SOLVER_THREAD) for t in threading.enumerate())
