"""``GET /v1/lookup``, ``POST /v1/heartbeat/{node}`` (1.22) and ``POST /v1/continue_inspection``
(1.84, or 1.1 as ironic-inspector's stand-in): the ramdisk agent's calls.

All are public (``auth._PUBLIC``, as Ironic's ``acl_public_routes``): a
ramdisk booted on a machine holds no API credentials. What guards them is
the agent token: the lookup gives it out once, to the first agent that
finds a node expecting one, and every heartbeat must carry it. A lookup
reveals only a node that expects an agent, and only what the agent needs.
An inventory is taken, as Ironic takes it, only for a node waiting in
``inspect wait`` with one of its MAC addresses; it carries no token (IPA
posts it before its lookup).

The version an agent speaks decides what it may send: ``agent_version``
from 1.36, the token from 1.62, ``agent_verify_ca`` from 1.68, and
``agent_status`` from 1.72, as Ironic gates them. The checks themselves
are the conductor's (:mod:`ironic_fsm.conductor.ramdisk`), so the library
and the API refuse the same heartbeats with the same texts.
"""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import Resource, read_json, send, version_of
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.views import node_view
from ironic_fsm.conductor import Conductor
from ironic_fsm.conductor.ramdisk import AgentLookup
from ironic_fsm.exceptions import NodeNotFound
from ironic_fsm.masking import mask_secrets

__all__ = ["routes"]

_RAMDISK: Final = (1, 22)
_AGENT_VERSION: Final = (1, 36)
_AGENT_TOKEN: Final = (1, 62)
_VERIFY_CA: Final = (1, 68)
_STATUS: Final = (1, 72)
_BASE: Final = (1, 1)
_CONTINUE_INSPECTION: Final = (1, 84)
#: What an agent may report of itself from 1.72 (the anaconda deploy's ramdisk does).
_AGENT_STATES: Final = ("start", "end", "error")
#: The node's fields a lookup shows (Ironic's), beside ``uuid`` and links.
_LOOKUP_FIELDS: Final = ("uuid", "properties", "instance_info", "driver_internal_info")
#: Ironic's answer to a lookup that found nothing, or a node not expecting an agent.
_NOT_FOUND: Final = "Resource could not be found."
_FIELDS: Final = frozenset(
    {"callback_url", "agent_version", "agent_token", "agent_verify_ca", "agent_status",
     "agent_status_message"}
)  # fmt: skip


def _ramdisk_version(req: falcon.Request) -> None:
    """Below 1.22 these endpoints do not exist: 404, as Ironic answers."""
    if version_of(req) < _RAMDISK:
        raise ApiError(404, _NOT_FOUND)


class Lookup(Resource):
    """``GET /v1/lookup?addresses=MAC[,MAC][&node_uuid=U]``: the agent's node and its config."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _ramdisk_version(req)
        version = version_of(req)
        raw = req.get_param("addresses") or ""
        addresses = [part for part in raw.split(",") if part.strip()]
        try:
            found = self._conductor.agent_lookup(
                addresses, req.get_param("node_uuid"), with_token=version >= _AGENT_TOKEN
            )
        except NodeNotFound:
            raise ApiError(404, _NOT_FOUND) from None
        send(resp, _lookup_answer(req, found, self._conductor.config.ramdisk_heartbeat_timeout))


def _lookup_answer(
    req: falcon.Request, found: AgentLookup, heartbeat_timeout: float
) -> dict[str, Any]:
    """A lookup's answer: the node as the agent needs it, and its configuration."""
    view = node_view(found.node, version_of(req), req.prefix, fields=_LOOKUP_FIELDS, links=False)
    view["driver_internal_info"] = mask_secrets(found.node.driver_internal_info)
    view["links"] = [
        {"href": f"{req.prefix}/v1/nodes/{found.node.uuid}", "rel": "self"},
        {"href": f"{req.prefix}/nodes/{found.node.uuid}", "rel": "bookmark"},
    ]
    return {"node": view, "config": _config(found.token, heartbeat_timeout)}


