"""Vendor pass-through: methods a vendor interface offers over the API, beside its steps.

A vendor interface declares them with :func:`passthru` (called on one node,
``/v1/nodes/{id}/vendor_passthru``) or :func:`driver_passthru` (called on
the hardware type, ``/v1/drivers/{name}/vendor_passthru``), as Ironic's
driver authors do. The declaration is checked when the class body runs,
and :func:`node_methods` / :func:`driver_methods` find an interface's
methods once per class.

A node method is called as ``method(task, **args)``, a driver method as
``method(**args)``; either also gets ``http_method`` if its signature names
it. What it returns is the answer's body (JSON, or raw bytes when
``attach``); an asynchronous one answers ``202`` at once and runs in the
background.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs

from ironic_fsm.exceptions import InvalidParameterValue

__all__ = [
    "HTTP_METHODS",
    "PassthruMethod",
    "bind_arguments",
    "driver_methods",
    "driver_passthru",
    "node_methods",
    "passthru",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The HTTP methods a pass-through method may answer.
HTTP_METHODS: Final = ("GET", "POST", "PUT", "PATCH", "DELETE")

_NODE_ATTR: Final = "_ifsm_passthru"
_DRIVER_ATTR: Final = "_ifsm_driver_passthru"


@attrs.frozen
class PassthruMethod:
    """One declared pass-through method: its name and how it is called."""

    name: str
    http_methods: tuple[str, ...]
    async_call: bool
    description: str
    attach: bool
    #: Node methods only: whether the node is reserved while it runs (else ``None``).
    require_exclusive_lock: bool | None

    def metadata(self) -> dict[str, Any]:
        """What ``/vendor_passthru/methods`` lists for it, in Ironic's keys."""
        shown: dict[str, Any] = {
            "http_methods": list(self.http_methods),
            "async": self.async_call,
            "description": self.description,
            "attach": self.attach,
        }
        if self.require_exclusive_lock is not None:
            shown["require_exclusive_lock"] = self.require_exclusive_lock
        return shown


def _declare(
    attr: str,
    http_methods: list[str] | tuple[str, ...],
    method: str | None,
    async_call: bool,
    description: str | None,
    attach: bool,
    require_exclusive_lock: bool | None,
) -> Callable[[F], F]:
    wanted = (
        [str(m).upper() for m in http_methods] if isinstance(http_methods, list | tuple) else []
    )
    unknown = sorted(set(wanted) - set(HTTP_METHODS))
    if not wanted or unknown:
        raise InvalidParameterValue(
            f"passthru needs a non-empty list of HTTP methods from {', '.join(HTTP_METHODS)}, "
            f"got {http_methods!r}"
        )
    for flag, value in (("async_call", async_call), ("attach", attach)):
        if type(value) is not bool:
            raise InvalidParameterValue(f"passthru's {flag} must be True or False, got {value!r}")

    def declare(func: F) -> F:
        name = method or func.__name__
        setattr(func, attr, PassthruMethod(
            name=name, http_methods=tuple(dict.fromkeys(wanted)), async_call=async_call,
            description=description or "", attach=attach,
            require_exclusive_lock=require_exclusive_lock,
        ))  # fmt: skip
        return func

    return declare


def passthru(
    http_methods: list[str] | tuple[str, ...],
    method: str | None = None,
    async_call: bool = True,
    description: str | None = None,
    attach: bool = False,
    require_exclusive_lock: bool = True,
) -> Callable[[F], F]:
    """Declare a node pass-through method (Ironic's ``@passthru``), named ``method`` or its own.

    ``require_exclusive_lock``: reserve the node while it runs (the default).

    Raises:
        InvalidParameterValue: a malformed declaration (at class definition).
    """
    return _declare(_NODE_ATTR, http_methods, method, async_call, description, attach,
                    bool(require_exclusive_lock))  # fmt: skip


def driver_passthru(
    http_methods: list[str] | tuple[str, ...],
    method: str | None = None,
    async_call: bool = True,
    description: str | None = None,
    attach: bool = False,
) -> Callable[[F], F]:
    """Declare a driver pass-through method (Ironic's ``@driver_passthru``): no node."""
    return _declare(_DRIVER_ATTR, http_methods, method, async_call, description, attach, None)


#: Each class's declared methods, by (class, kind of declaration): found once per class.
_FOUND: dict[tuple[type, str], Mapping[str, tuple[str, PassthruMethod]]] = {}


def _declared(cls: type, attr: str) -> Mapping[str, tuple[str, PassthruMethod]]:
    found = _FOUND.get((cls, attr))
    if found is None:
        found = {
            info.name: (attribute, info)
            for attribute, value in inspect.getmembers(cls, callable)
            if isinstance(info := getattr(value, attr, None), PassthruMethod)
        }
        _FOUND[cls, attr] = found
    return found


def node_methods(iface: Any) -> dict[str, tuple[Callable[..., Any], PassthruMethod]]:
    """The interface's node pass-through methods by name: bound method and declaration."""
    return _bound(iface, _NODE_ATTR)


def driver_methods(iface: Any) -> dict[str, tuple[Callable[..., Any], PassthruMethod]]:
    """The interface's driver pass-through methods by name: bound method and declaration."""
    return _bound(iface, _DRIVER_ATTR)


def _bound(iface: Any, attr: str) -> dict[str, tuple[Callable[..., Any], PassthruMethod]]:
    declared = _declared(type(iface), attr)
    return {name: (getattr(iface, attribute), info) for name, (attribute, info) in declared.items()}


def bind_arguments(
    func: Callable[..., Any], name: str, args: Mapping[str, Any], http_method: str, *lead: Any
) -> dict[str, Any]:
    """``args`` as ``func``'s keyword arguments (``http_method`` added if it takes it).

    Raises:
        InvalidParameterValue: an argument it does not take, or one it needs that is missing.
    """
    signature = inspect.signature(func)
    params = signature.parameters
    kwargs = dict(args)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    if "http_method" in params or takes_any:
        kwargs["http_method"] = http_method
    try:
        signature.bind(*lead, **kwargs)
    except TypeError:
        unexpected = sorted(k for k in args if k not in params and not takes_any)
        missing = sorted(
            p.name for p in list(params.values())[len(lead):]
            if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.name not in kwargs
        )  # fmt: skip
        problems = [f"unexpected argument(s): {', '.join(unexpected)}"] if unexpected else []
        problems += [f"missing required argument(s): {', '.join(missing)}"] if missing else []
        raise InvalidParameterValue(
            f"Vendor method {name}: {'; '.join(problems) or 'arguments do not fit'}"
        ) from None
    return kwargs
