"""Hardware interface base classes, with Ironic's method names.

A hardware type is a set of interfaces, one per kind (power, management,
deploy, ...). Each kind below names the methods the conductor calls and
gives them a documented default: harmless no-ops for preparation and
clean-up hooks, :class:`~ironic_fsm.exceptions.UnsupportedOperation` for
operations that only real hardware can perform.

Steps are methods decorated with :func:`~ironic_fsm.steps.clean_step` and
friends. They are discovered once per class, when the class is created,
never per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ironic_fsm import states
from ironic_fsm.exceptions import (
    StepFailed,
    UnsupportedDriverExtension,
    UnsupportedOperation,
)
from ironic_fsm.raid import LOGICAL_DISK_PROPERTIES, check_raid_config
from ironic_fsm.steps import CLEAN, DEPLOY, PHASES, SERVICE, VERIFY, Phase, StepInfo, step_infos

if TYPE_CHECKING:
    from ironic_fsm.task import Task

__all__ = [
    "BIOSInterface",
    "BOOT_DEVICES",
    "BaseInterface",
    "BootInterface",
    "ConsoleInterface",
    "DeployInterface",
    "FirmwareInterface",
    "INTERFACE_CLASSES",
    "INTERFACE_KINDS",
    "InspectInterface",
    "ManagementInterface",
    "NO_OP_NAMES",
    "NetworkInterface",
    "PowerInterface",
    "RAIDInterface",
    "RescueInterface",
    "StorageInterface",
    "VendorInterface",
    "no_op_class",
]

#: Boot device names, as Ironic spells them.
BOOT_DEVICES: Final = frozenset({"pxe", "disk", "cdrom", "bios", "safe", "wanboot", "uefi-http"})


class BaseInterface:
    """The part every interface shares: validation, properties and steps.

    Subclasses set ``interface_type`` (the kind classes below already do)
    and decorate step methods. ``get_<phase>_steps`` return the declared
    steps, including priority-0 ones; an interface that learns its steps
    only from a running agent overrides them and may raise
    :class:`~ironic_fsm.exceptions.StepsNotAvailable`.
    """

    interface_type: ClassVar[str] = "base"
    #: True for a kind's do-nothing implementation (Ironic's ``no-raid``...): what it
    #: cannot do raises :class:`~ironic_fsm.exceptions.UnsupportedDriverExtension`.
    no_op: ClassVar[bool] = False
    #: Declared steps per phase, sorted by method name (computed per class).
    step_definitions: ClassVar[Mapping[Phase, tuple[StepInfo, ...]]] = {p: () for p in PHASES}
    _step_dicts: ClassVar[Mapping[Phase, tuple[dict[str, Any], ...]]] = {p: () for p in PHASES}
    _step_names: ClassVar[Mapping[Phase, frozenset[str]]] = {p: frozenset() for p in PHASES}
    #: What :meth:`declared_steps` answers, per phase (computed per class).
    _declared: ClassVar[Mapping[Phase, tuple[dict[str, Any], ...] | None]] = {p: () for p in PHASES}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[Phase, list[StepInfo]] = {p: [] for p in PHASES}
        seen: set[str] = set()
        for klass in cls.__mro__:
            for name, attr in vars(klass).items():
                if name in seen:
                    continue
                seen.add(name)  # the most derived definition wins
                for phase, info in step_infos(attr).items():
                    found[phase].append(info)
        cls.step_definitions = {
            p: tuple(sorted(infos, key=lambda i: i.name)) for p, infos in found.items()
        }
        cls._step_dicts = {
            p: tuple(i.as_dict(cls.interface_type) for i in infos)
            for p, infos in cls.step_definitions.items()
        }
        cls._step_names = {p: frozenset(i.name for i in infos) for p, infos in found.items()}
        # Asked for every interface of every plan: settled here, once, as discovery is.
        cls._declared = {
            p: steps if getattr(cls, f"get_{p}_steps") is getattr(BaseInterface, f"get_{p}_steps")
            else None
            for p, steps in cls._step_dicts.items()
        }  # fmt: skip

    @classmethod
    def check_loadable(cls) -> None:
        """Raise :class:`~ironic_fsm.exceptions.MissingDependency` if an extra it needs is absent.

        Asked when a node picks the implementation, so that one whose
        library (pyghmi, sushy) is missing is refused then, not mid-flow.
        """

    def get_properties(self) -> dict[str, str]:
        """The ``driver_info`` keys this interface reads, with descriptions."""
        return {}

    def validate(self, task: Task) -> None:
        """Check that the node can use this interface; raise InvalidParameterValue if not."""

    # -- steps ------------------------------------------------------------------

    def declared_steps(self, phase: Phase) -> tuple[dict[str, Any], ...] | None:
        """The class's declared ``phase`` steps, shared and read-only, or ``None``.

        ``None`` when the interface overrides ``get_<phase>_steps`` (its steps
        may depend on the node). The planner uses this to avoid copying
        steps it only reads; everyone else should call ``get_<phase>_steps``.
        """
        return self._declared[phase]

    def _steps(self, phase: Phase) -> list[dict[str, Any]]:
        # Fresh dicts all the way down: callers may mutate what they get.
        return [
            {**step, "argsinfo": {k: dict(v) for k, v in step["argsinfo"].items()}}
            if "argsinfo" in step
            else dict(step)
            for step in self._step_dicts[phase]
        ]

    def get_clean_steps(self, task: Task) -> list[dict[str, Any]]:
        """The clean steps this interface offers (priority 0 included)."""
        return self._steps(CLEAN)

    def get_deploy_steps(self, task: Task) -> list[dict[str, Any]]:
        """The deploy steps this interface offers (priority 0 included)."""
        return self._steps(DEPLOY)

    def get_service_steps(self, task: Task) -> list[dict[str, Any]]:
        """The service steps this interface offers."""
        return self._steps(SERVICE)

    def get_verify_steps(self, task: Task) -> list[dict[str, Any]]:
        """The verify steps this interface offers."""
        return self._steps(VERIFY)

    def _execute(self, phase: Phase, task: Task, step: Mapping[str, Any]) -> str | None:
        name = step["step"]
        if name not in self._step_names[phase]:
            raise StepFailed(
                f"Interface {self.interface_type!r} has no {phase} step {name!r}",
                step=dict(step),
            )
        args = step.get("args") or {}
        result: str | None = getattr(self, name)(task, **args)
        return result

    def execute_clean_step(self, task: Task, step: Mapping[str, Any]) -> str | None:
        """Run a clean step; ``None`` when done, ``clean wait`` when it goes on."""
        return self._execute(CLEAN, task, step)

    def execute_deploy_step(self, task: Task, step: Mapping[str, Any]) -> str | None:
        """Run a deploy step; ``None`` when done, ``wait call-back`` when it goes on."""
        return self._execute(DEPLOY, task, step)

    def execute_service_step(self, task: Task, step: Mapping[str, Any]) -> str | None:
        """Run a service step; ``None`` when done, ``service wait`` when it goes on."""
        return self._execute(SERVICE, task, step)

    def execute_verify_step(self, task: Task, step: Mapping[str, Any]) -> str | None:
        """Run a verify step."""
        return self._execute(VERIFY, task, step)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.interface_type}>"


def _unsupported(iface: BaseInterface, operation: str) -> UnsupportedOperation:
    if iface.no_op:
        kind = iface.interface_type
        so = "" if operation == "validate" else f", so {operation} cannot run"
        return UnsupportedDriverExtension(
            f"The node's {kind} interface is {NO_OP_NAMES[kind]!r}: {kind} is disabled or not "
            f"implemented{so} (choose another {kind}_interface)",
            interface=kind,
            operation=operation,
        )
    return UnsupportedOperation(
        f"{type(iface).__name__} ({iface.interface_type} interface) does not support {operation}",
        interface=iface.interface_type,
        operation=operation,
    )


class PowerInterface(BaseInterface):
    """Turns the node on and off and reports its power state."""

    interface_type = "power"

    def get_power_state(self, task: Task) -> str:
        """``power on`` or ``power off`` (or ``None`` when unknown)."""
        raise _unsupported(self, "get_power_state")

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        """Reach ``power_state`` within ``timeout`` seconds."""
        raise _unsupported(self, "set_power_state")

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        """Power cycle the node, leaving it on."""
        raise _unsupported(self, "reboot")

    def get_supported_power_states(self, task: Task) -> list[str]:
        """The power states :meth:`set_power_state` accepts."""
        return [states.POWER_ON, states.POWER_OFF, states.REBOOT]


class ManagementInterface(BaseInterface):
    """Boot device selection and other BMC management."""

    interface_type = "management"

    def get_supported_boot_devices(self, task: Task) -> list[str]:
        """The boot devices :meth:`set_boot_device` accepts."""
        return []

    def attach_virtual_media(
        self, task: Task, device_type: str, image_url: str, image_download_source: str
    ) -> None:
        """Insert the image at ``image_url`` into the BMC's ``device_type`` slot (1.89)."""
        raise _unsupported(self, "attach_virtual_media")

    def detach_virtual_media(self, task: Task, device_types: list[str]) -> None:
        """Eject what the BMC's slots of ``device_types`` hold."""
        raise _unsupported(self, "detach_virtual_media")

    def inject_nmi(self, task: Task) -> None:
        """Send the node a non-maskable interrupt (1.29)."""
        raise _unsupported(self, "inject_nmi")

    def get_supported_indicators(self, task: Task) -> dict[str, dict[str, dict[str, Any]]]:
        """The indicators (LEDs) by component (``system``, ``chassis``...), each with
        ``readonly`` and the ``states`` it takes (1.63)."""
        raise _unsupported(self, "get_supported_indicators")

    def get_indicator_state(self, task: Task, component: str, indicator: str) -> str:
        raise _unsupported(self, "get_indicator_state")

    def set_indicator_state(self, task: Task, component: str, indicator: str, state: str) -> None:
        raise _unsupported(self, "set_indicator_state")

    def set_boot_device(self, task: Task, device: str, persistent: bool = False) -> None:
        """Boot from ``device`` next time (or always, when ``persistent``)."""
        raise _unsupported(self, "set_boot_device")

    def get_boot_device(self, task: Task) -> dict[str, Any]:
        """``{'boot_device': name or None, 'persistent': bool or None}``."""
        return {"boot_device": None, "persistent": None}

    # Boot mode and secure boot are optional: a BMC that cannot tell or set
    # them says so (UnsupportedOperation), and the conductor caches None.

    def get_supported_boot_modes(self, task: Task) -> list[str]:
        """The boot modes (``'uefi'``, ``'bios'``) :meth:`set_boot_mode` accepts."""
        raise _unsupported(self, "get_supported_boot_modes")

    def get_boot_mode(self, task: Task) -> str | None:
        """``'uefi'`` or ``'bios'`` as the BMC reports it, None when it does not know."""
        raise _unsupported(self, "get_boot_mode")

    def set_boot_mode(self, task: Task, mode: str) -> None:
        """Boot in ``mode`` (``'uefi'`` or ``'bios'``) from the next boot on."""
        raise _unsupported(self, "set_boot_mode")

    def get_secure_boot_state(self, task: Task) -> bool:
        """Whether UEFI secure boot is on."""
        raise _unsupported(self, "get_secure_boot_state")

    def set_secure_boot_state(self, task: Task, state: bool) -> None:
        """Turn UEFI secure boot on or off (it takes effect at the next boot)."""
        raise _unsupported(self, "set_secure_boot_state")

    def get_sensors_data(self, task: Task) -> dict[str, dict[str, dict[str, Any]]]:
        """The BMC's sensor readings, by sensor type then sensor, as Ironic's drivers
        give them (``{'Temperature': {'CPU Temp@1': {'reading_celsius': 52, ...}}}``):
        what ``send_sensor_data`` collects."""
        raise _unsupported(self, "get_sensors_data")


