"""``agent`` inspection: the ramdisk agent reports the machine's inventory (Ironic's).

:meth:`AgentInspect.inspect_hardware` boots the ramdisk told where to post
(``ipa-inspection-callback-url``: ``{Config.api_url}/v1/continue_inspection``)
and the node waits in ``inspect wait``. The agent posts its inventory there
before it looks its node up; the conductor finds the node by the
inventory's MAC addresses and hands the inventory to
:meth:`AgentInspect.continue_inspection`, which sets ``cpus``,
``memory_mb``, ``cpu_arch`` and ``local_gb`` from it and powers the machine
off (ending the agent, its token wiped); the node is then ``manageable``
and the conductor keeps the inventory, makes the ports
:meth:`AgentInspect.ports_from` asks for (``Config.inspector_add_ports``)
and changes the node's ports as :meth:`AgentInspect.port_changes` says
(``inspector_keep_ports``, ``inspector_update_pxe_enabled``).
An inspection that never reports back fails after ``inspect_wait_timeout``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import attrs

from ironic_fsm import states
from ironic_fsm.agent import inventory as inventories
from ironic_fsm.drivers.agent import boot_ramdisk, power_action
from ironic_fsm.exceptions import AgentError, InvalidParameterValue
from ironic_fsm.interfaces import InspectInterface
from ironic_fsm.task import Task

__all__ = ["CALLBACK_PARAM", "AgentInspect"]

LOG = logging.getLogger(__name__)

#: The kernel parameter telling IPA where to post its inventory.
CALLBACK_PARAM: Final = "ipa-inspection-callback-url"


class AgentInspect(InspectInterface):
    """In-band inspection through the ramdisk agent (Ironic's ``agent`` inspect interface)."""

    def validate(self, task: Task) -> None:
        """Agents must know where to post: ``Config.api_url`` is needed."""
        self._callback_url(task)

    @staticmethod
    def _callback_url(task: Task) -> str:
        url = task.config.api_url
        if not url:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: agent inspection needs Config.api_url, where the "
                "ramdisk agent reaches this service to post the inventory",
                node=task.node.uuid,
            )
        base = url.rstrip("/")
        return f"{base if base.endswith('/v1') else base + '/v1'}/continue_inspection"

    def inspect_hardware(self, task: Task) -> str:
        """Boot the ramdisk, told where to post its inventory; wait for it."""
        params = {CALLBACK_PARAM: self._callback_url(task)}
        if not task.node.disable_power_off:
            power_action(task, states.POWER_OFF)
        task.driver.boot.prepare_ramdisk(task, params)
        boot_ramdisk(task)
        LOG.info("Node %s: the ramdisk boots to inspect it", task.node.uuid)
        return states.INSPECTWAIT

    def continue_inspection(
        self,
        task: Task,
        inventory: Mapping[str, Any],
        plugin_data: Mapping[str, Any] | None = None,
    ) -> str | None:
        """The properties set from the inventory; the machine powered off (the agent ends).

        An error the ramdisk reported (``plugin_data["error"]``) fails the
        inspection, as Ironic's ``ramdisk-error`` hook does.
        """
        node = task.node
        error = (plugin_data or {}).get("error")
        if error:
            raise AgentError(f"Ramdisk reported error: {error}", node=node.uuid)
        inventories.check_inventory(node.uuid, inventory)
        found = inventories.properties_from(node.uuid, inventory, plugin_data or {})
        node.properties.update(found)
        LOG.info("Node %s inspected: %s", node.uuid, found)
        self._shut_down(task)
        return None

    def ports_from(self, task: Task, inventory: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The inventory's interfaces that ``Config.inspector_add_ports`` asks ports for."""
        wanted = inventories.ports_wanted(inventory, task.config.inspector_add_ports)
        return [
            {"address": port.address, "pxe_enabled": port.pxe_enabled, "extra": dict(port.extra)}
            for port in wanted
        ]

    def port_changes(
        self, task: Task, inventory: Mapping[str, Any], ports: list[tuple[str, bool, Any]]
    ) -> list[dict[str, Any]]:
        """The node's ports brought in line with the inventory (``Config.inspector_keep_ports``
        and ``inspector_update_pxe_enabled``)."""
        config = task.config
        changes = inventories.port_changes(
            inventory, ports, add_ports=config.inspector_add_ports,
            keep_ports=config.inspector_keep_ports,
            update_pxe_enabled=config.inspector_update_pxe_enabled,
        )  # fmt: skip
        return [attrs.asdict(change) for change in changes]

    def abort(self, task: Task) -> None:
        """Stop waiting: the machine off (its agent ends), the ramdisk's boot undone."""
        self._shut_down(task)

    @staticmethod
    def _shut_down(task: Task) -> None:
        power_action(task, states.POWER_OFF)
        task.driver.boot.clean_up_ramdisk(task)
