"""Conductor configuration, with Ironic's option names and defaults."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit

import attrs

from ironic_fsm._node_fields import conductor_group as _check_group
from ironic_fsm.exceptions import InvalidParameterValue

__all__ = ["Config"]


def _step_ids(value: Any) -> tuple[str, ...]:
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, Iterable)
        or not all(isinstance(v, str) and "." in v for v in value)
    ):
        raise InvalidParameterValue(
            f"Expected a list of 'interface.step' names, got {value!r}", value=value
        )
    return tuple(value)


def _overrides(value: Mapping[str, Any]) -> Mapping[str, int]:
    if not isinstance(value, Mapping):
        raise InvalidParameterValue(
            f"Priority overrides must be a mapping of 'interface.step' to priority, not {value!r}",
            value=value,
        )
    out: dict[str, int] = {}
    for key, prio in value.items():
        if not isinstance(key, str) or "." not in key:
            raise InvalidParameterValue(
                f"Priority override key {key!r} is not 'interface.step'", value=key
            )
        if isinstance(prio, bool) or not isinstance(prio, (int, str)):
            raise InvalidParameterValue(
                f"Priority override for {key} must be an integer >= 0, not {prio!r}", value=prio
            )
        try:
            number = int(prio)
        except ValueError:
            number = -1
        if number < 0:
            raise InvalidParameterValue(
                f"Priority override for {key} must be an integer >= 0, not {prio!r}", value=prio
            )
        out[key] = number
    return out


def _non_negative(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be a number of seconds >= 0, not {value!r}",
            option=attribute.name,
        )


def _boolean(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be True or False, not {value!r}", option=attribute.name
        )


def _optional_count(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _count(0)(instance, attribute, value)


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be a number of seconds > 0, not {value!r}",
            option=attribute.name,
        )


def _count(minimum: int) -> Any:
    """A validator of whole numbers of at least ``minimum`` (Ironic's IntOpt with ``min``)."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InvalidParameterValue(
                f"Config.{attribute.name} must be an integer >= {minimum}, not {value!r}",
                option=attribute.name,
            )

    return check


def _optional_url(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be an http(s) URL, not {value!r}",
            option=attribute.name,
        )


def _add_ports(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ("all", "active", "pxe", "disabled"):
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be all, active, pxe or disabled, not {value!r}",
            option=attribute.name,
        )


