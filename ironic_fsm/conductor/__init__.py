"""The conductor: takes verbs, drives nodes through the lifecycle, runs steps.

The conductor is the only part of ironic_fsm that does I/O: it reads and
writes the store and calls hardware interfaces. Without an ``executor`` it
works synchronously: a verb returns once the node has settled in a stable,
wait, hold or failure state. With an executor (anything with
``submit(fn, *args)``, such as :class:`concurrent.futures.ThreadPoolExecutor`)
the first transition happens in the caller and the rest in the executor.

A node is reserved in the store for the whole of an operation; a node that
is busy raises :class:`~ironic_fsm.exceptions.NodeLocked`. The node's state
and current step are saved before each step starts and after it ends, so
:meth:`Conductor.recover` can resume an interrupted flow at its step.

:class:`Conductor` is a facade: it builds one :class:`~.context.Context` (the
store's capabilities, settings, clock, identity, listeners, guards) and wires
the parts, each in the module named after it and each owning its own state,
every one getting the parts it calls at construction (see
``docs/architecture.rst``): ``reservations``, ``launcher`` (executor, hand-off,
drain), ``catalog`` (templates, runbooks), ``plans``, ``engine`` (the step
engine), ``flows``, ``nodes``, ``verbs``, ``fleet`` (the registry record),
``ownership`` (the hash rings of ``ring``), ``recovery``, ``power_sync``,
``work``, ``reconcile``, ``history``, ``ramdisk`` (the agent's lookup and
heartbeat) and ``inventories`` (what inspection reported). An operation on one node is a
:class:`~.jobs.Job`, which fires events, checkpoints, records history and
calls the driver. Each public method here delegates to one part.
"""

from __future__ import annotations

import importlib
import os
import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, overload

from ironic_fsm.agent.token import MASK
from ironic_fsm.conductor.catalog import Catalog
from ironic_fsm.conductor.common import forward, process_start, utcnow
from ironic_fsm.conductor.context import Context, Guard, Listener, Observer, Tally
from ironic_fsm.conductor.engine import StepEngine
from ironic_fsm.conductor.fleet import ConductorInfo, FleetRecord
from ironic_fsm.conductor.flows import Flows
from ironic_fsm.conductor.history import History
from ironic_fsm.conductor.jobs import Job
from ironic_fsm.conductor.launcher import Executor, Launcher
from ironic_fsm.conductor.nodes import Nodes
from ironic_fsm.conductor.notices import RecordNotices
from ironic_fsm.conductor.ownership import Ownership
from ironic_fsm.conductor.plans import Plans
from ironic_fsm.conductor.power_sync import PowerSync, PowerSyncReport
from ironic_fsm.conductor.reconcile import Reconcile
from ironic_fsm.conductor.recovery import Recovery
from ironic_fsm.conductor.registry import HardwareRegistry
from ironic_fsm.conductor.reservations import Reservations, _Reserved
from ironic_fsm.conductor.verbs import Request, Verbs
from ironic_fsm.conductor.work import Work
from ironic_fsm.config import Config
from ironic_fsm.events import Event
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError
from ironic_fsm.hardware import HardwareType
from ironic_fsm.history import HistoryEntry
from ironic_fsm.inspection_rules import RuleOutcome
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.machine import LIFECYCLE, Lifecycle
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, Store
from ironic_fsm.stores.base import CatalogEntry, NodeFields
from ironic_fsm.stores.capabilities import StoreCapabilities

if TYPE_CHECKING:  # the parts only some verbs use, and the records: imported when first built
    from ironic_fsm.conductor.allocations import Allocations
    from ironic_fsm.conductor.bios import BiosSettings
    from ironic_fsm.conductor.chassis import ChassisPart
    from ironic_fsm.conductor.console import Console
    from ironic_fsm.conductor.indicators import Indicators
    from ironic_fsm.conductor.inspection_rules import InspectionRules
    from ironic_fsm.conductor.node_media import NodeMedia
    from ironic_fsm.conductor.passthru import Passthru, PassthruResult
    from ironic_fsm.conductor.portgroups import Portgroups
    from ironic_fsm.conductor.ports import Ports
    from ironic_fsm.conductor.raid import Raid
    from ironic_fsm.conductor.ramdisk import AgentLookup, Ramdisk
    from ironic_fsm.conductor.sensors import SensorData, SensorReport
    from ironic_fsm.conductor.vifs import Vifs
    from ironic_fsm.conductor.volumes import Volumes
    from ironic_fsm.records import (
        Allocation,
        BiosSetting,
        Chassis,
        FirmwareComponent,
        InspectionRule,
        NodeInventory,
        Port,
        Portgroup,
        VolumeConnector,
        VolumeTarget,
    )


__all__ = ["Conductor", "Guard", "Listener", "Observer", "Tally"]


def _later(module: str, name: str, *uses: str) -> cached_property[Any]:
    """A part only some verbs use: ``ironic_fsm.conductor.<module>.<name>``, imported and
    built at first use, handed the context and the facade's attributes named in ``uses``.

    ``import ironic_fsm``, and a conductor that never calls the part, pay nothing for it.
    Such a part keeps no state but what it is handed, so that a second one, built by a
    thread racing the first, is the same part.
    """

    def build(conductor: Conductor) -> Any:
        part = getattr(importlib.import_module(f"ironic_fsm.conductor.{module}"), name)
        return part(conductor._ctx, *(getattr(conductor, use) for use in uses))

    return cached_property(build)


