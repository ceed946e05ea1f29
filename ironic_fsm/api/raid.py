"""``PUT /v1/nodes/{id}/states/raid`` and ``GET /v1/drivers/{d}/raid/logical_disk_properties``
(1.12): a node's target RAID configuration, and what one may say."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import Resource, read_json, require_version, send
from ironic_fsm.api.errors import ApiError
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import DriverNotFound, UnsupportedDriverExtension

__all__ = ["routes"]

_SINCE: Final = (1, 12)


class TargetRaid(Resource):
    """``PUT .../states/raid``: 204 once kept; a RAID interface without RAID is a 404, as
    Ironic answers (RAID is an interface every driver may lack)."""

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, _SINCE, "RAID configuration")
        config = read_json(req)
        if not isinstance(config, dict):
            raise ApiError(400, "Invalid input: a target RAID configuration is a JSON object")
        try:
            self._conductor.set_target_raid_config(ident, config)
        except UnsupportedDriverExtension as error:
            raise ApiError(404, str(error)) from None
        resp.status = 204


class LogicalDiskProperties(Resource):
    """``GET /v1/drivers/{name}/raid/logical_disk_properties``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        require_version(req, _SINCE, "RAID logical disk properties")
        try:
            properties = self._conductor.raid_logical_disk_properties(name)
        except UnsupportedDriverExtension as error:
            raise ApiError(404, str(error)) from None
        except DriverNotFound:
            raise ApiError(
                404, f"Could not find the following driver(s) or hardware type(s): {name}."
            ) from None
        send(resp, properties)


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return [
        ("/v1/nodes/{ident}/states/raid", TargetRaid(conductor), {}),
        ("/v1/drivers/{name}/raid/logical_disk_properties", LogicalDiskProperties(conductor), {}),
    ]