class DeployInterface(BaseInterface):
    """Puts an instance on the node and takes it off again.

    Implementations decorate :meth:`deploy` with ``deploy_step(priority=100)``:
    it is the core deploy step.
    """

    interface_type = "deploy"

    def deploy(self, task: Task) -> str | None:
        """Write the instance; ``None`` when done, ``wait call-back`` when it goes on."""
        raise _unsupported(self, "deploy")

    def prepare(self, task: Task) -> None:
        """Prepare the node's environment before deploying."""

    def clean_up(self, task: Task) -> None:
        """Remove what :meth:`prepare` and the deploy left behind."""

    def tear_down(self, task: Task) -> str | None:
        """Remove the instance; the conductor powers the node off first."""
        return None

    def take_over(self, task: Task) -> None:
        """Take over a node another conductor was handling (and adoption)."""

    def prepare_cleaning(self, task: Task) -> str | None:
        """Get ready to run clean steps; ``clean wait`` if a ramdisk must boot first."""
        return None

    def tear_down_cleaning(self, task: Task) -> None:
        """Undo :meth:`prepare_cleaning`."""

    def prepare_service(self, task: Task) -> str | None:
        """Get ready to run service steps; ``service wait`` if asynchronous."""
        return None

    def tear_down_service(self, task: Task) -> None:
        """Undo :meth:`prepare_service`."""