class Conductor:
    """Drives nodes through Ironic's lifecycle.

    Args:
        store: Where nodes live; ``None`` means a new :class:`MemoryStore`.
        config: Operator settings; ``None`` means Ironic's defaults.
        listeners: Callables that receive every :class:`~ironic_fsm.events.Event`.
        clock: Returns the current time as an aware UTC datetime; injected
            so tests and simulations control time.
        executor: Runs long work in the background (``submit(fn, *args)``);
            ``None`` runs everything in the calling thread.
        lifecycle: The state machine; :data:`~ironic_fsm.LIFECYCLE` or one
            derived from it.
        guards: Callables that may veto user-requested transitions.
        hand_off: Queue the work a verb or callback sets off instead of
            running it: the first transition happens here, as always, then
            the node is saved in its working state, released and announced
            for a conductor service's :meth:`claim_work` (what a CLI or API
            process does when ``ironic-fsm serve`` processes do the work).
    """

    def __init__(
        self,
        store: Store | None = None,
        config: Config | None = None,
        listeners: Iterable[Listener] = (),
        clock: Callable[[], datetime] | None = None,
        executor: Executor | None = None,
        *,
        lifecycle: Lifecycle = LIFECYCLE,
        guards: Iterable[Guard] = (),
        hand_off: bool = False,
    ) -> None:
        if type(hand_off) is not bool:
            raise InvalidParameterValue(
                f"Conductor's hand_off must be True or False, not {hand_off!r}"
            )
        config = config if config is not None else Config()
        # This conductor's identity in reservations: host, process and instance. The token
        # carries the process start time, so that a reused PID is not mistaken for this
        # process after it is gone.
        started = process_start(os.getpid()) or "0"
        holder = f"{config.host}:{os.getpid()}:{started}-{_uuid.uuid4().hex[:8]}"
        # What the store offers is asked once, here (and again only for another store).
        caps = StoreCapabilities(store if store is not None else MemoryStore())
        ctx = self._ctx = Context(
            caps, config, lifecycle, clock or utcnow, holder, HardwareRegistry(config),
            list(listeners), list(guards),
        )  # fmt: skip
        # The parts, each with its own state, wired one way: each gets what it calls.
        self._reservations = reservations = Reservations(ctx)
        self._launcher = launcher = Launcher(reservations, executor, hand_off)
        self._catalog = catalog = Catalog(ctx)
        self._plans = plans = Plans(ctx, catalog)
        self._engine = engine = StepEngine(ctx, reservations, launcher, plans)
        from ironic_fsm.conductor.inventory import Inventories  # brings the records in

        self._inventories = inventories = Inventories(ctx)
        self._flows = flows = Flows(ctx, reservations, launcher, plans, engine, inventories)
        self._nodes = Nodes(ctx, reservations)
        self._verbs = verbs = Verbs(ctx, reservations, launcher, plans, engine, flows)
        self._fleet = fleet = FleetRecord(ctx)
        self._ownership = ownership = Ownership(ctx, fleet)
        self._recovery = Recovery(ctx, reservations, launcher, engine, flows, ownership)
        self._work = Work(ctx, reservations, launcher, flows, ownership)
        # Power sync asks this facade's owns() at each node, so that a caller may put its
        # own rule in its place.
        self._power_sync = PowerSync(ctx, reservations, launcher, self._owns)
        self._reconcile = Reconcile(ctx, verbs)
        self._history = History(ctx)
        #: Who hears of record changes (:meth:`add_record_listener`).
        self._notices = RecordNotices(ctx)

    # The parts only some verbs use, built at first use (see _later). Records beside the
    # nodes, each kept by the store:
    _ports: cached_property[Ports] = _later("ports", "Ports")
    _portgroups: cached_property[Portgroups] = _later("portgroups", "Portgroups")
    _chassis: cached_property[ChassisPart] = _later("chassis", "ChassisPart")
    _allocations: cached_property[Allocations] = _later(
        "allocations", "Allocations", "_reservations"
    )
    _volumes: cached_property[Volumes] = _later("volumes", "Volumes")
    _vifs: cached_property[Vifs] = _later("vifs", "Vifs", "_reservations")
    # What a node's hardware does or reports, through its driver:
    _raid: cached_property[Raid] = _later("raid", "Raid", "_reservations")
    _media: cached_property[NodeMedia] = _later("node_media", "NodeMedia", "_reservations")
    _passthru: cached_property[Passthru] = _later(
        "passthru", "Passthru", "_reservations", "_launcher"
    )
    _bios: cached_property[BiosSettings] = _later("bios", "BiosSettings")
    _console: cached_property[Console] = _later("console", "Console", "_reservations")
    _indicators: cached_property[Indicators] = _later("indicators", "Indicators", "_reservations")
    _sensors: cached_property[SensorData] = _later("sensors", "SensorData", "_owns")
    # The ramdisk agent's lookup and heartbeat, and the rules run on what it reports:
    _ramdisk: cached_property[Ramdisk] = _later(
        "ramdisk", "Ramdisk", "_reservations", "_engine", "_ports"
    )
    _rules: cached_property[InspectionRules] = _later("inspection_rules", "InspectionRules")

    @property
    def config(self) -> Config:
        """Operator settings."""
        return self._ctx.config

    @property
    def lifecycle(self) -> Lifecycle:
        """The state machine."""
        return self._ctx.lifecycle

    @property
    def holder(self) -> str:
        """This conductor's identity in reservations and the registry: host, process, instance."""
        return self._ctx.holder

    @holder.setter
    def holder(self, holder: str) -> None:
        self._ctx.holder = holder

    @property
    def store(self) -> Store:
        """Where nodes live."""
        return self._ctx.caps.store

    @store.setter
    def store(self, store: Store) -> None:
        self._ctx.caps = StoreCapabilities(store)

    @property
    def _executor(self) -> Executor | None:
        return self._launcher.executor

    @_executor.setter
    def _executor(self, executor: Executor | None) -> None:
        self._launcher.executor = executor

    # -- hardware types, listeners, guards -----------------------------------------------------

    def served_hardware_types(self) -> tuple[str, ...]:
        """The hardware types this conductor serves: enabled (default: installed) and registered.

        Raises DriverNotFound when ``Config.enabled_hardware_types`` names one that is neither.
        """
        return self._fleet.served_types()

    def hardware_type_for(self, node: Node) -> HardwareType:
        """The hardware type that drives ``node`` (its ``driver``), as registered or installed.

        Raises:
            DriverNotFound: no hardware type of that name here.
        """
        return self._ctx.registry.driver_for(node)

    def default_interfaces(self, driver: str) -> dict[str, str | None]:
        """The implementation each interface kind of hardware type ``driver`` uses by default.

        ``{'boot': 'ipxe', 'raid': 'no-raid', ...}``: what a node that names
        none gets, by ``Config.default_<kind>_interface`` and
        ``enabled_<kind>_interfaces`` and the type's preference (Ironic's rule).

        Raises:
            DriverNotFound: no hardware type of that name here.
            InvalidParameterValue: no implementation of some kind is enabled.
        """
        defaults = self._ctx.registry.defaults(driver)
        return dict(zip(INTERFACE_KINDS, defaults, strict=True))

    def enabled_interfaces(self, driver: str) -> dict[str, list[str]]:
        """The implementations of each kind a node of hardware type ``driver`` may choose.

        Raises:
            DriverNotFound: no hardware type of that name here.
        """
        registry = self._ctx.registry
        return {kind: registry.enabled_interfaces(driver, kind) for kind in INTERFACE_KINDS}

    def add_listener(self, listener: Listener) -> None:
        """Start sending events to ``listener``."""
        self._ctx.listeners.append(listener)
        self._ctx.update_told()

    def add_guard(self, guard: Guard) -> None:
        """Let ``guard`` veto user-requested transitions."""
        self._ctx.guards.append(guard)

    def register_hardware_type(self, name: str, hardware_type: HardwareType) -> None:
        """Make ``hardware_type`` available to nodes whose ``driver`` is ``name``.

        Raises:
            InvalidParameterValue: two enabled clean steps of one interface
                share a priority (after the operator's overrides).
        """
        self._ctx.registry.register(name, hardware_type)

    # -- the fleet: this conductor in the registry, and its share of the nodes ----------------

    def register(self) -> ConductorInfo:
        """Enter the conductor registry as online, now (see :meth:`.FleetRecord.register`)."""
        return self._fleet.register()

    def heartbeat(self) -> None:
        """Tell the store this conductor is alive: for recovery, and in the registry.

        Call it periodically, well within ``Config.heartbeat_timeout``
        (``Config.heartbeat_interval``, 10 s, in Ironic): conductors elsewhere
        take over the nodes of a holder whose heartbeat expired, and see a
        conductor whose heartbeat expired as dead. The first call registers
        the conductor; after :meth:`unregister` it stays offline until
        :meth:`register`, so that a late timer cannot undo a clean stop.
        """
        ctx = self._ctx
        try:
            ctx.caps.store.heartbeat(ctx.holder, ctx.clock())  # 1. the reservations' holder
            self._fleet.heartbeat()  # 2. the registry's row
        except Exception:
            if ctx.observer is not None:
                ctx.observer.heartbeat(False)
            raise
        if ctx.observer is not None:
            ctx.observer.heartbeat(True)

    def unregister(self) -> None:
        """Go offline in the registry at once: call it when stopping cleanly."""
        self._fleet.unregister()

    def list_conductors(self) -> list[ConductorInfo]:
        """Every conductor registered in the store, alive or not, by hostname."""
        return self._fleet.list_conductors()

    def owns(self, node_uuid: str, driver: str, conductor_group: str) -> bool:
        """Whether this conductor does the work of that node (see :meth:`.Ownership.owns`)."""
        return self._ownership.owns(node_uuid, driver, conductor_group)

    def conductor_of(self, node: Any) -> str | None:
        """The host of the conductor doing the node's work (see :meth:`.Ownership.host_of`).

        ``node``: a :class:`~ironic_fsm.node.Node`, or anything with its ``uuid``,
        ``driver`` and ``conductor_group`` (a listing's row).
        """
        return self._ownership.host_of(node.uuid, node.driver, node.conductor_group)

    def _owns(self, node_uuid: str, driver: str, conductor_group: str) -> bool:
        return self.owns(node_uuid, driver, conductor_group)

    def refresh_ring(self) -> None:
        """Read the registry now; rebuild the rings if the live conductors changed."""
        self._ownership.refresh_ring()

    # -- draining ---------------------------------------------------------------------------

    def drain(self) -> None:
        """Stop taking work, and hand running flows back at their next step boundary.

        From now on ``claim_work``, ``recover`` and ``check_timeouts`` take
        nothing, a flow about to start is queued instead, and a flow running
        steps stops before its next step (its position saved, the node
        queued, released and announced) so that another conductor's
        ``claim_work`` goes on from there. Flows outside steps (verify,
        inspect, power) finish. Wait for :meth:`running` to reach 0. Not undone.
        """
        self._launcher.drain(self.holder)

    @property
    def draining(self) -> bool:
        """Whether :meth:`drain` was called."""
        return self._launcher.draining

    def running(self) -> int:
        """Flows this conductor runs now, or has submitted to its executor and not finished."""
        return self._launcher.running()

    # -- node history ---------------------------------------------------------------------------

    def get_node_history(self, ident: str) -> list[HistoryEntry]:
        """The node's history, oldest first (``[]`` on a store that keeps none)."""
        return self._history.get_node_history(ident)

    def get_node_history_entry(self, ident: str, entry_uuid: str) -> HistoryEntry:
        """One entry of the node's history, by its UUID (NodeNotFound if none)."""
        return self._history.get_node_history_entry(ident, entry_uuid)

    def trim_node_history(self, now: datetime | None = None) -> int:
        """Delete the oldest entries beyond ``node_history_max_entries`` per node; how many."""
        return self._history.trim_node_history(now)

    # -- for tests that reach one operation directly ------------------------------------------

    def _reserved(self, ident: str, *, checked: bool = False) -> _Reserved:
        return self._reservations.reserved(ident, checked=checked)

    def _record_power_discrepancy(self, job: Job, found: str, *, forced: bool) -> None:
        self._power_sync.record_power_discrepancy(job, found, forced=forced)

    # -- Catalog (catalog.py) ---------------------------------------------------

    def added_deploy_templates(self) -> dict[str, list[dict[str, Any]]]:
        """The templates given to :meth:`add_deploy_template` (this process's), as copies."""
        return self._catalog.added_deploy_templates()

    create_deploy_template = forward("_catalog", Catalog.create_deploy_template)
    create_runbook = forward("_catalog", Catalog.create_runbook)

    def get_deploy_template(self, ident: str) -> CatalogEntry:
        """The stored deploy template with this UUID or name (CatalogEntryNotFound if none)."""
        return self._catalog.get_deploy_template(ident)

    def get_runbook(self, ident: str) -> CatalogEntry:
        """The stored runbook with this UUID or name (CatalogEntryNotFound if none)."""
        return self._catalog.get_runbook(ident)

    def list_deploy_templates(self) -> list[CatalogEntry]:
        """Every stored deploy template, in creation order."""
        return self._catalog.list_deploy_templates()

    def list_runbooks(self) -> list[CatalogEntry]:
        """Every stored runbook, in creation order."""
        return self._catalog.list_runbooks()

    def update_deploy_template(self, ident: str, **fields: Any) -> CatalogEntry:
        """Change ``name``, ``steps`` or ``extra``; checked as on creation."""
        return self._catalog.update_deploy_template(ident, **fields)

    def update_runbook(self, ident: str, **fields: Any) -> CatalogEntry:
        """Change ``name``, ``steps``, ``extra``, ``public``, ``owner`` or ``disable_ramdisk``."""
        return self._catalog.update_runbook(ident, **fields)

    def delete_deploy_template(self, ident: str) -> None:
        return self._catalog.delete_deploy_template(ident)

    def delete_runbook(self, ident: str) -> None:
        return self._catalog.delete_runbook(ident)

    def add_deploy_template(self, name: str, steps: Sequence[Mapping[str, Any]]) -> None:
        """A named set of deploy steps, applied to nodes whose instance traits name it."""
        return self._catalog.add_deploy_template(name, steps)

    def add_runbook(
        self, name: str, steps: Sequence[Mapping[str, Any]], traits: Iterable[str] = ()
    ) -> None:
        """A named list of steps for manual cleaning or servicing."""
        return self._catalog.add_runbook(name, steps, traits)

    # -- Plans (plans.py) -------------------------------------------------------

    def get_clean_steps(self, ident: str, min_priority: int = 0) -> list[dict[str, Any]]:
        """The node's clean steps (operator overrides applied), highest priority first."""
        return self._plans.get_clean_steps(ident, min_priority)

    def get_deploy_steps(self, ident: str) -> list[dict[str, Any]]:
        """The node's deploy steps, highest priority first."""
        return self._plans.get_deploy_steps(ident)

    def get_service_steps(self, ident: str) -> list[dict[str, Any]]:
        """The node's service steps, highest priority first."""
        return self._plans.get_service_steps(ident)

    def validate_clean_steps(
        self, ident: str, clean_steps: Sequence[Any], disable_ramdisk: bool = False
    ) -> list[dict[str, Any]]:
        """Check a manual clean request without changing anything; return the plan."""
        return self._plans.validate_clean_steps(ident, clean_steps, disable_ramdisk)

    def validate_service_steps(
        self, ident: str, service_steps: Sequence[Any], disable_ramdisk: bool = False
    ) -> list[dict[str, Any]]:
        """Check a service request without changing anything; return the plan."""
        return self._plans.validate_service_steps(ident, service_steps, disable_ramdisk)

    def validate_deploy_steps(
        self, ident: str, deploy_steps: Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """Check a deploy request (templates included) without changing anything."""
        return self._plans.validate_deploy_steps(ident, deploy_steps)

    # -- StepEngine (engine.py) -------------------------------------------------

    def continue_node_clean(self, ident: str) -> Node:
        """An asynchronous clean step (or the ramdisk) finished: go on with the next step."""
        return self._engine.continue_node_clean(ident)

    def continue_node_deploy(self, ident: str) -> Node:
        """An asynchronous deploy step finished: go on with the next step."""
        return self._engine.continue_node_deploy(ident)

    def continue_node_service(self, ident: str) -> Node:
        """An asynchronous service step finished: go on with the next step."""
        return self._engine.continue_node_service(ident)

    # -- Flows (flows.py) -------------------------------------------------------

    continue_node_inspect = forward("_flows", Flows.continue_node_inspect)

    def get_node_inventory(self, ident: str) -> NodeInventory:
        """What the node's last inspection reported (1.81); ``ResourceNotFound`` if none."""
        return self._inventories.get_inventory(ident)

    def continue_node_rescue(self, ident: str) -> Node:
        """The rescue ramdisk is up: finish rescuing."""
        return self._flows.continue_node_rescue(ident)

    # -- Nodes (nodes.py) -------------------------------------------------------

    def get_boot_device(self, ident: str) -> dict[str, Any]:
        """``{'boot_device', 'persistent'}`` as the node's management interface reads them."""
        return self._nodes.get_boot_device(ident)

    def get_supported_boot_devices(self, ident: str) -> list[str]:
        """The boot devices the node's management interface can set."""
        return self._nodes.get_supported_boot_devices(ident)

    def set_boot_device(self, ident: str, device: str, persistent: bool = False) -> None:
        """Set the next (or every, ``persistent``) boot device; one the interface does not
        support is refused (InvalidParameterValue) before the BMC is asked to set it.
        """
        return self._nodes.set_boot_device(ident, device, persistent)

    def set_boot_mode(self, ident: str, mode: str) -> Node:
        """Set the node's boot mode (``uefi``/``bios``) on its BMC and cache it on the node."""
        return self._nodes.set_boot_mode(ident, mode)

    def set_secure_boot_state(self, ident: str, state: bool) -> Node:
        """Turn UEFI secure boot on or off on the node's BMC and cache it on the node."""
        return self._nodes.set_secure_boot_state(ident, state)

    def validate(self, ident: str) -> dict[str, str | None]:
        """Each interface's ``validate`` on a plain read: ``None`` where it passes, else why."""
        return self._nodes.validate(ident)

    def set_target_raid_config(self, ident: str, config: dict[str, Any]) -> Node:
        """Keep the node's target RAID configuration, checked by its RAID interface
        (``{}`` clears it; ``no-raid`` refuses any other with UnsupportedDriverExtension)."""
        return self._raid.set_target_raid_config(ident, config)

    def raid_logical_disk_properties(self, driver: str) -> dict[str, str]:
        """What a target's logical disks may say, for hardware type ``driver``'s default RAID
        interface: each property with what it means."""
        return self._raid.logical_disk_properties(driver)

    def attach_virtual_media(
        self, ident: str, device_type: str, image_url: str, image_download_source: str = "local"
    ) -> None:
        """Insert ``image_url`` into the node's ``device_type`` virtual media (``cdrom``,
        ``disk``, ``floppy``) through its management interface (1.89)."""
        self._media.attach_virtual_media(ident, device_type, image_url, image_download_source)

    def detach_virtual_media(self, ident: str, device_types: Iterable[str] | None = None) -> None:
        """Eject the node's virtual media (of ``device_types``, else every type)."""
        self._media.detach_virtual_media(ident, device_types)

    def list_firmware_components(self, ident: str) -> list[FirmwareComponent]:
        """The node's firmware components, as its firmware interface last reported them."""
        return self._media.list_firmware_components(ident)

    def record_firmware_components(
        self, ident: str, components: Iterable[Mapping[str, Any]]
    ) -> list[FirmwareComponent]:
        """Keep the components a firmware interface read (``component``, ``current_version``)."""
        return self._media.record_firmware_components(ident, components)

    def list_bios_settings(self, ident: str) -> list[BiosSetting]:
        """The node's BIOS settings as its BIOS interface last read or applied them, by name
        (the BMC is not asked)."""
        return self._bios.list_bios_settings(ident)

    def get_bios_setting(self, ident: str, name: str) -> BiosSetting:
        """One of :meth:`list_bios_settings`; ``ResourceNotFound`` if the node has none so named."""
        return self._bios.get_bios_setting(ident, name)

    def set_console_mode(self, ident: str, enabled: bool) -> None:
        """Start (``True``) or stop the node's console through its console interface."""
        self._console.set_console_mode(ident, enabled)

    def get_console(self, ident: str) -> dict[str, Any]:
        """``{'console_enabled': bool, 'console_info': {'type', 'url'} or None}``."""
        return self._console.get_console(ident)

    def inject_nmi(self, ident: str) -> None:
        """Send the node a non-maskable interrupt through its management interface."""
        self._console.inject_nmi(ident)

    def list_indicators(self, ident: str) -> dict[str, dict[str, dict[str, Any]]]:
        """The node's indicators by component, each with ``readonly`` and its ``states``."""
        return self._indicators.list_indicators(ident)

    def get_indicator_state(self, ident: str, name: str) -> str:
        """The state of indicator ``<indicator>@<component>``."""
        return self._indicators.get_indicator_state(ident, name)

    def set_indicator_state(self, ident: str, name: str, state: str) -> None:
        """Set indicator ``<indicator>@<component>`` to one of its states."""
        self._indicators.set_indicator_state(ident, name, state)

    def list_vendor_passthru_methods(self, ident: str) -> dict[str, dict[str, Any]]:
        """The node's vendor pass-through methods: HTTP methods, async, description, attach."""
        return self._passthru.node_methods(ident)

    def vendor_passthru(
        self, ident: str, method: str, http_method: str = "POST", args: Mapping[str, Any] = {}
    ) -> PassthruResult:
        """Call a vendor pass-through method of the node (asynchronous ones run on)."""
        return self._passthru.call_node(ident, method, http_method, args)

    def list_driver_vendor_passthru_methods(self, driver: str) -> dict[str, dict[str, Any]]:
        """Hardware type ``driver``'s pass-through methods (of its default vendor interface)."""
        return self._passthru.driver_methods(driver)

    def driver_vendor_passthru(
        self, driver: str, method: str, http_method: str = "POST", args: Mapping[str, Any] = {}
    ) -> PassthruResult:
        """Call a pass-through method of hardware type ``driver``'s default vendor interface."""
        return self._passthru.call_driver(driver, method, http_method, args)

    def create_node(self, **fields: Any) -> Node:
        """Enroll a node; any :class:`~ironic_fsm.Node` field may be given."""
        fields = self._chassis_checked(fields)
        notices = self._notices
        if notices.listeners:  # told with the UUID it will have, as Ironic's API does
            fields.setdefault("uuid", str(_uuid.uuid4()))
        with notices.around("create", lambda: Node(**fields)):
            node = self._nodes.create_node(**fields)
        notices.changed("create", "end", node)
        return node

    def get_node(self, ident: str) -> Node:
        """The node with this UUID or name."""
        return self._nodes.get_node(ident)

    # The paging keywords and filters pass through **query; the return type follows fields.
    @overload
    def list_nodes(self, *, fields: None = None, **query: Any) -> list[Node]: ...
    @overload
    def list_nodes(self, *, fields: Iterable[str], **query: Any) -> list[NodeFields]: ...

    def list_nodes(
        self, *, fields: Iterable[str] | None = None, **query: Any
    ) -> list[Node] | list[NodeFields]:
        """One page of the nodes whose fields equal the filters, in ``sort_key`` order.

        The paging keywords are the store's (:meth:`~.stores.base.ScanningStore.list`):
        ``sort_key`` (default ``created_at``) and ``sort_dir`` (``asc``);
        ``marker``, the UUID of the last node of the previous page;
        ``limit``, a cap on the page (``None``: every match). Every other
        keyword is a filter. Filters and order
        are the store's (see :func:`~ironic_fsm.stores.base.list_page`), so
        a page costs what its rows cost, not what the fleet does.

        ``fields`` (Ironic's ``fields``): for callers that need only some
        fields, one ``dict`` per node holding those fields by name, plus
        ``uuid`` always, each value as the :class:`Node` attribute has it.
        The built-in stores then read no record when every field is one
        they keep apart (:data:`~ironic_fsm.stores.base.COLUMN_FIELDS`: the
        filterable fields and the timestamps), and decode the page otherwise.

        A filter no node could ever match (an unknown field, a value of the
        wrong type, a state this lifecycle does not have) is an error, not
        an empty list; so are a marker that is no node's UUID, a bad
        ``limit``, ``sort_key`` or ``sort_dir``, and an unknown field in
        ``fields``.
        """
        return self._nodes.list_nodes(fields, query)

    def update_node(
        self,
        ident: str,
        *,
        expected_version: int | None = None,
        reset_interfaces: bool | None = None,
        **fields: Any,
    ) -> Node:
        """Change user-settable fields, with Ironic's rules for retirement and protection.

        With ``expected_version``, only if the node is still that version
        (:class:`~ironic_fsm.exceptions.ConcurrentUpdate` otherwise). A new
        ``driver`` resets the interfaces the update does not name to their
        defaults unless ``reset_interfaces`` is False (True needs a new driver).
        """
        fields = self._chassis_checked(fields)
        action = "maintenance_set" if "maintenance" in fields else "update"
        with self._notices.around(action, lambda: self._nodes.get_node(ident)):
            node = self._nodes.update_node(ident, fields, expected_version, reset_interfaces)
        self._notices.changed(action, "end", node)
        return node

    def delete_node(self, ident: str) -> None:
        """Remove a node record; allowed in manageable, enroll, adopt failed (and available)."""
        notices = self._notices
        node = self._nodes.get_node(ident) if notices.listeners else None
        with notices.around("delete", lambda: node):
            self._nodes.delete_node(ident)
        if node is not None:
            notices.changed("delete", "end", node)

    def set_power_state(self, ident: str, power_state: str, timeout: float | None = None) -> Node:
        """Power the node on or off, or reboot it, through its power interface."""
        return self._nodes.set_power_state(ident, power_state, timeout)

    # -- Verbs (verbs.py) -------------------------------------------------------

    def do_provisioning_action(
        self,
        ident: str,
        verb: str,
        *,
        clean_steps: Sequence[Any] | None = None,
        deploy_steps: Sequence[Any] | None = None,
        service_steps: Sequence[Any] | None = None,
        runbook: str | None = None,
        disable_ramdisk: bool = False,
        rescue_password: str | None = None,
        configdrive: str | dict[str, Any] | None = None,
    ) -> Node:
        """Ask the node to do ``verb`` (``manage``, ``provide``, ``deploy``, ...).

        ``configdrive`` (``deploy``/``active``/``rebuild``): the config drive the
        agent writes, as an image (gzipped, base64), its URL, or its JSON form
        (``meta_data``, ``network_data``, ``user_data``, ``vendor_data``), kept
        in ``instance_info`` and made into an image when the agent writes it.

        Without an executor, returns the node once it has settled (stable,
        wait, hold or failure state).

        Raises:
            InvalidStateRequested: the node's state does not accept the verb;
                nothing changed.
            InvalidParameterValue: arguments that do not fit the verb.
            NodeLocked: the node is busy.
            NodeInMaintenance, NodeProtected, NodeIsRetired: as Ironic refuses.
        """
        request = Request(
            verb, clean_steps, deploy_steps, service_steps, runbook, disable_ramdisk,
            rescue_password, configdrive,
        )  # fmt: skip
        return self._verbs.provision(ident, verb, request)

    def recover(self) -> list[str]:
        """Take over nodes whose holder is gone (or that this conductor's own flows left
        reserved, stopped by a database outage) and resume their flows."""
        taken = self._recovery.recover()
        if self._ctx.observer is not None:
            self._ctx.observer.took_over(taken)
        return taken

    def check_timeouts(self, now: datetime | None = None) -> list[str]:
        """Fail nodes that waited too long; resume ``wait`` steps whose time is up."""
        return self._recovery.check_timeouts(now)

    # -- Work (work.py) ---------------------------------------------------------

    def claim_work(self, limit: int | None = None) -> list[str]:
        """Reserve queued nodes this conductor owns, and run their flows; returns their UUIDs."""
        return self._work.claim_work(limit)

    # -- PowerSync (power_sync.py) ----------------------------------------------

    def sync_power_states(self, now: datetime | None = None) -> PowerSyncReport:
        """One pass of the power sync over the nodes due; see the module's description."""
        report = self._power_sync.sync_power_states(now)
        if self._ctx.observer is not None:
            self._ctx.observer.power_synced(report)
        return report

    def send_sensor_data(self) -> SensorReport:
        """One pass of the sensor collection over this conductor's nodes (Ironic's
        ``send_sensor_data`` periodic task; see :mod:`.sensors`)."""
        return self._sensors.send_sensor_data()

    # -- Reconcile (reconcile.py) -----------------------------------------------

    def reconcile(self, ident: str, wanted: str, **verb_args: Any) -> Node:
        """Take one step toward the stable state ``wanted``."""
        return self._reconcile.reconcile(ident, wanted, **verb_args)

    # -- What an operator watches: metrics and notifications (issue 23) ------------------

    def add_record_listener(self, listener: Callable[[Event, Node], None]) -> None:
        """Tell ``listener`` of each record change made here (create, update, maintenance,
        delete: ``baremetal.node.<action>.start``, ``.end`` and ``.error``, as
        :mod:`.notices` says), with the record. Notifications use it; the other
        listeners are not told of record changes.
        """
        self._notices.listeners.append(listener)

    def observe(self, observer: Observer | None) -> None:
        """Have ``observer`` hear of heartbeats, takeovers and power syncs
        (``ironic_fsm.metrics`` does); ``None`` stops it. One at a time: the
        metrics of one service.
        """
        self._ctx.observer = observer

    def count_with(self, tally: Tally | None) -> None:
        """Have ``tally`` count flows, steps and driver calls from plain tuples, no
        :class:`~ironic_fsm.events.Event` built for it (``ironic_fsm.metrics`` does);
        ``None`` stops it. One at a time.
        """
        self._ctx.tally = tally
        self._ctx.update_told()

    def count_nodes(
        self, field: str, *, maintenance: bool | None = None, reserved: bool | None = None
    ) -> dict[Any, int]:
        """How many nodes have each value of ``field`` (``provision_state``, ``driver``,
        ``conductor_group``, ``fault`` or ``reservation``), narrowed to the nodes in
        maintenance or not, held or free: from the store's indexes where it has them
        (:meth:`~ironic_fsm.stores.capabilities.StoreCapabilities.count_nodes`).
        """
        return self._ctx.caps.count_nodes(field, maintenance=maintenance, reserved=reserved)

    # -- Ramdisk (ramdisk.py): the agent's lookup and heartbeat ---------------------------------

    def agent_lookup(
        self,
        addresses: Iterable[str] = (),
        node_uuid: str | None = None,
        *,
        with_token: bool = True,
    ) -> AgentLookup:
        """The node a booted agent belongs to, and its token (given out once, then ``******``).

        Found by the agent's MAC addresses or ``node_uuid``, only in a state
        that expects an agent (NodeNotFound otherwise, as for no node). Written
        out, not forwarded: the ramdisk part is imported at its first use.
        """
        return self._ramdisk.lookup(addresses, node_uuid, with_token)

    def agent_heartbeat(
        self,
        ident: str,
        callback_url: str,
        *,
        agent_token: str | None,
        agent_version: str | None,
        agent_verify_ca: str | None = None,
    ) -> Node:
        """An agent says it is up at ``callback_url``; refused (InvalidParameterValue,
        nothing changed) without the node's token, with another URL or certificate than
        the first heartbeat's, or without a version.
        """
        observer = self._ctx.observer
        try:
            node = self._ramdisk.heartbeat(
                ident, callback_url, agent_token, agent_version, agent_verify_ca
            )
        except IronicFSMError as exc:
            if observer is not None:
                observer.agent_heartbeat(type(exc).__name__)
            raise
        if observer is not None:
            observer.agent_heartbeat("accepted")
        return node

    def agent_continue_inspection(
        self,
        inventory: Mapping[str, Any],
        plugin_data: Mapping[str, Any] | None = None,
        node_uuid: str | None = None,
        *,
        with_token: bool = False,
    ) -> AgentLookup:
        """An agent posts its inventory (``/v1/continue_inspection``): the node waiting in
        ``inspect wait`` with one of its MAC addresses (or ``node_uuid``) finishes
        inspecting. ``with_token`` (API 1.84): the answer carries the token, given out
        once as a lookup gives it. NodeNotFound for a node not waiting for inspection.
        """
        node = self._ramdisk.inspection_node(inventory, node_uuid)
        token = MASK
        if with_token:
            token = self._ramdisk.lookup((), node.uuid, True).token
        done = self._flows.continue_node_inspect(node.uuid, inventory, plugin_data)
        from ironic_fsm.conductor.ramdisk import AgentLookup  # built by then: no import cost

        return AgentLookup(done, token)

    # -- Ports (ports.py) -------------------------------------------------------

    def create_port(self, address: str, node: str, **fields: Any) -> Port:
        """A new port of ``node`` (UUID or name) with MAC ``address`` (stored in lower
        case); other fields: ``uuid`` and those of :data:`~.ports.PORT_FIELDS`.

        Raises:
            InvalidParameterValue: a field is wrong (the message names it).
            NodeNotFound: no such node.
            ResourceExists: another port has this address, name or UUID (nothing written).
            StoreUnsupported: the store keeps no ports.
        """
        return self._ports.create_port(address, node, **fields)

    def get_port(self, ident: str) -> Port:
        """The port with this UUID or name (:class:`~ironic_fsm.exceptions.ResourceNotFound`)."""
        return self._ports.get_port(ident)

    def list_ports(self, **query: Any) -> list[Port]:
        """One page of ports: filters ``node``, ``address``, ``portgroup``, ``shard``; paging
        ``limit``, ``marker`` (a port UUID), ``sort_key`` (``id``: creation), ``sort_dir``."""
        return self._ports.list_ports(**query)

    def update_port(self, ident: str, **fields: Any) -> Port:
        """Change some of a port's fields, all or nothing (``node`` moves it)."""
        return self._ports.update_port(ident, **fields)

    def delete_port(self, ident: str) -> None:
        self._ports.delete_port(ident)

    def get_node_by_addresses(self, addresses: Iterable[str]) -> Node:
        """The node whose ports have these MAC addresses (the ramdisk agent's lookup):
        :class:`~ironic_fsm.exceptions.NodeNotFound` if none, ``InvalidState`` if several."""
        return self._ports.node_by_addresses(addresses)

    # -- Portgroups (portgroups.py) ---------------------------------------------

    def create_portgroup(self, node: str, **fields: Any) -> Portgroup:
        """A new port group of ``node`` (UUID or name); fields: ``uuid`` and those of
        :data:`~.portgroups.PORTGROUP_FIELDS` (``mode`` defaults to ``active-backup``)."""
        return self._portgroups.create_portgroup(node, **fields)

    def get_portgroup(self, ident: str) -> Portgroup:
        """The port group with this UUID or name."""
        return self._portgroups.get_portgroup(ident)

    def list_portgroups(self, **query: Any) -> list[Portgroup]:
        """One page of port groups: filters ``node``, ``address``; paging as :meth:`list_ports`."""
        return self._portgroups.list_portgroups(**query)

    def update_portgroup(self, ident: str, **fields: Any) -> Portgroup:
        """Change some of a group's fields, all or nothing."""
        return self._portgroups.update_portgroup(ident, **fields)

    def delete_portgroup(self, ident: str) -> None:
        """Delete a port group without ports (``InvalidParameterValue`` while it has some)."""
        self._portgroups.delete_portgroup(ident)

    # -- Chassis (chassis.py) ---------------------------------------------------

    def create_chassis(self, **fields: Any) -> Chassis:
        """A new chassis: ``uuid``, ``description``, ``extra``."""
        return self._chassis.create_chassis(**fields)

    def get_chassis(self, uuid: str) -> Chassis:
        return self._chassis.get_chassis(uuid)

    def list_chassis(self, **page: Any) -> list[Chassis]:
        """One page of chassis (``limit``, ``marker``, ``sort_key``, ``sort_dir``)."""
        return self._chassis.list_chassis(**page)

    def update_chassis(self, uuid: str, **fields: Any) -> Chassis:
        return self._chassis.update_chassis(uuid, **fields)

    def delete_chassis(self, uuid: str) -> None:
        """Delete a chassis without nodes (``InvalidParameterValue`` while it has some)."""
        self._chassis.delete_chassis(uuid)

    def list_chassis_nodes(self, uuid: str) -> list[Node]:
        """The nodes in the chassis, in creation order."""
        return self._chassis.chassis_nodes(uuid)

    # -- Inspection rules (inspection_rules.py) ----------------------------------------------

    def create_inspection_rule(self, **fields: Any) -> InspectionRule:
        """A new rule: ``actions`` (required), ``conditions``, ``description``, ``phase``,
        ``priority`` (0 to 9999), ``sensitive``, ``uuid``; checked as Ironic checks them."""
        return self._rules.create_rule(**fields)

    def get_inspection_rule(self, uuid: str) -> InspectionRule:
        return self._rules.get_rule(uuid)

    def list_inspection_rules(self, **query: Any) -> list[InspectionRule]:
        """One page of rules (``phase``, ``limit``, ``marker``, ``sort_key``, ``sort_dir``)."""
        return self._rules.list_rules(**query)

    def update_inspection_rule(self, uuid: str, **fields: Any) -> InspectionRule:
        """Change a rule's fields (a sensitive rule stays sensitive)."""
        return self._rules.update_rule(uuid, **fields)

    def delete_inspection_rule(self, uuid: str) -> None:
        self._rules.delete_rule(uuid)

    def run_inspection_rules(
        self, node: Node, inventory: Mapping[str, Any], plugin_data: dict[str, Any] | None = None
    ) -> RuleOutcome:
        """Every ``main`` rule run on ``node`` and ``inventory``; the node is not saved
        (the outcome holds the changed copy). ``RuleFailed`` for a rule's ``fail``."""
        return self._rules.run_rules(node, inventory, plugin_data)

    def _chassis_checked(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A node's fields with ``chassis_uuid`` checked: an existing chassis, or None."""
        if "chassis_uuid" in fields:
            return {**fields, "chassis_uuid": self._chassis.check_chassis(fields["chassis_uuid"])}
        return fields

    # -- Allocations (allocations.py) -------------------------------------------

    def create_allocation(self, **fields: Any) -> Allocation:
        """Ask for a node (``resource_class``, ``traits``, ``candidate_nodes``, ``owner``;
        ``name``, ``uuid``, ``extra``) and get one at once: the allocation is returned
        ``active`` with its ``node_uuid``, or ``error`` with ``last_error``. With ``node``,
        backfill: record an allocation for that deployed node. Safe when several
        conductors allocate at once: no node is given twice."""
        return self._allocations.create_allocation(**fields)

    def get_allocation(self, ident: str) -> Allocation:
        """The allocation with this UUID or name."""
        return self._allocations.get_allocation(ident)

    def get_node_allocation(self, node: str) -> Allocation:
        """The allocation holding ``node`` (``ResourceNotFound`` if none)."""
        return self._allocations.node_allocation(node)

    def list_allocations(self, **query: Any) -> list[Allocation]:
        """One page of allocations: filters ``node``, ``resource_class``, ``state``, ``owner``;
        paging as :meth:`list_ports`."""
        return self._allocations.list_allocations(**query)

    def update_allocation(self, ident: str, **fields: Any) -> Allocation:
        """Change an allocation's ``name`` or ``extra``."""
        return self._allocations.update_allocation(ident, **fields)

    def delete_allocation(self, ident: str) -> None:
        """Delete the allocation and free its node (not an active one, unless in maintenance)."""
        self._allocations.delete_allocation(ident)

    # -- Volumes (volumes.py) ---------------------------------------------------

    def create_volume_connector(self, node: str, **fields: Any) -> VolumeConnector:
        """A new connector of ``node``: ``type``, ``connector_id`` (a pair unique across
        connectors), ``extra``, ``uuid``."""
        return self._volumes.create(self._volumes.connector, node, **fields)

    def get_volume_connector(self, uuid: str) -> VolumeConnector:
        return self._volumes.get(self._volumes.connector, uuid)

    def list_volume_connectors(self, **query: Any) -> list[VolumeConnector]:
        """One page of connectors: filter ``node``; paging as :meth:`list_ports`."""
        return self._volumes.list(self._volumes.connector, **query)

    def update_volume_connector(self, uuid: str, **fields: Any) -> VolumeConnector:
        """Change a connector (its node powered off, as Ironic requires)."""
        return self._volumes.update(self._volumes.connector, uuid, **fields)

    def delete_volume_connector(self, uuid: str) -> None:
        self._volumes.delete(self._volumes.connector, uuid)

    def create_volume_target(self, node: str, **fields: Any) -> VolumeTarget:
        """A new target of ``node``: ``volume_type``, ``volume_id``, ``boot_index`` (unique
        on the node), ``properties``, ``extra``, ``uuid``."""
        return self._volumes.create(self._volumes.target, node, **fields)

    def get_volume_target(self, uuid: str) -> VolumeTarget:
        return self._volumes.get(self._volumes.target, uuid)

    def list_volume_targets(self, **query: Any) -> list[VolumeTarget]:
        """One page of targets: filter ``node``; paging as :meth:`list_ports`."""
        return self._volumes.list(self._volumes.target, **query)

    def update_volume_target(self, uuid: str, **fields: Any) -> VolumeTarget:
        """Change a target (its node powered off, as Ironic requires)."""
        return self._volumes.update(self._volumes.target, uuid, **fields)

    def delete_volume_target(self, uuid: str) -> None:
        self._volumes.delete(self._volumes.target, uuid)

    # -- Vifs (vifs.py) ---------------------------------------------------------

    def list_vifs(self, node: str) -> list[dict[str, str]]:
        """The node's VIFs, ``[{'id': ...}]`` (none with the ``noop`` network interface)."""
        return self._vifs.list_vifs(node)

    def attach_vif(self, node: str, vif: str, **info: Any) -> None:
        """Attach a VIF to the node, recorded on a free port group or port (``info``:
        ``port_uuid`` or ``portgroup_uuid`` to choose); nothing with ``noop`` networking."""
        self._vifs.attach_vif(node, vif, **info)

    def detach_vif(self, node: str, vif: str) -> None:
        self._vifs.detach_vif(node, vif)
