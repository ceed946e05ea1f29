"""``ironic-fsm``: the node lifecycle from a shell, shaped like ``openstack baremetal node``.

Operators who know Ironic's client should not have to learn new words, so
the commands, options, output formats (``-f table|json|yaml|value|csv``,
``-c COLUMN``) and column names mirror it. Nodes live in a SQLite file (or
any database URL ``SQLStore`` accepts), so that successive invocations see
the same nodes; the conductor runs synchronously, so every provisioning
command returns once the node has settled, and ``--wait`` covers nodes
that another process continues.

Exit codes, so that scripts can tell outcomes apart:

* ``0``: done;
* ``1``: the request was refused or failed (any
  :class:`~ironic_fsm.exceptions.IronicFSMError`, an unreadable file, a
  flow that ended in a failure state, a ``--wait`` that timed out, an
  unexpected error);
* ``2``: bad usage (argparse's convention), including options given to a
  verb that cannot use them;
* ``130``: interrupted.

Every error is one line on standard error; a traceback is printed only
with ``--debug``. The formatter libraries (prettytable, PyYAML) and the
store are imported only by the commands that need them.

The package keeps one concept per module: :mod:`~ironic_fsm.cli.parser`
(the argparse tables) hands each command to its module (``nodes``,
``verbs``, ``history``, ``conductors``, ``lifecycle``, ``apply``), which
reads its input with ``argtypes``, opens the store with ``database`` and
``settings``, and prints with ``output``; ``errors`` turns every failure
into one line and an exit code, here in :func:`main`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable

from ironic_fsm.cli.database import DB_ENV as DB_ENV
from ironic_fsm.cli.database import default_db_path, resolve_db_url
from ironic_fsm.cli.errors import CLIError, _error, _exit_code, _report_error, _unexpected
from ironic_fsm.cli.parser import PROG as PROG
from ironic_fsm.cli.parser import build_parser
from ironic_fsm.cli.settings import CONFIG_ENV as CONFIG_ENV
from ironic_fsm.cli.settings import configured_conductor as configured_conductor
from ironic_fsm.exceptions import IronicFSMError

__all__ = ["CLIError", "default_db_path", "main", "resolve_db_url"]


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit code (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing, so that a failure while building the parser obeys it too.
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    except SystemExit as exc:  # argparse: --help, --version, bad usage
        return _exit_code(exc.code)
    except IronicFSMError as exc:
        _report_error(exc)
        return 1
    except CLIError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:
        # A file or directory the command needed: name it, without a traceback.
        where = f": {exc.filename}" if exc.filename else ""
        _error(f"{exc.strerror or exc}{where}")
        return 1
    except Exception as exc:
        return _unexpected(exc, debug)
