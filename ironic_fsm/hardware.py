"""Hardware types, and loading them (and interfaces) from plugins.

A :class:`HardwareType` bundles one interface per kind. Plugins reach
ironic_fsm only through stevedore, here: hardware types are entry points in
:data:`HARDWARE_TYPES_NAMESPACE`, interfaces in
``ironic_fsm.hardware.interfaces.<kind>``. stevedore is imported on first
use, so ``import ironic_fsm`` does not scan entry points.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import attrs

from ironic_fsm.exceptions import (
    DriverNotFound,
    IncompatibleInterface,
    InterfaceNotFound,
    InvalidParameterValue,
    MissingDependency,
)
from ironic_fsm.interfaces import (
    INTERFACE_CLASSES,
    INTERFACE_KINDS,
    NO_OP_NAMES,
    BaseInterface,
    BIOSInterface,
    BootInterface,
    ConsoleInterface,
    DeployInterface,
    FirmwareInterface,
    InspectInterface,
    ManagementInterface,
    NetworkInterface,
    PowerInterface,
    RAIDInterface,
    RescueInterface,
    StorageInterface,
    VendorInterface,
    no_op_class,
)

__all__ = [
    "HARDWARE_TYPES_NAMESPACE",
    "HardwareType",
    "installed_hardware_types",
    "installed_interfaces",
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
    """The name of each interface ``hardware_type`` uses, as Ironic names them.

    See :meth:`HardwareType.name_of`: ``None`` only for a class registered
    in code that names itself nowhere.
    """
    return {kind: hardware_type.name_of(kind) for kind in INTERFACE_KINDS}


def _class_name(kind: str, cls: type) -> str | None:
    key = (kind, cls)
    if key not in _CLASS_NAMES:
        name = None
        if getattr(cls, "no_op", False):
            name = NO_OP_NAMES[kind]
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
    """The shared do-nothing interface of ``kind`` (Ironic's ``no-<kind>``, or ``noop``)."""
    iface = _NOOPS.get(kind)
    if iface is None:
        iface = _NOOPS[kind] = no_op_class(kind)()
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


def _names(value: Mapping[str, Iterable[str]]) -> Mapping[str, tuple[str, ...]]:
    return {kind: tuple(dict.fromkeys(names)) for kind, names in value.items()}


@attrs.frozen
class HardwareType:
    """One interface per kind (its default), and the other implementations it supports.

    ``HardwareType(power=MyPower(), deploy=MyDeploy())``; kinds left out get
    the kind's no-op interface (Ironic's ``no-<kind>``). A node picks another
    implementation of a kind by name, through its ``<kind>_interface``
    field, among those the type supports (Ironic's
    ``supported_<kind>_interfaces``): the instances in ``alternatives``
    (``{'boot': {'pxe': PXEBoot()}}``) and the names in ``supported``
    (``{'boot': ['ipxe', 'pxe']}``), installed interface plugins loaded on
    first use from the entry-point group
    ``ironic_fsm.hardware.interfaces.<kind>``. :meth:`supported_interfaces`
    gives them in order of preference: the default instance first unless
    ``supported`` names it, then ``supported``'s order, then ``alternatives``.
    The conductor's configuration then enables some of them and picks each
    kind's default.

    ``any_interface``: the type accepts any installed implementation, not
    only those it lists (Ironic's ``fake-hardware`` does, for testing).
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
    console: ConsoleInterface = _interface("console")
    network: NetworkInterface = _interface("network")
    storage: StorageInterface = _interface("storage")
    alternatives: Mapping[str, Mapping[str, BaseInterface]] = attrs.field(
        factory=dict, kw_only=True
    )
    supported: Mapping[str, tuple[str, ...]] = attrs.field(
        factory=dict, kw_only=True, converter=_names
    )
    description: str = attrs.field(default="", kw_only=True)
    any_interface: bool = attrs.field(default=False, kw_only=True)

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

    def name_of(self, kind: str) -> str | None:
        """The name of this type's default ``kind`` interface, as a node's field would say it.

        Its key in ``alternatives`` if it is there, else the name of the
        entry point of its class (``no-raid`` and ``noop`` for the no-op
        ones); ``None`` for a class registered in code only.
        """
        iface = getattr(self, kind)
        for name, other in self.alternatives.get(kind, {}).items():
            if other is iface:
                return name
        return _class_name(kind, type(iface))

    def supported_interfaces(self, kind: str) -> tuple[str, ...]:
        """The names of the ``kind`` implementations this type supports, preferred first."""
        listed = self.supported.get(kind, ())
        default = self.name_of(kind)
        # The default instance leads unless ``supported`` places it.
        first = () if default is None or default in listed else (default,)
        return tuple(dict.fromkeys((*first, *listed, *self.alternatives.get(kind, {}))))

    def implementation(self, kind: str, name: str) -> BaseInterface:
        """The ``kind`` implementation called ``name``: an instance of this type, else a plugin.

        Raises:
            InterfaceNotFound: nothing of that name is installed for ``kind``.
            MissingDependency: the plugin needs an extra that is not installed.
        """
        options = self.alternatives.get(kind, {})
        if name in options:
            return options[name]
        iface: BaseInterface = getattr(self, kind)
        if name == self.name_of(kind):
            return iface
        try:
            return load_interface(kind, name)
        except DriverNotFound as error:
            valid = list(error.details.get("installed", []))
            raise InterfaceNotFound(
                f"Could not find the following interface in the '{interface_namespace(kind)}' "
                f"entrypoint: {name}. Valid interfaces are {valid}.",
                kind=kind,
                name=name,
                valid=valid,
            ) from None

    def select(self, choices: Mapping[str, str | None]) -> HardwareType:
        """This type with the interfaces a node chose by name (``{'boot': 'pxe'}``).

        Only the names this type supports are accepted (any installed one
        with ``any_interface``); ``None`` keeps the default.

        Raises:
            IncompatibleInterface: a name this type does not support.
            InterfaceNotFound: a name nothing installed provides.
            MissingDependency: its plugin needs an extra that is not installed.
        """
        picked: dict[str, Any] = {}
        for kind, name in choices.items():
            if name is None or name == self.name_of(kind):
                continue
            if not self.any_interface and name not in self.supported_interfaces(kind):
                known = self.supported_interfaces(kind)
                raise IncompatibleInterface(
                    f"{kind} interface implementation '{name}' is not supported by this "
                    f"hardware type; supported: {', '.join(known) or 'only the default'}",
                    kind=kind,
                    name=name,
                    valid=list(known),
                )
            picked[kind] = self.implementation(kind, name)
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


def installed_interfaces(kind: str) -> list[str]:
    """Names of the ``kind`` implementations installed as entry points, sorted (not loaded)."""
    from importlib.metadata import entry_points

    return sorted({str(ep.name) for ep in entry_points(group=interface_namespace(kind))})


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
        if isinstance(factory, type) and issubclass(factory, BaseInterface):
            factory.check_loadable()
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
