"""Values from input never reach the terminal raw: control bytes are escaped, markup is text.

A log or a file name can hold ESC, BEL or NUL; printed raw, ``ESC ] 0 ; text BEL`` sets the
terminal's title and other sequences move the cursor or hide text.  And a value such as
``[/x]`` in a table cell was read by rich as markup: the command crashed.
"""

import subprocess
import sys

import pytest

from cloudsched.cli.common import render_table
from cloudsched.cli.console import one_line, printable

TITLE = "\x1b]0;PWNED\x07"  # sets the terminal's title


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (f"a{TITLE}b", "a\\x1b]0;PWNED\\x07b"),
        ("nul\x00here", "nul\\x00here"),
        ("carriage\rreturn", "carriage\\rreturn"),
        ("bidi \u202etxt.exe", "bidi \\u202etxt.exe"),  # right-to-left override
        ("two\nlines stay", "two\nlines stay"),
        ("plain ünïcode, µs and ─ boxes", "plain ünïcode, µs and ─ boxes"),
    ],
)
def test_printable_escapes_what_a_terminal_acts_on(raw, shown):
    assert printable(raw) == shown


def test_one_line_is_printable():
    assert one_line(f"bad value\n  {TITLE}") == "bad value \\x1b]0;PWNED\\x07"


def test_a_table_shows_log_values_as_text_not_markup():
    text = render_table({"upstream": ["[/x]", "[bold]b[/bold]", f"u{TITLE}"]}, "t")
    assert "[/x]" in text and "[bold]b[/bold]" in text
    assert "\x1b" not in text and "\x07" not in text and "u\\x1b]0;PWNED\\x07" in text


def test_an_error_naming_a_file_escapes_its_control_bytes(tmp_path):
    name = f"log{TITLE}.csv"
    proc = subprocess.run(
        [sys.executable, "-c", "from cloudsched.cli import main; main()", "trace", "stats", name],
        capture_output=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count(b"\n") == 1, proc.stderr
    assert b"\x1b" not in proc.stderr and b"\x07" not in proc.stderr, proc.stderr
    assert b"log\\x1b]0;PWNED\\x07.csv" in proc.stderr, proc.stderr


def test_a_warning_is_printed_escaped(capsys):
    from cloudsched.cli.console import print_warnings, warn

    warn(f"upstream {TITLE} skipped")
    print_warnings([], [f"note {TITLE}"])
    err = capsys.readouterr().err
    assert "\x1b" not in err and err.count("\\x1b]0;PWNED\\x07") == 2, err
