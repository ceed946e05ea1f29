"""Hardware types, and loading them (and interfaces) from plugins.

A :class:`HardwareType` bundles one interface per kind. Plugins reach
ironic_fsm only through stevedore, here: hardware types are entry points in
:data:`HARDWARE_TYPES_NAMESPACE`, interfaces in
``ironic_fsm.hardware.interfaces.<kind>``. stevedore is imported on first
use, so ``import ironic_fsm`` does not scan entry points.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Final

import attrs

from ironic_fsm.exceptions import DriverNotFound, InvalidParameterValue, MissingDependency
from ironic_fsm.interfaces import (
    INTERFACE_CLASSES,
    INTERFACE_KINDS,
    BaseInterface,
    BIOSInterface,
    BootInterface,
    DeployInterface,
    FirmwareInterface,
    InspectInterface,
    ManagementInterface,
    PowerInterface,
    RAIDInterface,
    RescueInterface,
    VendorInterface,
)

__all__ = [
    "HARDWARE_TYPES_NAMESPACE",
    "HardwareType",
    "installed_hardware_types",
    "interface_names",
    "interface_namespace",
    "load_hardware_type",
    "load_interface",
    "noop_interface",
]

#: Entry-point group of hardware type factories (callables returning a HardwareType).
HARDWARE_TYPES_NAMESPACE: Final = "ironic_fsm.hardware.types"


def interface_namespace(kind: str) -> str:
    """Entry-point group of the interface implementations of ``kind``."""
    return f"ironic_fsm.hardware.interfaces.{kind}"


#: Each interface class's name among its kind's entry points (``None``: it has none).
_CLASS_NAMES: dict[tuple[str, type], str | None] = {}


def interface_names(hardware_type: HardwareType) -> dict[str, str | None]:
    """The name of each interface ``hardware_type`` uses, as Ironic names them (never blank).

    ``no-<kind>`` for the do-nothing ones, else the name of the entry point
    that provides the class (``fake``, ``ipmi``, ``redfish-virtual-media``);
    ``None`` where none does (a class registered in code only).
    """
    return {kind: _class_name(kind, type(iface)) for kind, iface in hardware_type.interfaces()}


def _class_name(kind: str, cls: type) -> str | None:
    key = (kind, cls)
    if key not in _CLASS_NAMES:
        name = None
        if cls.__name__.startswith("Noop"):
            name = f"no-{kind}"
        else:
            from importlib.metadata import entry_points  # only when a name is asked for

            for ep in entry_points(group=interface_namespace(kind)):
                try:
                    if ep.load() is cls:  # the entry may name a re-export of the class
                        name = str(ep.name)
                        break
                except Exception:  # a broken plugin just has no name to offer
                    continue
        _CLASS_NAMES[key] = name
    return _CLASS_NAMES[key]


_NOOPS: dict[str, BaseInterface] = {}


def noop_interface(kind: str) -> BaseInterface:
    """The shared do-nothing interface of ``kind`` (no steps, default methods)."""
    iface = _NOOPS.get(kind)
    if iface is None:
        base = INTERFACE_CLASSES[kind]
        cls = type(f"Noop{base.__name__}", (base,), {"__doc__": f"No-op {kind} interface."})
        iface = _NOOPS[kind] = cls()
    return iface


def _interface(kind: str) -> Any:
    base = INTERFACE_CLASSES[kind]

    def convert(value: BaseInterface | None) -> BaseInterface:
        if value is None:
            return noop_interface(kind)
        if not isinstance(value, base):
            raise InvalidParameterValue(
                f"HardwareType({kind}=...) needs a {base.__name__} instance, "
                f"got {type(value).__name__}",
                kind=kind,
            )
        return value

    return attrs.field(default=None, converter=convert, kw_only=True)


@attrs.frozen
class HardwareType:
    """One interface per kind; kinds left out get a no-op interface.

    ``HardwareType(power=MyPower(), deploy=MyDeploy())``. A node may pick
    another implementation of a kind by name, through its
    ``<kind>_interface`` field, among those the type supports: the
    instances in ``alternatives`` (``{'boot': {'pxe': PXEBoot()}}``) and the
    names in ``supported`` (``{'boot': ['redfish-virtual-media']}``), which
    are installed interface plugins loaded on first use from the entry-point
    group ``ironic_fsm.hardware.interfaces.<kind>``.
    """

    power: PowerInterface = _interface("power")
    management: ManagementInterface = _interface("management")
    deploy: DeployInterface = _interface("deploy")
    boot: BootInterface = _interface("boot")
    bios: BIOSInterface = _interface("bios")
    raid: RAIDInterface = _interface("raid")
    inspect: InspectInterface = _interface("inspect")
    rescue: RescueInterface = _interface("rescue")
    vendor: VendorInterface = _interface("vendor")
    firmware: FirmwareInterface = _interface("firmware")
    alternatives: Mapping[str, Mapping[str, BaseInterface]] = attrs.field(
        factory=dict, kw_only=True
    )
    supported: Mapping[str, Collection[str]] = attrs.field(factory=dict, kw_only=True)
    description: str = attrs.field(default="", kw_only=True)

    def __attrs_post_init__(self) -> None:
        for kind in self.supported:
            if kind not in INTERFACE_CLASSES:
                raise InvalidParameterValue(
                    f"Unknown interface kind {kind!r} in supported", kind=kind
                )
        for kind, choices in self.alternatives.items():
            base = INTERFACE_CLASSES.get(kind)
            if base is None:
                raise InvalidParameterValue(
                    f"Unknown interface kind {kind!r} in alternatives", kind=kind
                )
            for name, iface in choices.items():
                if not isinstance(iface, base):
                    raise InvalidParameterValue(
                        f"Alternative {kind} interface {name!r} is not a {base.__name__}",
                        kind=kind,
                    )

    @classmethod
    def of(cls, *interfaces: BaseInterface, **options: Any) -> HardwareType:
        """A type of these interfaces, each as its kind's (its ``interface_type``).

        ``options`` are the constructor's other keywords (``supported``,
        ``description``...). Two interfaces of one kind are refused.
        """
        kinds: dict[str, Any] = {}  # each checked against its kind by the constructor
        for iface in interfaces:
            kind = iface.interface_type
            if kind in kinds:
                raise InvalidParameterValue(
                    f"HardwareType.of got two {kind} interfaces: {kinds[kind]!r} and {iface!r}",
                    kind=kind,
                )
            kinds[kind] = iface
        return cls(**kinds, **options)

    def interfaces(self) -> Iterator[tuple[str, BaseInterface]]:
        """``(kind, interface)`` for every kind, in Ironic's order."""
        for kind in INTERFACE_KINDS:
            yield kind, getattr(self, kind)

    def select(self, choices: Mapping[str, str | None]) -> HardwareType:
        """This type with the interfaces a node chose by name (``{'boot': 'pxe'}``).

        Raises:
            DriverNotFound: a name is not among this type's alternatives.
        """
        picked: dict[str, Any] = {}
        for kind, name in choices.items():
            if name is None:
                continue
            options = self.alternatives.get(kind, {})
            if name in options:
                picked[kind] = options[name]
            elif name in self.supported.get(kind, ()):
                picked[kind] = load_interface(kind, name)
            else:
                known = sorted({*options, *self.supported.get(kind, ())})
                raise DriverNotFound(
                    f"{kind} interface {name!r} is not supported by this hardware type; "
                    f"supported: {', '.join(known) or 'only the default'}",
                    kind=kind,
                    name=name,
                )
        return attrs.evolve(self, **picked) if picked else self


