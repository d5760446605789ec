"""The command reference (``docs/reference/cli.md``), generated from the commands themselves.

``python -m cloudsched.cli.reference > docs/reference/cli.md`` rewrites it; a test checks
that the file in the repository is what this module renders, so it cannot drift from the
options the commands take.
"""

from __future__ import annotations

from typing import Any

__all__ = ["render"]


def _default(param: Any) -> str:
    if getattr(param, "is_flag", False) and getattr(param, "secondary_opts", None):
        return f"`{param.opts[0] if param.default else param.secondary_opts[0]}`"
    value = param.default
    if value is None or callable(value) or param.required:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(f"`{v}`" for v in value) if value else ""
    return f"`{value}`"


def _options(cmd: Any) -> list[str]:
    rows = []
    for p in cmd.params:
        if p.name == "help" or getattr(p, "hidden", False):
            continue
        if p.param_type_name == "argument":
            name = f"`{p.name.upper()}`"
        else:
            name = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
        text = " ".join((getattr(p, "help", None) or "").split()).replace("|", "\\|")
        rows.append(f"| {name} | {text} | {_default(p)} |")
    if not rows:
        return []
    return ["| option | what | default |", "|---|---|---|", *rows, ""]


def _walk(cmd: Any, path: list[str], out: list[str]) -> None:
    if hasattr(cmd, "commands"):  # a group (Typer vendors its own click)
        for name in sorted(cmd.commands):
            _walk(cmd.commands[name], [*path, name], out)
        return
    title = " ".join(path)
    doc = " ".join((cmd.help or "").split("\n\n")[0].split())
    out += [f"## `cloudsched {title}`", "", doc, ""]
    out += _options(cmd)


def render() -> str:
    """Return the Markdown reference of every command, in name order."""
    import typer

    from cloudsched.cli import app

    root = typer.main.get_command(app)
    out = [
        "# Command reference",
        "",
        "Every `cloudsched` command and its options, generated from the commands "
        "(`python -m cloudsched.cli.reference > docs/reference/cli.md`; a test keeps it "
        "current). `cloudsched COMMAND --help` prints the same.",
        "",
    ]
    _walk(root, [], out)
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":  # pragma: no cover - the command line of the generator
    import sys

    sys.stdout.write(render())
