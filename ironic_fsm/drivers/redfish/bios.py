"""``redfish`` BIOS: attributes through the Bios resource and its settings object.

Real BMCs accept the PATCH of the settings object and find out only when
they apply it (at once or at the next boot); their verdict is in the BIOS
resource's ``@Redfish.Settings`` messages, read here."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from ironic_fsm import states
from ironic_fsm.drivers.common import bmc_step, secrets_of
from ironic_fsm.drivers.redfish.driver_info import RedfishInfo, _info, _RedfishValidation
from ironic_fsm.drivers.redfish.session import _bmc, _get_system, _sushy, _value, _wait_for
from ironic_fsm.exceptions import BMCRequestFailed, InvalidParameterValue
from ironic_fsm.interfaces import BIOSInterface
from ironic_fsm.masking import scrub
from ironic_fsm.task import Task

__all__ = ["BIOSSettingsRejected", "RedfishBIOS"]

LOG = logging.getLogger(__name__)

_SETTINGS_ARG: Final = {
    "settings": {
        "description": "A list of BIOS settings, each {'name': ..., 'value': ...}.",
        "required": True,
    }
}


class BIOSSettingsRejected(BMCRequestFailed):
    """The BMC took BIOS settings, then reported that it could not apply them.

    Real BMCs accept the PATCH of the settings object and find out only
    when they apply it (at once or at the next boot); the verdict is in the
    BIOS resource's ``@Redfish.Settings`` messages. ``attributes`` lists the
    rejected attribute names where the BMC says which.
    """


def _check_bios_settings(task: Task, settings: Any) -> dict[str, Any]:
    if (
        not isinstance(settings, list)
        or not settings
        or not all(
            isinstance(s, dict) and isinstance(s.get("name"), str) and "value" in s
            for s in settings
        )
    ):
        raise InvalidParameterValue(
            f"Node {task.node.uuid}: bios.apply_configuration needs settings as a non-empty "
            f"list of {{'name': str, 'value': ...}} dicts, got {settings!r}",
            node=task.node.uuid,
        )
    return {s["name"]: s["value"] for s in settings}


def _same(a: Any, b: Any) -> bool:
    return bool(a == b or str(a) == str(b))


def _settings_outcome(resource: Any) -> tuple[Any, ...]:
    """What identifies the BMC's last report in ``@Redfish.Settings`` (time and messages).

    A report that was already there before a change belongs to an earlier
    attempt; only a new one is a verdict on this change.
    """
    settings = (resource.json or {}).get("@Redfish.Settings")
    if not isinstance(settings, dict):
        return (None, None)
    return (settings.get("Time"), repr(settings.get("Messages")))


def _failures_read_by_sushy(
    resource: Any, raw: list[dict[str, Any]]
) -> list[tuple[str, str, list[str]]]:
    """(message id, text, related properties) of the failures sushy's ``update_status`` reports."""
    status = resource.update_status
    if status.status != importlib.import_module("sushy.resources.settings").UPDATE_FAILURE:
        return []
    failed = []
    for n, message in enumerate(status.messages or []):
        if _value(message.severity) == "OK":
            continue
        related = raw[n].get("RelatedProperties") if n < len(raw) else None
        failed.append(
            (
                str(message.message_id or ""),
                str(message.message or ""),
                [str(r) for r in related or [] if isinstance(r, str)],
            )
        )
    return failed