class BootInterface(BaseInterface):
    """How the node boots the deploy ramdisk and the instance."""

    interface_type = "boot"

    def prepare_ramdisk(self, task: Task, ramdisk_params: Mapping[str, Any]) -> None:
        """Arrange for the node to boot the deploy/rescue ramdisk."""

    def clean_up_ramdisk(self, task: Task) -> None:
        """Undo :meth:`prepare_ramdisk`."""

    def prepare_instance(self, task: Task) -> None:
        """Arrange for the node to boot the deployed instance."""

    def clean_up_instance(self, task: Task) -> None:
        """Undo :meth:`prepare_instance`."""


class BIOSInterface(BaseInterface):
    """Reads and changes BIOS settings."""

    interface_type = "bios"

    def apply_configuration(self, task: Task, settings: list[dict[str, Any]]) -> str | None:
        """Apply ``[{'name': ..., 'value': ...}, ...]``."""
        raise _unsupported(self, "apply_configuration")

    def factory_reset(self, task: Task) -> str | None:
        """Restore the BIOS defaults."""
        raise _unsupported(self, "factory_reset")

    def cached_settings(self, task: Task) -> dict[str, Any]:
        """The settings as this interface last read or applied them (name: value), without
        asking the BMC; none by default."""
        return {}

    def cache_bios_settings(self, task: Task) -> None:
        """Refresh the settings recorded for the node."""


