"""``/v1/drivers`` and ``/v1/conductors``: what serves the nodes."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import Resource, link_pair, query_bool, require_version, send, version_of
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.views import stamp
from ironic_fsm.conductor import Conductor
from ironic_fsm.conductor.fleet import ConductorInfo
from ironic_fsm.exceptions import IronicFSMError
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.node import Node

__all__ = ["routes"]


def _hosts(conductor: Conductor, driver: str) -> list[str]:
    alive = [c for c in conductor.list_conductors() if c.alive and driver in c.hardware_types]
    return sorted({c.hostname for c in alive}) or [conductor.config.host]


def _drivers(conductor: Conductor) -> list[str]:
    """The types this conductor serves and those alive conductors report."""
    names = set(conductor.served_hardware_types())
    for info in conductor.list_conductors():
        if info.alive:
            names.update(info.hardware_types)
    return sorted(names)


#: The versions that show each kind's ``default_*`` and ``enabled_*`` on drivers (1.30 the rest).
_KIND_VERSIONS: Final = {
    "storage": (1, 33),
    "rescue": (1, 38),
    "bios": (1, 40),
    "firmware": (1, 86),
}


class Drivers(Resource):
    """``GET /v1/drivers[/{name}]``: the hardware types, all ``dynamic`` as in Ironic.

    In detail (``?detail=true``, and always for one driver) from 1.30: each
    interface kind's default and enabled implementations, as this
    conductor's configuration makes them.
    """

    def _view(self, name: str, req: falcon.Request, detail: bool) -> dict[str, Any]:
        base = req.prefix
        out: dict[str, Any] = {
            "name": name,
            "hosts": _hosts(self._conductor, name),
            "type": "dynamic",
            "links": link_pair(base, "drivers", name),
            "properties": link_pair(base, f"drivers/{name}", "properties"),
        }
        version = version_of(req)
        if detail and version >= (1, 30):
            out.update(self._interfaces(name, version))
        return out

    def _interfaces(self, name: str, version: tuple[int, int]) -> dict[str, Any]:
        try:
            defaults = self._conductor.default_interfaces(name)
            enabled = self._conductor.enabled_interfaces(name)
        except IronicFSMError:  # a type another conductor serves, or one that cannot load here
            defaults, enabled = {}, {}
        out: dict[str, Any] = {}
        for kind in sorted(INTERFACE_KINDS):
            if version >= _KIND_VERSIONS.get(kind, (1, 30)):
                out[f"default_{kind}_interface"] = defaults.get(kind)
                out[f"enabled_{kind}_interfaces"] = enabled.get(kind, [])
        return out

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        kind = req.get_param("type")
        detail = bool(query_bool(req, "detail"))
        names = [] if kind == "classic" else _drivers(self._conductor)
        send(resp, {"drivers": [self._view(name, req, detail) for name in names]})

    def on_get_item(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        self._known(name)
        send(resp, self._view(name, req, True))

    def on_get_properties(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        """The ``driver_info`` keys the driver's default interfaces read, with descriptions."""
        self._known(name)
        driver = self._conductor.hardware_type_for(Node(driver=name))
        properties: dict[str, str] = {}
        for _, iface in driver.interfaces():
            properties.update(iface.get_properties())
        send(resp, dict(sorted(properties.items())))

    def _known(self, name: str) -> None:
        if name not in _drivers(self._conductor):
            raise ApiError(
                404, f"Could not find the following driver(s) or hardware type(s): {name}."
            )


def _conductor_view(info: ConductorInfo, base: str, detail: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "hostname": info.hostname,
        "conductor_group": info.conductor_group,
        "alive": info.alive,
        "links": link_pair(base, "conductors", info.hostname),
    }
    if detail:
        out.update(
            drivers=list(info.hardware_types),
            created_at=stamp(info.updated_at),
            updated_at=stamp(info.updated_at),
        )
    return out


class Conductors(Resource):
    """``GET /v1/conductors[/{hostname}]`` (1.49)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, (1, 49), "conductors", status=404)
        detail = bool(query_bool(req, "detail"))
        found = self._conductor.list_conductors()
        send(resp, {"conductors": [_conductor_view(c, req.prefix, detail) for c in found]})

    def on_get_item(self, req: falcon.Request, resp: falcon.Response, hostname: str) -> None:
        require_version(req, (1, 49), "conductors", status=404)
        for info in self._conductor.list_conductors():
            if info.hostname == hostname:
                send(resp, _conductor_view(info, req.prefix, True))
                return
        raise ApiError(404, f"Conductor {hostname} could not be found.")


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    drivers, conductors = Drivers(conductor), Conductors(conductor)
    return [
        ("/v1/drivers", drivers, {}),
        ("/v1/drivers/{name}", drivers, {"suffix": "item"}),
        ("/v1/drivers/{name}/properties", drivers, {"suffix": "properties"}),
        ("/v1/conductors", conductors, {}),
        ("/v1/conductors/{hostname}", conductors, {"suffix": "item"}),
    ]
