"""Vendor pass-through calls: a node's vendor interface, or a hardware type's default one.

The methods are what the vendor interface declares with
:func:`ironic_fsm.passthru.passthru` (on a node) and
:func:`~ironic_fsm.passthru.driver_passthru` (on a hardware type, through
its default vendor interface); ``no-vendor`` declares none, so every call
to it is refused as an unknown method, as Ironic's is.

A node method that wants the node exclusively (the default) runs with it
reserved: a node another conductor holds answers :class:`NodeLocked`. An
asynchronous one is checked (method, HTTP method, arguments) before the
answer, then runs in the executor with the reservation passed along; its
failure is logged and left in the node's ``last_error``, as nobody waits
for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ironic_fsm.conductor.common import check_ident, driver_error, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.jobs import Job
from ironic_fsm.conductor.launcher import Launcher
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.passthru import (
    HTTP_METHODS,
    PassthruMethod,
    bind_arguments,
    driver_methods,
    node_methods,
)

__all__ = ["Passthru", "PassthruResult"]

LOG = logging.getLogger("ironic_fsm.conductor")

Methods = dict[str, tuple[Callable[..., Any], PassthruMethod]]


@attrs.frozen
class PassthruResult:
    """A pass-through call's outcome: what it returned (``None`` when it runs on), and how."""

    value: Any
    async_call: bool
    attach: bool


class Passthru:
    """List and call vendor pass-through methods of a node or a hardware type."""

    def __init__(self, ctx: Context, reservations: Reservations, launcher: Launcher) -> None:
        self._ctx = ctx
        self._reservations = reservations
        self._launcher = launcher

    # -- a node's ----------------------------------------------------------------------------

    def node_methods(self, ident: str) -> dict[str, dict[str, Any]]:
        node = self._ctx.caps.store.get(check_ident(ident))
        vendor = self._ctx.registry.driver_for(node).vendor
        return {name: info.metadata() for name, (_, info) in node_methods(vendor).items()}

    def call_node(
        self, ident: str, method: str, http_method: str, args: Mapping[str, Any]
    ) -> PassthruResult:
        ident = check_ident(ident)
        node = self._ctx.caps.store.get(ident)
        _, info = _find(node_methods(self._ctx.registry.driver_for(node).vendor), method,
                        http_method)  # fmt: skip
        if not info.require_exclusive_lock:  # run here and now, with nothing reserved
            task = self._ctx.task_for(node)
            func, _ = node_methods(task.driver.vendor)[method]
            kwargs = bind_arguments(func, method, args, http_method.upper(), task)
            value = _run(func, method, task, kwargs)
            return PassthruResult(None if info.async_call else value, info.async_call, info.attach)
        with self._reservations.reserved(ident, checked=True) as job:
            func, info = _find(node_methods(job.task.driver.vendor), method, http_method)
            kwargs = bind_arguments(func, method, args, http_method.upper(), job.task)
            if not info.async_call:
                value = _run(func, method, job.task, kwargs)
                return PassthruResult(value, False, info.attach)
            self._launcher.spawn(job, lambda worker: _run_unwatched(worker, method, kwargs))
        return PassthruResult(None, True, info.attach)

    # -- a hardware type's -----------------------------------------------------------------

    def driver_methods(self, driver: str) -> dict[str, dict[str, Any]]:
        return {name: info.metadata() for name, (_, info) in self._driver_vendor(driver).items()}

    def call_driver(
        self, driver: str, method: str, http_method: str, args: Mapping[str, Any]
    ) -> PassthruResult:
        func, info = _find(self._driver_vendor(driver), method, http_method)
        kwargs = bind_arguments(func, method, args, http_method.upper())
        executor = self._launcher.executor
        if info.async_call and executor is not None:
            executor.submit(_run_driver_unwatched, func, method, driver, kwargs)
            return PassthruResult(None, True, info.attach)
        value = _run(func, method, None, kwargs)
        return PassthruResult(None if info.async_call else value, info.async_call, info.attach)

    def _driver_vendor(self, driver: str) -> Methods:
        registry = self._ctx.registry
        chosen = dict(zip(INTERFACE_KINDS, registry.defaults(driver), strict=True))
        vendor = registry.get(driver).select({"vendor": chosen["vendor"]}).vendor
        return driver_methods(vendor)


def _find(
    methods: Methods, method: str, http_method: str
) -> tuple[Callable[..., Any], PassthruMethod]:
    found = methods.get(method) if isinstance(method, str) else None
    if found is None:
        raise InvalidParameterValue(f"No handler for method {shown(method)}")
    verb = http_method.upper() if isinstance(http_method, str) else http_method
    if verb not in found[1].http_methods:
        raise InvalidParameterValue(
            f"The method {method} does not support HTTP {shown(verb)}"
            + (f" (it takes {', '.join(found[1].http_methods)})" if verb in HTTP_METHODS else "")
        )
    return found


def _run(func: Callable[..., Any], method: str, task: Any, kwargs: dict[str, Any]) -> Any:
    """Call it; an error that is not ours becomes a DriverError, with no secret in its text."""
    lead = () if task is None else (task,)
    try:
        return func(*lead, **kwargs)
    except IronicFSMError:
        raise
    except Exception as exc:
        error = driver_error(exc, None if task is None else task.node, "vendor", method)
    raise error  # outside the handler: the original must not become its context


def _run_unwatched(job: Job, method: str, kwargs: dict[str, Any]) -> None:
    """The background run of an asynchronous node method: a failure goes to ``last_error``."""
    node = job.task.node
    func, _ = node_methods(job.task.driver.vendor)[method]
    try:
        _run(func, method, job.task, kwargs)
    except IronicFSMError as error:
        LOG.error("Node %s: vendor method %s failed: %s", node.uuid, method, error)
        node.last_error = f"Vendor method {method} failed: {error}"


def _run_driver_unwatched(
    func: Callable[..., Any], method: str, driver: str, kwargs: dict[str, Any]
) -> None:
    try:
        _run(func, method, None, kwargs)
    except IronicFSMError as error:
        LOG.error("Hardware type %s: vendor method %s failed: %s", driver, method, error)