class RAIDInterface(BaseInterface):
    """Builds and removes RAID volumes from ``node.target_raid_config``."""

    interface_type = "raid"

    def create_configuration(
        self, task: Task, create_root_volume: bool = True, create_nonroot_volumes: bool = True
    ) -> str | None:
        """Create the volumes of ``target_raid_config``."""
        raise _unsupported(self, "create_configuration")

    def delete_configuration(self, task: Task) -> str | None:
        """Delete every volume."""
        raise _unsupported(self, "delete_configuration")

    def validate_raid_config(self, task: Task, raid_config: Mapping[str, Any]) -> None:
        """Check a target RAID configuration; raise InvalidParameterValue if wrong.

        Ironic's rules by default (:func:`ironic_fsm.raid.check_raid_config`);
        a RAID interface that takes other properties checks them here.
        """
        if self.no_op:
            raise _unsupported(self, "validate_raid_config")
        check_raid_config(raid_config, task.node.uuid)

    def get_logical_disk_properties(self) -> dict[str, str]:
        """Each logical disk property a target may use, with what it means."""
        if self.no_op:
            raise _unsupported(self, "get_logical_disk_properties")
        return dict(LOGICAL_DISK_PROPERTIES)


class InspectInterface(BaseInterface):
    """Discovers the node's hardware properties."""

    interface_type = "inspect"

    def inspect_hardware(self, task: Task) -> str:
        """Fill ``node.properties``; return ``manageable`` or ``inspect wait``."""
        raise _unsupported(self, "inspect_hardware")

    def abort(self, task: Task) -> None:
        """Stop an asynchronous inspection."""
        raise _unsupported(self, "abort")

    def continue_inspection(
        self,
        task: Task,
        inventory: Mapping[str, Any],
        plugin_data: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Take the data an asynchronous inspection reported (``plugin_data``: the rest of
        what the ramdisk posted beside its inventory)."""
        return None

    def ports_from(self, task: Task, inventory: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The ports (``address``, ``pxe_enabled``, ``extra``) the conductor makes from the
        inventory once inspection finished; none unless the interface asks."""
        return []

    def port_changes(
        self, task: Task, inventory: Mapping[str, Any], ports: list[tuple[str, bool, Any]]
    ) -> list[dict[str, Any]]:
        """What the conductor changes of the node's ``ports`` (address, pxe_enabled, extra)
        after making those of :meth:`ports_from`: ``{"address", "delete": True}``, or
        ``{"address", "pxe_enabled"?, "client_id"?}``; nothing unless the interface asks."""
        return []


class RescueInterface(BaseInterface):
    """Boots a rescue ramdisk on an active node and back."""

    interface_type = "rescue"

    def rescue(self, task: Task) -> str:
        """Boot the rescue environment; return ``rescue`` or ``rescue wait``."""
        raise _unsupported(self, "rescue")

    def unrescue(self, task: Task) -> str:
        """Boot the instance again; return ``active``."""
        raise _unsupported(self, "unrescue")

    def clean_up(self, task: Task) -> None:
        """Remove what rescuing set up."""


class VendorInterface(BaseInterface):
    """Vendor-specific steps and pass-through calls."""

    interface_type = "vendor"


class FirmwareInterface(BaseInterface):
    """Firmware updates."""

    interface_type = "firmware"


class ConsoleInterface(BaseInterface):
    """The node's serial or graphical console."""

    interface_type = "console"

    def start_console(self, task: Task) -> None:
        """Make the console reachable."""
        raise _unsupported(self, "start_console")

    def stop_console(self, task: Task) -> None:
        """Close the console."""
        raise _unsupported(self, "stop_console")

    def get_console(self, task: Task) -> dict[str, Any]:
        """``{'type': ..., 'url': ...}`` of the running console."""
        raise _unsupported(self, "get_console")


class NetworkInterface(BaseInterface):
    """Which networks the node's ports are on in each phase, and its VIFs."""

    interface_type = "network"

    def add_provisioning_network(self, task: Task) -> None:
        """Put the node on the provisioning network before a deploy."""

    def remove_provisioning_network(self, task: Task) -> None:
        """Take it off again."""

    def configure_tenant_networks(self, task: Task) -> None:
        """Put the node on its instance's networks."""

    def unconfigure_tenant_networks(self, task: Task) -> None:
        """Take it off them."""

    def add_cleaning_network(self, task: Task) -> None:
        """Put the node on the cleaning network."""

    def remove_cleaning_network(self, task: Task) -> None:
        """Take it off again."""


class StorageInterface(BaseInterface):
    """Volumes the node boots from or attaches (Ironic's volume connectors and targets)."""

    interface_type = "storage"

    def attach_volumes(self, task: Task) -> None:
        """Attach the node's volume targets."""

    def detach_volumes(self, task: Task) -> None:
        """Detach them."""

    def should_write_image(self, task: Task) -> bool:
        """Whether a deploy writes an image (False when the node boots from a volume)."""
        return True


#: The base class of each interface kind.
INTERFACE_CLASSES: Final[Mapping[str, type[BaseInterface]]] = {
    "power": PowerInterface,
    "management": ManagementInterface,
    "deploy": DeployInterface,
    "boot": BootInterface,
    "bios": BIOSInterface,
    "raid": RAIDInterface,
    "inspect": InspectInterface,
    "rescue": RescueInterface,
    "vendor": VendorInterface,
    "firmware": FirmwareInterface,
    "console": ConsoleInterface,
    "network": NetworkInterface,
    "storage": StorageInterface,
}

#: The interface kinds a hardware type provides, in Ironic's order. Owned
#: here, beside the classes, so that ``hardware`` and the drivers need not
#: import ``node``; ``ironic_fsm.node`` re-exports it.
INTERFACE_KINDS: Final[tuple[str, ...]] = tuple(INTERFACE_CLASSES)


#: Each kind's do-nothing implementation, by Ironic's name for it (``no-<kind>`` or ``noop``).
NO_OP_NAMES: Final[Mapping[str, str]] = {
    kind: "noop" if kind in ("management", "network", "storage") else f"no-{kind}"
    for kind in INTERFACE_KINDS
}

_NO_OP_CLASSES: dict[str, type[BaseInterface]] = {}


def no_op_class(kind: str) -> type[BaseInterface]:
    """The class of ``kind``'s do-nothing implementation (one per kind, made on first use).

    It offers no steps; what needs real work raises
    :class:`~ironic_fsm.exceptions.UnsupportedDriverExtension`; hooks
    (prepare, clean-up, network and storage changes) do nothing.
    """
    cls = _NO_OP_CLASSES.get(kind)
    if cls is None:
        base = INTERFACE_CLASSES[kind]
        members: dict[str, Any] = {
            "__doc__": f"Ironic's {NO_OP_NAMES[kind]!r} {kind} interface.",
            "no_op": True,
        }
        if kind in _FAILING_NO_OPS:
            members["validate"] = _refuse
        cls = _NO_OP_CLASSES[kind] = type(f"Noop{base.__name__}", (base,), members)
    return cls


#: The kinds whose no-op fails validation, as Ironic's ``no-*`` (its FailMixin) do: a
#: node cannot be checked ready for what the kind would do.
_FAILING_NO_OPS: Final = frozenset({"bios", "console", "firmware", "inspect", "raid", "rescue",
                                    "vendor"})  # fmt: skip


def _refuse(self: BaseInterface, task: Task) -> None:
    raise _unsupported(self, "validate")
