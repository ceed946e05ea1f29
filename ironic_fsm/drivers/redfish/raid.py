"""``redfish`` RAID: volumes through the Storage resource's Volumes collection."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm.drivers.common import GIB, bmc_step
from ironic_fsm.drivers.redfish.driver_info import RedfishInfo, _info, _RedfishValidation
from ironic_fsm.drivers.redfish.session import (
    _bmc,
    _get_system,
    _refusal,
    _sushy,
    _value,
    _wait_for,
    _wait_task_monitor,
)
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import RAIDInterface
from ironic_fsm.task import Task

__all__ = ["RedfishRAID"]

LOG = logging.getLogger(__name__)

#: RAID level -> (Redfish RAIDType, legacy VolumeType, minimum number of drives).
_RAID_LEVELS: Final[Mapping[str, tuple[str, str, int]]] = {
    "0": ("RAID0", "NonRedundant", 1),
    "1": ("RAID1", "Mirrored", 2),
    "5": ("RAID5", "StripedWithParity", 3),
    "6": ("RAID6", "StripedWithParity", 4),
    "1+0": ("RAID10", "SpannedMirrors", 4),
    "5+0": ("RAID50", "SpannedStripesWithParity", 6),
    "6+0": ("RAID60", "SpannedStripesWithParity", 8),
}

_RAID_ARGS: Final = {
    "create_root_volume": {
        "description": "Create the logical disk marked is_root_volume (default true).",
        "required": False,
    },
    "create_nonroot_volumes": {
        "description": "Create the other logical disks (default true).",
        "required": False,
    },
}


def _usable_bytes(level: str, drives: int, smallest: int) -> int:
    if level == "0":
        return drives * smallest
    if level == "1":
        return smallest
    if level == "5":
        return (drives - 1) * smallest
    if level == "6":
        return (drives - 2) * smallest
    if level == "1+0":
        return (drives // 2) * smallest
    if level == "5+0":
        return (drives - 2) * smallest
    return (drives - 4) * smallest  # 6+0


def _volume_drive_ids(volume: Any) -> set[str]:
    links = (getattr(volume, "json", None) or {}).get("Links") or {}
    found = set()
    for ref in links.get("Drives") or []:
        ident = ref.get("@odata.id") if isinstance(ref, dict) else None
        if ident:
            found.add(ident.rstrip("/").rsplit("/", 1)[-1])
    return found


class RedfishRAID(_RedfishValidation, RAIDInterface):
    """Volumes through the Storage resource's Volumes collection.

    ``target_raid_config['logical_disks']`` items take Ironic's keys:
    ``size_gb`` (int or ``'MAX'``), ``raid_level`` (0, 1, 5, 6, 1+0, 5+0,
    6+0), ``is_root_volume``, ``volume_name``, ``controller`` (a Storage
    id), ``physical_disks`` (drive ids) and ``number_of_physical_disks``.
    Drives are picked from those no existing volume uses.
    """

    def validate_raid_config(self, task: Task, raid_config: Mapping[str, Any]) -> None:
        disks = raid_config.get("logical_disks")
        if not isinstance(disks, list) or not disks:
            super().validate_raid_config(task, raid_config)  # refuses it
            return
        problems = []
        for n, disk in enumerate(disks):
            problems += _disk_problems(f"logical_disks[{n}]", disk)
        if sum(1 for d in disks if isinstance(d, dict) and d.get("is_root_volume")) > 1:
            problems.append("only one logical disk may have is_root_volume")
        if problems:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: invalid target_raid_config: {'; '.join(problems)}",
                node=task.node.uuid,
            )
        super().validate_raid_config(task, raid_config)  # then Ironic's schema

    def _pick_drives(self, task: Task, disk: Mapping[str, Any], free: list[Any]) -> list[Any]:
        level = str(disk["raid_level"])
        wanted = disk.get("physical_disks")
        if wanted:
            by_id = {d.identity: d for d in free}
            missing = [w for w in wanted if w not in by_id]
            if missing:
                raise InvalidParameterValue(
                    f"Node {task.node.uuid}: physical disk(s) {', '.join(missing)} are not "
                    "free drives of the controller",
                    node=task.node.uuid,
                )
            return [by_id[w] for w in wanted]
        count = int(disk.get("number_of_physical_disks") or _RAID_LEVELS[level][2])
        ordered = sorted(free, key=lambda d: d.capacity_bytes or 0)
        windows = [ordered[i : i + count] for i in range(len(ordered) - count + 1)]
        if not windows:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: RAID {level} needs {count} free drive(s), only "
                f"{len(free)} left",
                node=task.node.uuid,
            )
        size = int(disk["size_gb"]) if disk.get("size_gb") != "MAX" else None

        def usable(window: list[Any]) -> int:
            return _usable_bytes(level, count, min(d.capacity_bytes or 0 for d in window))

        if size is None:
            return max(windows, key=usable)
        for window in windows:  # the smallest drives that fit
            if usable(window) >= size * GIB:
                return window
        raise InvalidParameterValue(
            f"Node {task.node.uuid}: no {count} free drive(s) can hold a {size} GiB RAID {level} "
            "volume",
            node=task.node.uuid,
        )

    def _new_volume(
        self, task: Task, info: RedfishInfo, storage: Any, name: str, before: set[str]
    ) -> str:
        """The id of the volume ``name`` that was not there ``before``, once the BMC lists it.

        ``before`` holds member paths; only new members are read (sushy's
        ``get_members`` would answer from its cache).
        """
        found: list[str] = []

        def listed() -> bool:
            with _bmc(task, info, "list RAID volumes"):
                volumes = storage.volumes
                volumes.refresh(force=True)
                new = [volumes.get_member(p) for p in volumes.members_identities if p not in before]
                found[:] = [str(v.identity) for v in new if v.name == name]
            return bool(found)

        _wait_for(
            task,
            info,
            f"list the new RAID volume {name!r}",
            info.task_timeout,
            listed,
            lambda: "not in the Volumes collection",
        )
        return str(found[0])

    @staticmethod
    def _storages(
        task: Task, info: RedfishInfo, system: Any
    ) -> tuple[list[Any], dict[str, set[str]]]:
        """The storage subsystems with drives, and the drive ids their volumes already use."""
        storages = [s for s in system.storage.get_members() if s.drives_identities]
        if not storages:
            raise _refusal(task, info, f"BMC {info.address} reports no storage with drives")
        used: dict[str, set[str]] = {}
        for storage in storages:
            used[storage.identity] = set()
            for volume in storage.volumes.get_members():
                used[storage.identity] |= _volume_drive_ids(volume)
        return storages, used

    @staticmethod
    def _payload(
        task: Task,
        info: RedfishInfo,
        storage: Any,
        disk: Mapping[str, Any],
        chosen: list[Any],
        n: int,
    ) -> tuple[dict[str, Any], int]:
        """The Volumes POST body for ``disk`` on ``chosen`` drives, and its capacity in bytes."""
        level = str(disk["raid_level"])
        raid_type, volume_type, _ = _RAID_LEVELS[level]
        capacity = (
            _usable_bytes(level, len(chosen), min(d.capacity_bytes or 0 for d in chosen))
            if disk["size_gb"] == "MAX"
            else int(disk["size_gb"]) * GIB
        )
        payload: dict[str, Any] = {
            "Name": disk.get("volume_name") or f"{raid_type}-{n}",
            "RAIDType": raid_type,
            "CapacityBytes": capacity,
            "Links": {"Drives": [{"@odata.id": d.path} for d in chosen]},
        }
        supported = {_value(t) for c in storage.storage_controllers for t in (c.raid_types or [])}
        if not supported:
            payload["VolumeType"] = volume_type  # older BMCs know only VolumeType
        elif raid_type not in supported:
            raise _refusal(
                task,
                info,
                f"storage {storage.identity} on BMC {info.address} "
                f"does not support {raid_type}; it supports "
                f"{', '.join(sorted(str(s) for s in supported))}",
            )
        return payload, capacity

    def _create_volume(
        self, task: Task, info: RedfishInfo, storage: Any, payload: Mapping[str, Any]
    ) -> str:
        """POST the volume; its id, from the answer or, failing that, the collection."""
        before = set(storage.volumes.members_identities)
        try:
            result = storage.volumes.create(payload)
        except _sushy().exceptions.MissingHeaderError:
            result = None  # 202 with no task monitor: the volume will show
        volume_id = getattr(result, "identity", None)
        if volume_id is None:
            # A task to follow, or an answer (200, 204, 201 or 202 without
            # Location) that names no volume: find it in the collection.
            _wait_task_monitor(task, info, "RAID volume creation", result, info.task_timeout)
            volume_id = self._new_volume(task, info, storage, payload["Name"], before)
        return str(volume_id)

    @bmc_step("deploy", _RAID_ARGS)
    def create_configuration(
        self, task: Task, create_root_volume: bool = True, create_nonroot_volumes: bool = True
    ) -> None:
        node = task.node
        target = node.target_raid_config or {}
        self.validate_raid_config(task, target)
        disks = [
            dict(d)
            for d in target["logical_disks"]
            if (create_root_volume if d.get("is_root_volume") else create_nonroot_volumes)
        ]
        # Root first, then fixed sizes, then MAX: what Ironic does, so MAX
        # takes what is left.
        disks.sort(key=lambda d: (not d.get("is_root_volume"), d.get("size_gb") == "MAX"))
        info = _info(task)
        created: list[dict[str, Any]] = []
        with _bmc(task, info, "create RAID configuration"):
            storages, used = self._storages(task, info, _get_system(info))
            for disk in disks:
                wanted_controller = disk.get("controller")
                storage = next(
                    (s for s in storages if wanted_controller in (None, s.identity)), None
                )
                if storage is None:
                    raise InvalidParameterValue(
                        f"Node {node.uuid}: no storage controller {wanted_controller!r}; "
                        f"the BMC has {', '.join(s.identity for s in storages)}",
                        node=node.uuid,
                    )
                free = [d for d in storage.drives if d.identity not in used[storage.identity]]
                chosen = self._pick_drives(task, disk, free)
                payload, capacity = self._payload(task, info, storage, disk, chosen, len(created))
                volume_id = self._create_volume(task, info, storage, payload)
                used[storage.identity] |= {d.identity for d in chosen}
                record = dict(disk)
                record.update(
                    size_gb=capacity // GIB,
                    controller=storage.identity,
                    physical_disks=[d.identity for d in chosen],
                    volume_id=volume_id,
                )
                created.append(record)
                LOG.info(
                    "Node %s: created RAID %s volume %s (%d GiB) on BMC %s",
                    node.uuid,
                    disk["raid_level"],
                    volume_id,
                    capacity // GIB,
                    info.address,
                )
        node.raid_config = {"logical_disks": created}

    @bmc_step("deploy")
    def delete_configuration(self, task: Task) -> None:
        """Delete every volume of every storage subsystem."""
        info = _info(task)
        with _bmc(task, info, "delete RAID configuration"):
            system = _get_system(info)
            for storage in system.storage.get_members():
                for volume in storage.volumes.get_members():
                    result = volume.delete()
                    _wait_task_monitor(
                        task, info, "RAID volume deletion", result, info.task_timeout
                    )
        task.node.raid_config = {}


def _disk_problems(where: str, disk: object) -> list[str]:
    """What is wrong with one logical disk of a target, for the Redfish RAID service."""
    if not isinstance(disk, dict):
        return [f"{where} must be a dict"]
    problems = []
    level = str(disk.get("raid_level", ""))
    if level not in _RAID_LEVELS:
        problems.append(
            f"{where}.raid_level must be one of {', '.join(_RAID_LEVELS)}, got "
            f"{disk.get('raid_level')!r}"
        )
    size = disk.get("size_gb")
    if size != "MAX" and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        problems.append(f"{where}.size_gb must be a positive integer or 'MAX', got {size!r}")
    physical = disk.get("physical_disks")
    if physical is not None and (
        not isinstance(physical, list) or not all(isinstance(p, str) for p in physical)
    ):
        problems.append(f"{where}.physical_disks must be a list of drive ids")
    count = disk.get("number_of_physical_disks")
    minimum = _RAID_LEVELS.get(level, ("", "", 1))[2]
    if count is not None and (
        isinstance(count, bool) or not isinstance(count, int) or count < minimum
    ):
        problems.append(
            f"{where}.number_of_physical_disks must be an integer of at least the "
            f"RAID level's minimum, got {count!r}"
        )
    return problems
