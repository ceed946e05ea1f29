"""``/v1/drivers`` and ``/v1/conductors``: what serves the nodes."""

from __future__ import annotations

from typing import Any

import falcon

from ironic_fsm.api.common import link_pair, query_bool, require_version, send
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.views import stamp
from ironic_fsm.conductor import Conductor
from ironic_fsm.conductor.fleet import ConductorInfo

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


class Drivers:
    """``GET /v1/drivers[/{name}]``: the hardware types, all ``dynamic`` as in Ironic."""

    def __init__(self, conductor: Conductor) -> None:
        self._conductor = conductor

    def _view(self, name: str, base: str) -> dict[str, Any]:
        return {
            "name": name,
            "hosts": _hosts(self._conductor, name),
            "type": "dynamic",
            "links": link_pair(base, "drivers", name),
            "properties": link_pair(base, f"drivers/{name}", "properties"),
        }

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        kind = req.get_param("type")
        names = [] if kind == "classic" else _drivers(self._conductor)
        send(resp, {"drivers": [self._view(name, req.prefix) for name in names]})

    def on_get_item(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        if name not in _drivers(self._conductor):
            raise ApiError(
                404, f"Could not find the following driver(s) or hardware type(s): {name}."
            )
        send(resp, self._view(name, req.prefix))


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


class Conductors:
    """``GET /v1/conductors[/{hostname}]`` (1.49)."""

    def __init__(self, conductor: Conductor) -> None:
        self._conductor = conductor

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
        ("/v1/conductors", conductors, {}),
        ("/v1/conductors/{hostname}", conductors, {"suffix": "item"}),
    ]