# -- plugin loading (the only place stevedore is used) ---------------------------


def _extension_manager(namespace: str) -> Any:
    try:
        from stevedore import ExtensionManager
    except ImportError as exc:  # pragma: no cover - stevedore is a core dependency
        raise MissingDependency(
            "stevedore is needed to load plugins: pip install stevedore", extra="core"
        ) from exc
    return ExtensionManager(namespace=namespace, invoke_on_load=False)


def installed_hardware_types() -> list[str]:
    """Names of the hardware types installed as entry points, sorted."""
    return sorted(_extension_manager(HARDWARE_TYPES_NAMESPACE).names())


def _load_plugin(namespace: str, name: str, what: str) -> Any:
    from stevedore import DriverManager
    from stevedore.exception import NoMatches

    def failed(manager: Any, entrypoint: Any, exc: BaseException) -> None:
        raise exc

    try:
        manager = DriverManager(
            namespace=namespace,
            name=name,
            invoke_on_load=False,
            on_load_failure_callback=failed,
        )
    except NoMatches:
        installed = sorted(_extension_manager(namespace).names())
        raise DriverNotFound(
            f"No {what} named {name!r} is installed; installed: {', '.join(installed) or 'none'}",
            name=name,
            installed=installed,
        ) from None
    return manager.driver


_INTERFACES: dict[tuple[str, str], BaseInterface] = {}


def load_interface(kind: str, name: str) -> BaseInterface:
    """The installed ``kind`` interface plugin ``name`` (one shared instance).

    Raises:
        DriverNotFound: nothing of that name is installed for ``kind``.
        MissingDependency: the plugin needs an extra that is not installed.
    """
    key = (kind, name)
    iface = _INTERFACES.get(key)
    if iface is None:
        base = INTERFACE_CLASSES.get(kind)
        if base is None:
            raise DriverNotFound(f"There is no interface kind {kind!r}", kind=kind, name=name)
        factory = _load_plugin(interface_namespace(kind), name, f"{kind} interface")
        iface = factory()
        if not isinstance(iface, base):
            raise DriverNotFound(
                f"Entry point {name!r} of {interface_namespace(kind)} did not produce a "
                f"{base.__name__}",
                kind=kind,
                name=name,
            )
        _INTERFACES[key] = iface
    return iface


def load_hardware_type(name: str) -> HardwareType:
    """Build the hardware type ``name`` from its entry point.

    Raises:
        DriverNotFound: nothing of that name is installed (the message lists
            what is).
        MissingDependency: the plugin needs an extra that is not installed.
    """
    factory: Callable[[], HardwareType] = _load_plugin(
        HARDWARE_TYPES_NAMESPACE, name, "hardware type"
    )
    hardware_type = factory()
    if not isinstance(hardware_type, HardwareType):
        raise DriverNotFound(f"Entry point {name!r} did not produce a HardwareType", name=name)
    return hardware_type
