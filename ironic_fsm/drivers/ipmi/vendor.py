"""``ipmi`` vendor steps: BMC reset and raw IPMI commands."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final

from ironic_fsm.drivers.common import bmc_step, parse_bool
from ironic_fsm.drivers.ipmi.driver_info import IPMIInfo, parse_driver_info
from ironic_fsm.drivers.ipmi.session import (
    _check_reply,
    _Connection,
    _IPMIInterface,
    _pyghmi,
    _refused,
)
from ironic_fsm.exceptions import (
    BMCTimeout,
    BMCUnreachable,
    InvalidParameterValue,
)
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.passthru import passthru
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.node import Node

__all__ = ["IPMIVendor"]

LOG = logging.getLogger(__name__)

# After a BMC reset, give the BMC a moment to actually go down before polling
# it: a BMC that still answers right after accepting the reset is not "back".
_RESET_SETTLE: Final = 0.5

# How long to wait for the reply to a BMC reset (sent once, never resent: a
# BMC may well reset before it answers).
_RESET_REPLY_WAIT: Final = 1.0


def _as_bool(value: object, name: str, node: Node) -> bool:
    parsed = parse_bool(value)
    if parsed is None:
        raise InvalidParameterValue(
            f"Node {node.uuid}: {name} must be a Boolean, got {value!r}", node=node.uuid
        )
    return parsed


def _parse_raw_bytes(raw_bytes: object, node: Node) -> list[int]:
    """``'0x06 0x01'`` → ``[6, 1]``: netfn, command, then the data bytes."""
    problem = None
    values: list[int] = []
    if not isinstance(raw_bytes, str):
        problem = "must be a string of hex bytes"
    else:
        for token in raw_bytes.replace(",", " ").split():
            try:
                value = int(token, 16)
            except ValueError:
                problem = f"has a token that is not a hex byte: {token!r}"
                break
            if not 0 <= value <= 0xFF:
                problem = f"has a value out of byte range: {token!r}"
                break
            values.append(value)
        if problem is None and len(values) < 2:
            problem = "needs at least a network function and a command byte"
    if problem is not None:
        raise InvalidParameterValue(
            f"Node {node.uuid}: raw_bytes {problem} (e.g. '0x06 0x01'), got {raw_bytes!r}",
            node=node.uuid,
        )
    return values


_WARM_ARG: Final = {
    "warm": {
        "description": "Warm reset (the BMC keeps its configuration and the host is not "
        "disturbed) instead of a cold reset. Default: false (cold).",
        "required": False,
    }
}
_RAW_ARG: Final = {
    "raw_bytes": {
        "description": "Bytes to send as hex, network function first, then the command "
        "and its data, e.g. '0x06 0x01'.",
        "required": True,
    }
}


class IPMIVendor(_IPMIInterface, VendorInterface):
    """BMC reset and raw IPMI commands, as manual clean and service steps and as
    vendor pass-through methods (``openstack baremetal node passthru call``)."""

    @bmc_step("service", _WARM_ARG)
    @passthru(["POST"], description="Reset the BMC; 'warm' (Boolean, default false) for a warm "
              "reset instead of a cold one. It answers again before this ends.")  # fmt: skip
    def bmc_reset(self, task: Task, warm: bool = False) -> None:
        """Reset the BMC, then wait (``ipmi_reset_wait``) until it answers again.

        The reset is sent once (never resent: a second reset could hit the
        BMC while it restarts) and its reply awaited for up to a second.
        A non-zero completion code raises :class:`BMCRequestFailed` with
        ``code`` set (OpenIPMI, for one, refuses a warm reset with 0xC1).
        No reply at all counts as accepted, because a BMC may reset before
        it answers; the wait for the BMC to accept a login again then tells
        whether it came back.
        """
        node = task.node
        warm = _as_bool(warm, "warm", node)
        info = parse_driver_info(node)
        what = "warm reset" if warm else "cold reset"
        command = 3 if warm else 2  # Warm / Cold Reset (IPMI 2.0, 20.2 and 20.3)
        wait = min(_RESET_REPLY_WAIT, info.timeout)
        with _Connection(node, info) as bmc:
            reply = bmc.call(what, lambda c: c.ipmi_session.request_once(6, command, wait))
            code = int(reply.get("code") or 0) if reply is not None else 0
            if code:
                # A refusal: the BMC did not reset, so its sessions are still valid.
                text = _pyghmi().session.get_ipmi_error(reply) or f"completion code 0x{code:02X}"
                raise _refused(
                    node, info, f"the {what}", f"{text} (completion code 0x{code:02X})", code
                )
            bmc.drop("the BMC was reset")  # it forgets every session
        if reply is None:
            LOG.info(
                "Node %s: no reply from the BMC at %s within %g s of a %s; taken as accepted "
                "(a BMC may reset before it answers)",
                node.uuid, info.endpoint, wait, what,
            )  # fmt: skip
        else:
            LOG.info("Node %s: BMC at %s accepted a %s", node.uuid, info.endpoint, what)
        self._wait_for_bmc(node, info, what)
        LOG.info("Node %s: BMC at %s answers again after %s", node.uuid, info.endpoint, what)

    @staticmethod
    def _wait_for_bmc(node: Node, info: IPMIInfo, what: str) -> None:
        deadline = time.monotonic() + info.reset_wait
        time.sleep(min(_RESET_SETTLE, info.reset_wait))
        while True:
            left = deadline - time.monotonic()
            try:
                with _Connection(node, info, timeout=max(min(info.timeout, left), 0.1)) as bmc:
                    bmc.call("get device id", lambda c: c.raw_command(netfn=6, command=1))
                return
            except (BMCUnreachable, BMCTimeout) as error:
                if time.monotonic() >= deadline:
                    raise BMCTimeout(
                        f"Node {node.uuid}: the BMC at {info.endpoint} did not answer again "
                        f"within {info.reset_wait:g} s after a {what} (ipmi_reset_wait): {error}",
                        node=node.uuid,
                        address=info.endpoint,
                    ) from error
                time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))

    @bmc_step("service", _RAW_ARG)
    @passthru(["POST"], description="Send one raw IPMI command: 'raw_bytes', network function "
              "first, e.g. '0x06 0x01'; the reply lands in driver_internal_info's "
              "ipmi_raw_reply.")  # fmt: skip
    def send_raw(self, task: Task, raw_bytes: str) -> None:
        """Send one raw IPMI command; the reply lands in ``driver_internal_info``.

        Disallowed by default (``Config.disallow_clean_steps``): raw commands
        can do anything the BMC can, including locking the operator out.
        """
        node = task.node
        values = _parse_raw_bytes(raw_bytes, node)
        info = parse_driver_info(node)
        netfn, command, data = values[0], values[1], values[2:]
        what = f"raw command netfn 0x{netfn:02x} command 0x{command:02x}"
        with _Connection(node, info) as bmc:
            reply = bmc.call(what, lambda c: c.raw_command(netfn=netfn, command=command, data=data))
        _check_reply(node, info, what, reply)
        node.driver_internal_info["ipmi_raw_reply"] = {
            "netfn": reply.get("netfn"),
            "command": reply.get("command"),
            "code": reply.get("code"),
            "data": " ".join(f"0x{byte:02x}" for byte in bytes(reply.get("data") or b"")),
        }
        LOG.info("Node %s: %s sent to %s", node.uuid, what, info.endpoint)