def _config(token: str, heartbeat_timeout: float) -> dict[str, Any]:
    """What the agent configures itself with (the keys IPA 13 reads; the rest its defaults)."""
    return {
        "heartbeat_timeout": heartbeat_timeout,
        "agent_token": token,
        "agent_token_required": True,
        "agent_md5_checksum_enable": False,
        "disable_deep_image_inspection": False,
        "permitted_image_formats": ["raw", "gpt", "qcow2", "iso"],
        # The conductor knows the node's BMC already: the agent need not probe for it.
        "agent_skip_bmc_detect": True,
        "enable_bios_bootloader_install": False,
    }


class Heartbeat(Resource):
    """``POST /v1/heartbeat/{node}``: an agent is up at ``callback_url`` (202, empty body)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        _ramdisk_version(req)
        body = read_json(req)
        if not isinstance(body, dict):
            raise ApiError(400, "The heartbeat body must be a JSON object")
        unknown = sorted(set(body) - _FIELDS)
        if unknown:
            raise ApiError(400, f"Unknown heartbeat field(s): {', '.join(unknown)}")
        self._check_version(req, body)
        for name, value in body.items():
            if value is not None and not isinstance(value, str):
                raise ApiError(400, f"Heartbeat field {name} must be a string")
        if "callback_url" not in body:
            raise ApiError(400, "Missing mandatory parameter: callback_url")
        self._conductor.agent_heartbeat(
            ident,
            body["callback_url"],
            agent_token=body.get("agent_token"),
            agent_version=body.get("agent_version"),
            agent_verify_ca=body.get("agent_verify_ca"),
        )
        resp.status = 202

    @staticmethod
    def _check_version(req: falcon.Request, body: dict[str, Any]) -> None:
        """Fields an agent may send only from the version that brought them (Ironic's texts)."""
        version = version_of(req)
        if body.get("agent_version") and version < _AGENT_VERSION:
            raise ApiError(400, 'Field "agent_version" not recognised')
        status = body.get("agent_status")
        if (status or body.get("agent_status_message")) and version < _STATUS:
            raise ApiError(400, 'Fields "agent_status" and "agent_status_message" not recognised.')
        if body.get("agent_verify_ca") is not None and version < _VERIFY_CA:
            raise ApiError(400, 'Field "agent_verify_ca" not recognised in this version')
        if status is not None and status not in _AGENT_STATES:
            raise ApiError(
                400, f"Agent status is invalid. Valid states are {','.join(_AGENT_STATES)}."
            )
        if body.get("agent_token") is not None and version < _AGENT_TOKEN:
            raise ApiError(400, 'Field "agent_token" not recognised in this version')


class ContinueInspection(Resource):
    """``POST /v1/continue_inspection[?node_uuid=U]``: the agent's inventory (202).

    IPA posts it before its lookup, with no version header: the answer is
    then ``{"uuid": ...}`` (what ironic-inspector answered, which version
    1.1 stands in for). From 1.84 the answer is a lookup's, with the token
    (given out once, as a lookup gives it). Only a node waiting in ``inspect
    wait`` is found; any other answer is the lookup's 404.
    """

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        version = version_of(req)
        if version != _BASE and version < _CONTINUE_INSPECTION:
            raise ApiError(404, "API version 1.84 or newer is required")
        node_uuid = req.get_param("node_uuid")
        if node_uuid is not None and version < _CONTINUE_INSPECTION:
            raise ApiError(404, "API version 1.84 or newer is required")
        body = read_json(req)
        if not isinstance(body, dict) or not isinstance(body.get("inventory"), dict):
            raise ApiError(400, "The body must be a JSON object with an inventory object")
        plugin_data = {key: value for key, value in body.items() if key != "inventory"}
        new = version >= _CONTINUE_INSPECTION
        try:
            found = self._conductor.agent_continue_inspection(
                body["inventory"], plugin_data, node_uuid, with_token=new
            )
        except NodeNotFound:
            raise ApiError(404, _NOT_FOUND) from None
        if not new:
            send(resp, {"uuid": found.node.uuid}, 202)
            return
        timeout = self._conductor.config.ramdisk_heartbeat_timeout
        send(resp, _lookup_answer(req, found, timeout), 202)


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return [
        ("/v1/lookup", Lookup(conductor), {}),
        ("/v1/heartbeat/{ident}", Heartbeat(conductor), {}),
        ("/v1/continue_inspection", ContinueInspection(conductor), {}),
    ]