def _raw_failures(raw: list[dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """(message id, text, related properties) of the messages not of severity OK."""
    return [
        (
            str(m.get("MessageId") or ""),
            str(m.get("Message") or ""),
            [str(r) for r in m.get("RelatedProperties") or []],
        )
        for m in raw
        if m.get("Severity", "OK") != "OK"
    ]


def _settings_failures(resource: Any) -> list[tuple[str, str, list[str]]]:
    """The failures the BMC reports in ``@Redfish.Settings``.

    With a ``Time`` there, sushy's ``update_status`` reads the verdict (and
    fills message texts in from the registries); without one, sushy
    reports nothing, so the raw messages are read instead. A message that
    is not of severity OK is a failure, as in sushy.
    """
    settings = (resource.json or {}).get("@Redfish.Settings") or {}
    raw = [m for m in settings.get("Messages") or [] if isinstance(m, dict)]
    if settings.get("Time"):
        try:
            return _failures_read_by_sushy(resource, raw)
        except _sushy().exceptions.SushyError as exc:
            # e.g. a registry the BMC fails to serve: the raw messages still tell.
            LOG.debug("sushy could not read the settings status: %s", exc)
    return _raw_failures(raw)


def _rejected_names(
    failed: list[tuple[str, str, list[str]]], wanted: Mapping[str, Any]
) -> list[str]:
    """The attributes the failures name: their RelatedProperties, else those their texts mention."""
    names: list[str] = []
    for _, _, related in failed:
        names += [r.rsplit("/", 1)[-1] for r in related if r.startswith("#/Attributes/")]
    if not names:
        names = [k for k in wanted if any(k in text for _, text, _ in failed)]
    return sorted(set(names))


def _settings_rejection(
    task: Task,
    info: RedfishInfo,
    resource: Any,
    before: tuple[Any, ...],
    wanted: Mapping[str, Any],
    what: str,
) -> BIOSSettingsRejected | None:
    """The BMC's new verdict on applying settings, when it is a failure; else None."""
    if _settings_outcome(resource) == before:
        return None
    failed = _settings_failures(resource)
    if not failed:
        return None
    names = _rejected_names(failed, wanted)
    detail = "; ".join(
        f"{text or 'no message'} ({mid or 'no message id'})" for mid, text, _ in failed
    )
    message = scrub(
        f"Node {task.node.uuid}: BMC {info.address} rejected the {what}"
        + (f" for {', '.join(names)}" if names else "")
        + f": {detail}",
        secrets_of(info.password),
    )
    return BIOSSettingsRejected(
        message,
        node=task.node.uuid,
        address=info.address,
        status=None,
        attributes=names,
    )


class RedfishBIOS(_RedfishValidation, BIOSInterface):
    """BIOS attributes through the Bios resource and its settings object.

    Where a BMC applies BIOS changes only at the next boot (pending
    attributes), the steps reboot the node and wait for the change, then
    restore the power state the node had. A BMC that reports in
    ``@Redfish.Settings`` that it could not apply the settings fails the
    step at once with its message (:class:`BIOSSettingsRejected`), instead
    of after ``redfish_task_timeout``.
    """

    def cached_settings(self, task: Task) -> dict[str, Any]:
        return dict(task.node.driver_internal_info.get("redfish_bios_settings") or {})

    def cache_bios_settings(self, task: Task) -> None:
        info = _info(task)
        with _bmc(task, info, "read BIOS settings"):
            attributes = dict(_get_system(info).bios.attributes or {})
        task.node.driver_internal_info["redfish_bios_settings"] = attributes

    def _apply_with_reboot(
        self,
        task: Task,
        info: RedfishInfo,
        applied: Callable[[], bool],
        what: str,
        describe: Callable[[], str],
    ) -> None:
        if applied():
            return
        power = task.driver.power
        was = power.get_power_state(task)
        LOG.info(
            "Node %s: BMC %s applies BIOS changes at boot; rebooting", task.node.uuid, info.address
        )
        power.reboot(task)
        try:
            _wait_for(task, info, what, info.task_timeout, applied, describe)
        except BIOSSettingsRejected:
            # The node needs no second boot for settings the BMC refused.
            if was == states.POWER_OFF:
                power.set_power_state(task, states.POWER_OFF)
            raise
        if was == states.POWER_OFF:
            power.set_power_state(task, states.POWER_OFF)

    @bmc_step("deploy", _SETTINGS_ARG)
    def apply_configuration(self, task: Task, settings: list[dict[str, Any]]) -> None:
        """Set the attributes, and make sure the BMC really applied them."""
        wanted = _check_bios_settings(task, settings)
        info = _info(task)
        with _bmc(task, info, "apply BIOS settings"):
            bios = _get_system(info).bios
            before = _settings_outcome(bios)
            bios.set_attributes(wanted)
        state: dict[str, Any] = {}

        def applied() -> bool:
            with _bmc(task, info, "read BIOS settings"):
                bios.refresh(force=True)
                current = dict(bios.attributes or {})
                rejected = _settings_rejection(task, info, bios, before, wanted, "BIOS settings")
            if rejected is not None:
                raise rejected
            state["current"] = current
            return all(_same(current.get(k), v) for k, v in wanted.items())

        def describe() -> str:
            current = state.get("current", {})
            pending = sorted(k for k, v in wanted.items() if not _same(current.get(k), v))
            return f"not applied: {', '.join(pending)}"

        self._apply_with_reboot(task, info, applied, "apply the BIOS settings", describe)
        task.node.driver_internal_info["redfish_bios_settings"] = state["current"]

    @bmc_step("deploy")
    def factory_reset(self, task: Task) -> None:
        """``Bios.ResetBios``; reboot when the BMC holds the reset as pending settings."""
        info = _info(task)
        with _bmc(task, info, "reset BIOS to factory defaults"):
            bios = _get_system(info).bios
            before = _settings_outcome(bios)
            bios.reset_bios()

        def applied() -> bool:
            with _bmc(task, info, "read BIOS settings"):
                bios.refresh(force=True)
                current = dict(bios.attributes or {})
                try:
                    pending = dict(bios.pending_attributes or {})
                except _sushy().exceptions.MissingAttributeError:
                    pending = {}
                rejected = _settings_rejection(
                    task, info, bios, before, pending, "BIOS factory reset"
                )
            if rejected is not None:
                raise rejected
            return all(_same(current.get(k), v) for k, v in pending.items())

        self._apply_with_reboot(
            task, info, applied, "apply the BIOS factory reset", lambda: "settings pending"
        )
        self.cache_bios_settings(task)
