"""``/v1/drivers``, ``/v1/conductors`` and ``/v1/deploy_templates``: what serves the nodes."""

from __future__ import annotations

import uuid
from typing import Any, Final

import falcon

from ironic_fsm.api import _glue
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
    names = set(_glue.served_drivers(conductor))
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


#: Deploy template UUIDs are derived from their names: the conductor keeps templates
#: by name only, and a client must see the same UUID on every call.
_TEMPLATE_NAMESPACE: Final = uuid.UUID("6c1f7f0e-0a51-4d5e-9a4a-2f7d3c1b8e10")
_READ_ONLY: Final = (
    "Deploy templates are read-only here: they come from the conductor's settings file"
)


class DeployTemplates:
    """``GET /v1/deploy_templates[/{ident}]`` (1.55), read-only."""

    def __init__(self, conductor: Conductor) -> None:
        self._conductor = conductor

    def _all(self) -> list[dict[str, Any]]:
        found = _glue.deploy_templates(self._conductor)
        return [
            {"uuid": str(uuid.uuid5(_TEMPLATE_NAMESPACE, name)), "name": name, "steps": steps,
             "extra": {}, "created_at": None, "updated_at": None}
            for name, steps in sorted(found.items())
        ]  # fmt: skip

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, (1, 55), "deploy_templates", status=404)
        detail = bool(query_bool(req, "detail"))
        items = []
        for template in self._all():
            shown = template if detail else {"uuid": template["uuid"], "name": template["name"]}
            items.append({**shown, "links": link_pair(req.prefix, "deploy_templates",
                                                       template["uuid"])})  # fmt: skip
        send(resp, {"deploy_templates": items})

    def on_get_item(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 55), "deploy_templates", status=404)
        for template in self._all():
            if ident in (template["uuid"], template["name"]):
                links = link_pair(req.prefix, "deploy_templates", template["uuid"])
                send(resp, {**template, "links": links})
                return
        raise ApiError(404, f"Deploy template {ident} could not be found.")

    def _refuse(self, req: falcon.Request, resp: falcon.Response, **_: str) -> None:
        raise ApiError(405, _READ_ONLY, headers={"Allow": "GET, HEAD"})

    on_post = _refuse
    on_patch_item = _refuse
    on_delete_item = _refuse


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    drivers, conductors = Drivers(conductor), Conductors(conductor)
    templates = DeployTemplates(conductor)
    return [
        ("/v1/deploy_templates", templates, {}),
        ("/v1/deploy_templates/{ident}", templates, {"suffix": "item"}),
        ("/v1/drivers", drivers, {}),
        ("/v1/drivers/{name}", drivers, {"suffix": "item"}),
        ("/v1/conductors", conductors, {}),
        ("/v1/conductors/{hostname}", conductors, {"suffix": "item"}),
    ]
