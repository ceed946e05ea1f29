"""One-line errors and exit codes: what a failed command prints, and ``--debug``."""

from __future__ import annotations

import argparse
import re
import sys
from typing import NoReturn

from ironic_fsm.exceptions import (
    IronicFSMError,
    NodeLocked,
    StepsNotAvailable,
)


class CLIError(Exception):
    """A failure of the command line itself (unreadable file, missing program): exit code 1."""


def _one_line(message: str) -> str:
    """An error is one line, whatever drivers and databases put in their messages.

    A ``password=`` parameter (of a connection string, say) is masked on
    the way: an error is no place for a secret.
    """
    message = re.sub(r"(?i)(password=)[^&\s]*", r"\1******", message)
    return " ".join(message.split()) or "(no message)"


def _error(message: str) -> None:
    print(f"error: {_one_line(message)}", file=sys.stderr)


def _report_error(exc: IronicFSMError) -> None:
    """Print a library error, saying when simply retrying may work, on one line."""
    hint = ""
    if isinstance(exc, StepsNotAvailable):
        retry_after = getattr(exc, "retry_after", -1)
        if isinstance(retry_after, (int, float)) and retry_after >= 0:
            hint = f"the steps are not known yet; retry in {retry_after:g} seconds"
        else:
            hint = "the steps are not known yet; retry later"
    elif isinstance(exc, NodeLocked):
        hint = "the node is busy; this error is retryable, try the command again later"
    elif exc.retryable:
        hint = "this error is retryable; try the command again later"
    message = str(exc) or type(exc).__name__
    _error(f"{message} ({hint})" if hint else message)


def _usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """Report bad usage the argparse way (usage line, exit code 2)."""
    parser: argparse.ArgumentParser = args.parser
    parser.error(message)


def _exit_code(code: object) -> int:
    """The int behind ``SystemExit.code`` (argparse uses 0 and 2)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _unexpected(exc: BaseException, debug: bool) -> int:
    """A bug or an unforeseen failure: one line, the traceback only with ``--debug``."""
    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    _error(
        f"unexpected {type(exc).__name__}: {exc}"
        + ("" if debug else " (run with --debug for the traceback)")
    )
    return 1
