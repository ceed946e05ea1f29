"""``redfish-virtual-media`` boot: the deploy or rescue ISO from virtual media, else the network."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm.drivers.common import secrets_of
from ironic_fsm.drivers.redfish.driver_info import _info, _RedfishValidation
from ironic_fsm.drivers.redfish.session import _bmc, _get_system, _refusal, _sushy, _value
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import BootInterface
from ironic_fsm.masking import scrub
from ironic_fsm.task import Task

__all__ = ["RedfishBoot", "RedfishHttpsBoot"]

LOG = logging.getLogger(__name__)


def _cd_devices(system: Any) -> list[Any]:
    """The BMC's virtual media devices that take CD/DVD images (the system's, else a manager's)."""
    errors = _sushy().exceptions
    absent = (errors.MissingAttributeError, errors.ResourceNotFoundError)

    def cds(owner: Any) -> list[Any]:
        try:
            devices = owner.virtual_media.get_members()
        except absent:
            return []
        return [d for d in devices if {_value(t) for t in d.media_types or []} & {"CD", "DVD"}]

    found = cds(system)
    if not found:
        try:
            managers = system.managers
        except absent:
            managers = []
        for manager in managers:
            found = cds(manager)
            if found:
                break
    return found


_VMEDIA_ACTIONS: Final = ("#VirtualMedia.InsertMedia", "#VirtualMedia.EjectMedia")


def _vmedia_lacks(device: Any) -> str | None:
    """What a virtual media slot lacks for inserting and ejecting; None when it has it.

    The schema gives every slot the two actions, but real BMCs may leave
    them out and take a PATCH of the slot instead (saying so in the
    ``Allow`` header of its GET), or offer neither. sushy needs, for each
    of insert and eject, the action or PATCH.
    """
    actions = (device.json or {}).get("Actions") or {}
    missing = [a.lstrip("#") for a in _VMEDIA_ACTIONS if not isinstance(actions.get(a), dict)]
    if not missing or device._allow_patch():  # sushy's own test of the Allow header
        return None
    return f"{device.path} has no {' or '.join(missing)} action and does not allow PATCH"


def _usable_cd_devices(system: Any) -> tuple[list[Any], list[str]]:
    """The CD/DVD slots the driver can insert into and eject from, and what the others lack."""
    usable: list[Any] = []
    problems: list[str] = []
    for device in _cd_devices(system):
        lacks = _vmedia_lacks(device)
        if lacks is None:
            usable.append(device)
        else:
            problems.append(lacks)
    return usable, problems


def _check_virtual_media(task: Task, key: str) -> None:
    """Refuse an ISO the BMC offers slots for but cannot insert (before anything is done).

    Without any CD/DVD slot the node boots from the network instead (as
    documented for the ISO keys); a slot that is there but lacks both the
    actions and PATCH would fail halfway through a deploy.
    """
    info = _info(task)
    if not getattr(info, key.removeprefix("redfish_")) or not isinstance(
        task.driver.boot, RedfishBoot
    ):
        return
    with _bmc(task, info, "list virtual media"):
        usable, problems = _usable_cd_devices(_get_system(info))
    if not usable and problems:
        raise InvalidParameterValue(
            scrub(
                f"Node {task.node.uuid}: {key} is set, but BMC {info.address} cannot insert "
                f"media into its virtual CD/DVD: {'; '.join(problems)}",
                secrets_of(info.password),
            ),
            node=task.node.uuid,
            keys=[key],
        )


class RedfishBoot(_RedfishValidation, BootInterface):
    """Boots the deploy ISO (``redfish_deploy_iso``) from virtual media, else the network.

    Without a deploy ISO the ramdisk methods do nothing: the node boots
    from the network (PXE), which the deploy interface selects.
    """

    def validate(self, task: Task) -> None:
        """driver_info, and with a deploy ISO, a virtual CD/DVD the BMC can really drive."""
        super().validate(task)
        _check_virtual_media(task, "redfish_deploy_iso")

    def prepare_ramdisk(self, task: Task, ramdisk_params: Mapping[str, Any]) -> None:
        info = _info(task)
        if info.deploy_iso:
            self.boot_iso(task, info.deploy_iso, "redfish_deploy_iso")

    def boot_iso(self, task: Task, url: str, key: str) -> None:
        """Insert the ISO at ``url`` as virtual media and boot from it once."""
        info = _info(task)
        with _bmc(task, info, "insert virtual media"):
            devices, problems = _usable_cd_devices(_get_system(info))
            if not devices:
                raise _refusal(
                    task,
                    info,
                    f"BMC {info.address} offers no usable virtual CD/DVD "
                    f"for {key}" + (f": {'; '.join(problems)}" if problems else ""),
                )
            device = devices[0]
            if device.inserted:
                device.eject_media()
            device.insert_media(url, inserted=True, write_protected=True)
        LOG.info(
            "Node %s: %s inserted as virtual media on BMC %s", task.node.uuid, key, info.address
        )
        task.driver.management.set_boot_device(task, "cdrom", persistent=False)

    def clean_up_ramdisk(self, task: Task) -> None:
        """Eject every inserted virtual CD/DVD (that the BMC lets the driver eject)."""
        info = _info(task)
        with _bmc(task, info, "eject virtual media"):
            for device in _usable_cd_devices(_get_system(info))[0]:
                if device.inserted:
                    device.eject_media()

    def prepare_instance(self, task: Task) -> None:
        """The instance boots from the local disk, persistently."""
        task.driver.management.set_boot_device(task, "disk", persistent=True)

    def supports_virtual_media(self, task: Task) -> bool:
        """Whether the BMC has a virtual CD/DVD it lets the driver insert into and eject from."""
        info = _info(task)
        with _bmc(task, info, "list virtual media"):
            return bool(_usable_cd_devices(_get_system(info))[0])


class RedfishHttpsBoot(RedfishBoot):
    """``redfish-https``: the node boots the ramdisk by UEFI HTTP(S) boot instead of a CD.

    The URL (``redfish_deploy_iso``) is recorded in
    ``driver_internal_info['redfish_https_boot_url']`` and the boot device
    set to ``uefi-http`` once; the instance then boots from the disk.
    """

    def validate(self, task: Task) -> None:
        """driver_info only: no virtual media is used."""
        _RedfishValidation.validate(self, task)

    def prepare_ramdisk(self, task: Task, ramdisk_params: Mapping[str, Any]) -> None:
        info = _info(task)
        if info.deploy_iso:
            task.node.driver_internal_info["redfish_https_boot_url"] = info.deploy_iso
            task.driver.management.set_boot_device(task, "uefi-http", persistent=False)

    def clean_up_ramdisk(self, task: Task) -> None:
        task.node.driver_internal_info.pop("redfish_https_boot_url", None)
