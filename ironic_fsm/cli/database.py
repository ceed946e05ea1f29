"""Which database a command opens, and the conductor over it."""

from __future__ import annotations

import argparse
import importlib
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm.cli.errors import CLIError
from ironic_fsm.cli.settings import _read_settings, _Settings, _settings_conductor
from ironic_fsm.exceptions import (
    IronicFSMError,
    MissingDependency,
)

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor
    from ironic_fsm.stores import Store

#: Environment variable naming the database when ``--db`` is not given.
DB_ENV: Final = "IRONIC_FSM_DB"


# -- the database ---------------------------------------------------------------------


def default_db_path() -> Path:
    """Where nodes live by default: the user's data directory (XDG base directories).

    ``$XDG_DATA_HOME`` is honoured only when absolute, as the XDG
    specification asks; otherwise ``~/.local/share``.
    """
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "ironic_fsm" / "ironic_fsm.sqlite"


def _private_directory(path: Path) -> None:
    """Create ``path`` (and missing parents) readable by its owner only.

    The database holds BMC credentials. Our own directory is tightened
    even if it already existed with a looser mode; parents that existed
    are left alone (they are the user's).
    """
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by another command; checked below if it is ours
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)


def resolve_db_url(db: str | None) -> str:
    """The database URL for ``--db`` (or ``$IRONIC_FSM_DB``, or the default file).

    A bare path becomes an absolute ``sqlite:///`` URL, so that the same
    database is used whatever the working directory of later commands.
    Only the default location's directory is created (mode 0700): a typo
    in an explicit path should fail, not create directories.
    """
    value = db or os.environ.get(DB_ENV) or ""
    if not value:
        path = default_db_path()
        _private_directory(path.parent)
        return f"sqlite:///{path}"
    if "://" in value:
        return value
    return f"sqlite:///{os.path.abspath(os.path.expanduser(value))}"


def _redact_url(url: str) -> str:
    # A PostgreSQL URL may carry a password, in the authority or the query; never echo it.
    url = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1******@", url)
    return re.sub(r"(?i)(password=)[^&\s]*", r"\1******", url)


def _missing_driver(url: str, exc: ImportError) -> MissingDependency:
    """The store's database driver is absent: name the extra that brings it."""
    scheme = url.split("://", 1)[0].lower()
    extra = "postgres" if scheme.startswith("postgres") else "sql"
    return MissingDependency(
        f"the database {_redact_url(url)} needs a driver that is not installed "
        f"({exc.name or exc}): pip install 'ironic_fsm[{extra}]'",
        extra=extra,
    )


def load_store_factory(spec: str) -> Callable[[], Store]:
    """``package.module:factory`` (``--store``): the callable that builds the application's store.

    Every mistake is a :class:`CLIError` naming the spec and what is wrong,
    before anything is opened.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise CLIError(f"--store {spec!r}: expected MODULE:FACTORY, e.g. mypackage.stores:make")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CLIError(f"--store {spec!r}: cannot import {module_name}: {exc}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise CLIError(f"--store {spec!r}: {module_name} has no callable {attribute!r}")
    return factory  # type: ignore[no-any-return]


@contextmanager
def _open_store(url: str, *, factory: str | None = None, **store_args: Any) -> Iterator[Store]:
    """The store at ``url``, or the one ``factory`` builds (``--store``), closed afterwards.

    A missing database driver is named by its extra; a factory's product
    must be a :class:`~ironic_fsm.stores.Store` (its ``close``, if any, is called).
    """
    if factory is not None:
        built = load_store_factory(factory)()
        from ironic_fsm.stores import Store as StoreProtocol

        if not isinstance(built, StoreProtocol):
            raise CLIError(
                f"--store {factory!r} built {type(built).__name__}, which lacks the methods "
                "of ironic_fsm.stores.Store"
            )
        try:
            yield built
        finally:
            close = getattr(built, "close", None)
            if callable(close):
                close()
        return
    try:
        from ironic_fsm.stores import SQLStore  # the store's driver loads only here

        store = SQLStore(url, **store_args)
    except IronicFSMError:
        raise
    except ImportError as exc:
        raise _missing_driver(url, exc) from exc
    try:
        yield store
    finally:
        store.close()


def _build_conductor(store: Store, settings: _Settings | None, **conductor_args: Any) -> Conductor:
    """The settings' conductor, with ``conductor_args`` (executor, hand-off) given when built.

    The settings' runbooks and templates are checked (and their mistakes
    named) by the settings module's own conductor first, then given to
    this one as they are.
    """
    configured = _settings_conductor(store, settings)
    if not conductor_args:
        return configured
    from ironic_fsm.conductor import Conductor

    conductor = Conductor(store=store, config=configured.config, **conductor_args)
    if settings is not None:
        for name, (steps, traits) in settings.runbooks.items():
            conductor.add_runbook(name, steps, traits=traits)
        for name, steps in settings.deploy_templates.items():
            conductor.add_deploy_template(name, steps)
    return conductor


def _service_serves(conductor: Conductor, ident: str) -> bool:
    """Whether a live service serves the node's group and hardware type (it then runs the flow).

    A conductor that is alive in the registry is a running service: a CLI
    command never registers. Its hardware types are those it advertised.
    """
    from ironic_fsm.conductor.ring import node_group

    node = conductor.get_node(ident)
    group = node_group(node)
    return any(
        info.alive and info.conductor_group == group and node.driver in info.hardware_types
        for info in conductor.list_conductors()
    )


@contextmanager
def _open_conductor(
    args: argparse.Namespace, *, hand_off_for: str | None = None, **conductor_args: Any
) -> Iterator[Conductor]:
    """A conductor over the chosen database; the store is closed afterwards.

    The settings file is read first, so that a mistake in it never
    touches the database. With ``hand_off_for`` (a node), the conductor
    hands that node's work to a running service when one serves its
    hardware type, so that operators drive a fleet from the shell; without
    a service, it runs the work itself as before.
    """
    settings = _read_settings(getattr(args, "config", None))
    factory = getattr(args, "store", None)
    with _open_store(resolve_db_url(args.db), factory=factory) as store:
        conductor = _build_conductor(store, settings, **conductor_args)
        if hand_off_for is not None and _service_serves(conductor, hand_off_for):
            conductor = _build_conductor(store, settings, hand_off=True, **conductor_args)
        yield conductor