def _keep_ports(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ("all", "present", "added"):
        raise InvalidParameterValue(
            f"Config.{attribute.name} must be all, present or added, not {value!r}",
            option=attribute.name,
        )


#: The longest ``host``: a reservation holder (host, pid, start time, instance) fits 255.
_HOST_MAX: Final = 200


def _host(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    # The holder token is "host:pid:start-id", and recovery splits it on ":".
    if (
        not isinstance(value, str)
        or not value
        or len(value) > _HOST_MAX
        or any(c == ":" or c.isspace() or not c.isprintable() for c in value)
    ):
        raise InvalidParameterValue(
            f"Config.host must be a non-empty name of at most {_HOST_MAX} printable "
            f"characters without ':' or spaces, not {value!r}",
            option="host",
        )


def _conductor_group(value: Any) -> str:
    """The node field's rule (one check for both): case-insensitive, kept lower case."""
    return _check_group(value, "Config.conductor_group", option="conductor_group")


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and value.isprintable()


def _names(option: str, what: str) -> Any:
    """A converter for an ``enabled_*`` option: a list of names (duplicates dropped) or None."""

    def convert(value: Any) -> tuple[str, ...] | None:
        if value is None:
            return None
        if (
            isinstance(value, (str, bytes))
            or not isinstance(value, Iterable)
            or not all(map(_is_name, value))
        ):
            raise InvalidParameterValue(
                f"Config.{option} must be a list of {what} names or None, not {value!r}",
                option=option,
            )
        return tuple(dict.fromkeys(value))

    return convert


def _hardware_types(value: Any) -> tuple[str, ...] | None:
    result: tuple[str, ...] | None = _names("enabled_hardware_types", "hardware type")(value)
    return result


def _flag(default: bool) -> Any:
    """A True/False option."""
    return attrs.field(default=default, validator=_boolean)


def _seconds(default: float, *, zero: bool = True) -> Any:
    """A duration option in seconds: ``zero`` allowed (where 0 turns the thing off) or not."""
    return attrs.field(default=default, validator=_non_negative if zero else _positive)


def _enabled(kind: str) -> Any:
    """``enabled_<kind>_interfaces``: None (every implementation installed) or a list."""
    option = f"enabled_{kind}_interfaces"
    return attrs.field(default=None, converter=_names(option, f"{kind} interface"))


def _default(kind: str, ironic: str | None = None) -> Any:
    """``default_<kind>_interface``: None (the hardware type's first enabled) or a name."""
    option = f"default_{kind}_interface"

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and not _is_name(value):
            raise InvalidParameterValue(
                f"Config.{option} must be a {kind} interface name or None, not {value!r}",
                option=option,
            )

    return attrs.field(default=ironic, validator=check)


_DISALLOWED_BY_DEFAULT = ("vendor.send_raw",)


def _hostname() -> str:
    """This machine's name: ``socket`` is imported when a config first needs it, not by
    ``import ironic_fsm``."""
    import socket

    return socket.gethostname()


@attrs.frozen(init=False, kw_only=True)
class Config:
    """Operator settings for a :class:`~ironic_fsm.Conductor`.

    Every option keeps Ironic's name and default. ``clean_nodes``, the old
    name of ``automated_clean``, is still accepted, with a
    :class:`DeprecationWarning`.
    """

    automated_clean: bool = _flag(True)
    clean_step_priority_override: Mapping[str, int] = attrs.field(
        factory=dict, converter=_overrides
    )
    verify_step_priority_override: Mapping[str, int] = attrs.field(
        factory=dict, converter=_overrides
    )
    disallow_clean_steps: tuple[str, ...] = attrs.field(
        default=_DISALLOWED_BY_DEFAULT, converter=_step_ids
    )
    disallow_deploy_steps: tuple[str, ...] = attrs.field(
        default=_DISALLOWED_BY_DEFAULT, converter=_step_ids
    )
    disallow_service_steps: tuple[str, ...] = attrs.field(
        default=_DISALLOWED_BY_DEFAULT, converter=_step_ids
    )
    clean_callback_timeout: float = _seconds(1800)
    deploy_callback_timeout: float = _seconds(1800)
    service_callback_timeout: float = _seconds(1800)
    rescue_callback_timeout: float = _seconds(1800)
    inspect_wait_timeout: float = _seconds(1800)
    poweroff_in_cleanfail: bool = _flag(False)
    poweroff_in_servicefail: bool = _flag(False)
    allow_provisioning_in_maintenance: bool = _flag(True)
    allow_deleting_available_nodes: bool = _flag(True)
    #: Where automated cleaning takes its steps: ``autogenerated`` (driver
    #: priorities), ``runbook`` (a runbook is required) or ``hybrid``.
    automated_cleaning_step_source: str = attrs.field(
        default="autogenerated",
        validator=attrs.validators.in_(("autogenerated", "runbook", "hybrid")),
    )
    #: The runbook for automated cleaning when no more specific one applies.
    automated_cleaning_runbook: str | None = None
    #: Runbooks for automated cleaning by the node's ``resource_class``.
    automated_cleaning_runbook_by_resource_class: Mapping[str, str] = attrs.field(factory=dict)
    #: Whether a node may name its own runbook in ``driver_info['cleaning_runbook']``.
    automated_cleaning_runbook_from_node: bool = _flag(False)
    #: Whether an automated-cleaning runbook must carry one of the node's traits.
    automated_cleaning_runbook_validate_traits: bool = _flag(True)
    #: Seconds after which a conductor that stopped heartbeating is dead: its
    #: reservations are taken over and ``list_conductors`` shows it not alive.
    heartbeat_timeout: float = _seconds(60)
    #: Seconds between two heartbeats of a conductor service (keep it well
    #: under ``heartbeat_timeout``).
    heartbeat_interval: float = _seconds(10, zero=False)
    #: Seconds a conductor keeps retrying a flow's save while the database is
    #: unavailable (restarting, cut off, out of space) before the flow stops at its
    #: last recorded step, to be resumed by this conductor once the database is back
    #: (docs/fleet.rst, "When the database goes away"); 0: no retry. A try waiting
    #: for a pooled PostgreSQL connection may overrun it by the store's
    #: ``pool_timeout`` (30 s): keep the sum under ``heartbeat_timeout``.
    store_retry_timeout: float = _seconds(20)
    #: Seconds between two passes of the callback-timeout check; 0 disables it.
    check_provision_state_interval: float = _seconds(60)
    #: Seconds between two power-state syncs; 0 disables them.
    sync_power_state_interval: float = _seconds(60)
    #: Whether a power-state sync forces the recorded state on a node that
    #: differs (True) or records the BMC's (False).
    force_power_state_during_sync: bool = _flag(True)
    #: Failed power-state reads before a node is put in maintenance.
    power_state_sync_max_retries: int = attrs.field(default=3, validator=_count(0))
    #: Most BMCs read at once by one power-state sync.
    sync_power_state_workers: int = attrs.field(default=8, validator=_count(1))
    # Hardware sensors (Ironic's [sensor_data] options, prefixed: send_sensor_data_<name>).
    #: Whether a conductor service reads its nodes' sensors periodically
    #: (Ironic's ``[sensor_data]send_sensor_data``).
    send_sensor_data: bool = _flag(False)
    #: Seconds between two sensor passes (``[sensor_data]interval``).
    send_sensor_data_interval: float = _seconds(600, zero=False)
    #: Most BMCs read at once by one pass (``[sensor_data]workers``).
    send_sensor_data_workers: int = attrs.field(default=4, validator=_count(1))
    #: Seconds a pass waits for its BMCs; a slower one counts as failed
    #: (``[sensor_data]wait_timeout``).
    send_sensor_data_wait_timeout: float = _seconds(300, zero=False)
    #: Whether nodes not deployed (any state but ``active``) are read too
    #: (``[sensor_data]enable_for_undeployed_nodes``).
    send_sensor_data_for_undeployed_nodes: bool = _flag(False)
    #: This conductor's name in reservations and in the conductor registry.
    host: str = attrs.field(factory=_hostname, validator=_host)
    #: The conductor group this conductor joins ('' is the default group);
    #: case-insensitive, kept in lower case as Ironic does.
    conductor_group: str = attrs.field(default="", converter=_conductor_group)
    #: The hardware types this conductor serves, as it advertises them in the
    #: conductor registry. ``None`` (the default, unlike Ironic's
    #: ``['ipmi', 'redfish']``): every installed one. Types given to
    #: ``register_hardware_type`` are served whatever this says.
    enabled_hardware_types: tuple[str, ...] | None = attrs.field(
        default=None, converter=_hardware_types
    )
    # Interfaces, per kind (Ironic's [DEFAULT] options). ``enabled_<kind>_interfaces``:
    # the implementations nodes may use; None (unlike Ironic's lists) is every one
    # installed. ``default_<kind>_interface``: the default of a node that names none,
    # if its hardware type supports it; None picks the type's first supported one
    # that is enabled (Ironic's rule).
    #: The bios interface implementations nodes may choose (None: every installed one).
    enabled_bios_interfaces: tuple[str, ...] | None = _enabled("bios")
    #: The bios interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_bios_interface: str | None = _default("bios")
    #: The boot interface implementations nodes may choose (None: every installed one).
    enabled_boot_interfaces: tuple[str, ...] | None = _enabled("boot")
    #: The boot interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_boot_interface: str | None = _default("boot")
    #: The console interface implementations nodes may choose (None: every installed one).
    enabled_console_interfaces: tuple[str, ...] | None = _enabled("console")
    #: The console interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_console_interface: str | None = _default("console")
    #: The deploy interface implementations nodes may choose (None: every installed one).
    enabled_deploy_interfaces: tuple[str, ...] | None = _enabled("deploy")
    #: The deploy interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_deploy_interface: str | None = _default("deploy")
    #: The firmware interface implementations nodes may choose (None: every installed one).
    enabled_firmware_interfaces: tuple[str, ...] | None = _enabled("firmware")
    #: The firmware interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_firmware_interface: str | None = _default("firmware")
    #: The inspect interface implementations nodes may choose (None: every installed one).
    enabled_inspect_interfaces: tuple[str, ...] | None = _enabled("inspect")
    #: The inspect interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_inspect_interface: str | None = _default("inspect")
    #: The management interface implementations nodes may choose (None: every installed one).
    enabled_management_interfaces: tuple[str, ...] | None = _enabled("management")
    #: The management interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_management_interface: str | None = _default("management")
    #: The network interface implementations nodes may choose (None: every installed one).
    enabled_network_interfaces: tuple[str, ...] | None = _enabled("network")
    #: The network interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_network_interface: str | None = _default("network")
    #: The power interface implementations nodes may choose (None: every installed one).
    enabled_power_interfaces: tuple[str, ...] | None = _enabled("power")
    #: The power interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_power_interface: str | None = _default("power")
    #: The raid interface implementations nodes may choose (None: every installed one).
    enabled_raid_interfaces: tuple[str, ...] | None = _enabled("raid")
    #: The raid interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_raid_interface: str | None = _default("raid")
    #: The rescue interface implementations nodes may choose (None: every installed one).
    enabled_rescue_interfaces: tuple[str, ...] | None = _enabled("rescue")
    #: The rescue interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_rescue_interface: str | None = _default("rescue")
    #: The storage interface implementations nodes may choose (None: every installed one).
    enabled_storage_interfaces: tuple[str, ...] | None = _enabled("storage")
    #: The storage interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_storage_interface: str | None = _default("storage", "noop")  # Ironic's default
    #: The vendor interface implementations nodes may choose (None: every installed one).
    enabled_vendor_interfaces: tuple[str, ...] | None = _enabled("vendor")
    #: The vendor interface of a node that names none, if its type supports it and it is
    #: enabled (None: the type's first enabled one).
    default_vendor_interface: str | None = _default("vendor")
    #: Whether the conductor records node history (failures, maintenance, takeovers...).
    node_history: bool = _flag(True)
    #: Most history entries kept per node; the periodic trim deletes the oldest beyond it.
    node_history_max_entries: int = attrs.field(default=300, validator=_count(0))
    #: Days an entry is kept whatever ``node_history_max_entries`` says (0: no minimum).
    node_history_minimum_days: int = attrs.field(default=0, validator=_count(0))
    #: Seconds between two history trims; 0 disables them.
    node_history_cleanup_interval: float = _seconds(86400)
    #: Most entries one trim deletes per batch (one statement, one transaction each).
    node_history_cleanup_batch_count: int = attrs.field(default=1000, validator=_count(1))

    #: Seconds a ramdisk agent may stay silent; its lookup hands it this, and it
    #: heartbeats every 0.3-0.6 of it (Ironic's ``[api]ramdisk_heartbeat_timeout``).
    ramdisk_heartbeat_timeout: float = _seconds(300, zero=False)
    #: The priority of the agent's ``erase_devices`` in automated cleaning; None keeps the
    #: agent's own (10), 0 disables (Ironic's ``[deploy]`` option of this name).
    erase_devices_priority: int | None = attrs.field(default=None, validator=_optional_count)
    #: The same for ``erase_devices_metadata`` (the agent's own: 99).
    erase_devices_metadata_priority: int | None = attrs.field(
        default=None, validator=_optional_count
    )
    #: Whether an agent's lookup finds only nodes in a state that expects an agent
    #: (Ironic's ``[api]restrict_lookup``).
    restrict_lookup: bool = _flag(True)
    #: Reuse an agent that heartbeated lately instead of booting the ramdisk again, and
    #: leave it running after cleaning (Ironic's ``[deploy]fast_track``).
    fast_track: bool = _flag(False)
    #: Seconds since its last heartbeat within which fast track reuses an agent.
    fast_track_timeout: float = _seconds(300)
    #: After the agent was asked to power the machine off at the end of a deploy: how
    #: many more times to read the power state before forcing it off (Ironic's
    #: ``[agent]post_deploy_get_power_state_retries``).
    post_deploy_get_power_state_retries: int = attrs.field(default=6, validator=_count(0))
    #: Seconds between those reads (``[agent]post_deploy_get_power_state_retry_interval``).
    post_deploy_get_power_state_retry_interval: float = _seconds(5)

    #: Where agents reach this service's API, e.g. ``http://192.0.2.1:6385`` (Ironic's
    #: ``[conductor]api_url``): ``agent`` inspection tells its ramdisk to post the
    #: inventory to ``{api_url}/v1/continue_inspection``.
    api_url: str | None = attrs.field(default=None, validator=_optional_url)
    #: Which of the inventory's interfaces ``agent`` inspection makes ports of: ``all``,
    #: ``active`` (with an IP address), ``pxe`` (the one it booted from) or ``disabled``
    #: (Ironic's ``[inspector]add_ports``).
    inspector_add_ports: str = attrs.field(default="pxe", validator=_add_ports)
    #: Which of a node's ports ``agent`` inspection keeps: ``all``, ``present`` (their MAC
    #: is in the inventory) or ``added`` (``inspector_add_ports`` would make them); the
    #: others are deleted (Ironic's ``[inspector]keep_ports``).
    inspector_keep_ports: str = attrs.field(default="all", validator=_keep_ports)
    #: Whether ``agent`` inspection sets each kept port's ``pxe_enabled`` to whether the
    #: ramdisk booted from it (Ironic's ``[inspector]update_pxe_enabled``).
    inspector_update_pxe_enabled: bool = True

    def __init__(self, **options: Any) -> None:
        if "clean_nodes" in options:
            warnings.warn(
                "Config(clean_nodes=...) is deprecated; use automated_clean",
                DeprecationWarning,
                stacklevel=2,
            )
            legacy = options.pop("clean_nodes")
            options.setdefault("automated_clean", legacy)
        unknown = set(options) - {a.name for a in attrs.fields(type(self))}
        if unknown:
            raise InvalidParameterValue(
                f"Unknown Config option(s): {', '.join(sorted(unknown))}", options=sorted(unknown)
            )
        self.__attrs_init__(**options)

    def enabled_interfaces(self, kind: str) -> tuple[str, ...] | None:
        """``enabled_<kind>_interfaces``: the names enabled, None for every installed one."""
        value: tuple[str, ...] | None = getattr(self, f"enabled_{kind}_interfaces")
        return value

    def default_interface(self, kind: str) -> str | None:
        """``default_<kind>_interface``, None when the hardware type's preference decides."""
        value: str | None = getattr(self, f"default_{kind}_interface")
        return value

    @property
    def clean_nodes(self) -> bool:
        """Deprecated alias of :attr:`automated_clean`."""
        warnings.warn(
            "Config.clean_nodes is deprecated; use automated_clean",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.automated_clean
