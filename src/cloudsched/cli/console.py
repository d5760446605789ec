"""What the command line prints besides results: text made safe for a terminal, warnings.

Every message, warning and table a command prints goes through :func:`printable`, so that a
value read from a log, a file name or any other input cannot act on the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["description_column", "one_line", "print_warnings", "printable", "warn"]


def printable(text: str) -> str:
    r"""Return ``text`` with every character a terminal would act on written as an escape.

    Control characters (ESC, BEL, NUL, carriage return, ...) and the invisible format
    characters that reorder or hide text (bidirectional overrides, zero-width joiners)
    become ``\x1b``-style escapes, so that a value read from a log or a file name cannot
    move the cursor, set the terminal's title or hide text; newlines stay.
    """
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c == "\n" else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


def one_line(message: str) -> str:
    """Join a message's lines into one, made safe to print (see :func:`printable`)."""
    return printable(" ".join(p.strip() for p in message.strip().splitlines() if p.strip()))


def warn(message: str, label: str = "warning") -> None:
    """Print ``label: message`` on one line of standard error (made safe to print)."""
    sys.stderr.write(f"{label}: {one_line(message)}\n")


def print_warnings(caught: Iterable[Any], notes: Iterable[str]) -> None:
    """Print the warnings a run raised (``caught``), then the result's ``notes`` not among them.

    Each once, on one line of standard error, in the order they came.
    """
    shown = dict.fromkeys(one_line(str(w.message)) for w in caught)
    for note in [*shown, *(one_line(n) for n in notes if one_line(n) not in shown)]:
        warn(note)


def description_column() -> Any:
    """Return a progress bar's text column that stays on one line (cut with an ellipsis).

    A long description (the demo's phase and its runs) wrapped mid-phrase at 80 columns.
    """
    from rich.progress import TextColumn
    from rich.table import Column

    return TextColumn(
        "{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", max_width=46)
    )
