"""Shared pieces for the conductor behaviour tests.

Test hardware built from the fake interfaces plus interfaces whose steps
record what ran (``node.driver_internal_info['calls']``), go asynchronous
(returning ``clean wait`` / ``wait call-back`` / ``service wait``), refuse
to be aborted, raise, or return garbage. Nothing here reaches into
``ironic_fsm`` internals: everything goes through the public conductor API
and ``Conductor.register_hardware_type``.
"""

from __future__ import annotations

import contextlib
import csv
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from ironic_fsm import Conductor, Config, HardwareType, states
from ironic_fsm.drivers.fake import (
    FakeBIOS,
    FakeBoot,
    FakeDeploy,
    FakeFirmware,
    FakeInspect,
    FakeManagement,
    FakePower,
    FakeRAID,
    FakeRescue,
)
from ironic_fsm.events import PROVISION_END, PROVISION_ERROR, PROVISION_START, Event
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import BIOSInterface, VendorInterface
from ironic_fsm.node import Node
from ironic_fsm.steps import clean_step, deploy_step, service_step
from ironic_fsm.stores import MemoryStore
from ironic_fsm.task import Task

DATA = Path(__file__).parent / "data"

#: The hardware types the helpers register.
TEST_HW = "test-hardware"
BAD_TEARDOWN_HW = "test-bad-teardown"
BAD_POWER_HW = "test-bad-power"
TEMPLATES_HW = "test-deploy-templates"
FAKE_HW = "fake-hardware"

#: A secret that must never show up in reprs, events, errors or logs.
SECRET = "Sup3r-S3cret-Pa55"

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=timezone.utc)

PROVISION_EVENTS = frozenset({PROVISION_START, PROVISION_END, PROVISION_ERROR})


# -- small utilities ---------------------------------------------------------------------


class Clock:
    """An injectable clock the test moves by hand."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now

    def at(self, seconds: float) -> datetime:
        """The time ``seconds`` after the start of the clock (not moving it)."""
        return T0 + timedelta(seconds=seconds)


class Recorder:
    """A listener that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def clear(self) -> None:
        self.events.clear()

    def names(self) -> list[str]:
        return [e.name for e in self.events]

    def provision(self) -> list[Event]:
        return [e for e in self.events if e.name in PROVISION_EVENTS]


def calls(node: Node) -> list[Any]:
    """What the recording steps recorded, in order."""
    return list(node.driver_internal_info.get("calls", []))


def hooks(node: Node) -> dict[str, int]:
    """How often StepDeploy's prepare/clean-up hooks ran."""
    return dict(node.driver_internal_info.get("hooks", {}))


def snapshot(node: Node) -> dict[str, Any]:
    """The node as a dict, minus what a mere read/reserve may bump."""
    data = node.to_dict()
    data.pop("version")
    data.pop("updated_at")
    return data


@contextlib.contextmanager
def unchanged(conductor: Conductor, uuid: str) -> Iterator[None]:
    """The stored node must be exactly as before the block: a refused request loses nothing."""
    before = snapshot(conductor.get_node(uuid))
    yield
    assert snapshot(conductor.get_node(uuid)) == before


def python_c(code: str, *argv: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, so that what it imports is its own; output captured.

    ``options`` go to :func:`subprocess.run` (``env``, ``stdin``...); a failure is the caller's
    to assert, with the captured stderr in the message.
    """
    run_options: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 120}
    run_options.update(options)
    return subprocess.run([sys.executable, "-c", code, *argv], check=False, **run_options)


def python_ok(code: str, *argv: str, **options: Any) -> str:
    """What ``code`` prints in a fresh interpreter, which must exit 0 (else its stderr shows)."""
    done = python_c(code, *argv, **options)
    assert done.returncode == 0, done.stderr
    return done.stdout


def step(interface: str, name: str, **args: Any) -> dict[str, Any]:
    """A requested clean/service step."""
    return {"interface": interface, "step": name, "args": args}


def dstep(interface: str, name: str, priority: int, **args: Any) -> dict[str, Any]:
    """A requested deploy step (deploy steps carry a priority)."""
    return {"interface": interface, "step": name, "args": args, "priority": priority}


def verb_arguments(verb: str, step_name: str) -> dict[str, object]:
    """What ``verb`` needs besides the node, as a user would pass it (steps: vendor.step_name)."""
    if verb in ("clean", "service"):
        return {f"{verb}_steps": [step("vendor", step_name)]}
    if verb == "rescue":
        return {"rescue_password": "rescue-me"}
    return {}


def load_verb_matrix() -> tuple[list[str], dict[str, dict[str, str | None]]]:
    """``(verbs, {state: {verb: target or None}})`` from tests/data/api_verb_matrix.tsv."""
    with open(DATA / "api_verb_matrix.tsv", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    header = rows[0]
    verbs = [col.split("(")[0] for col in header[1:]]
    matrix: dict[str, dict[str, str | None]] = {}
    for row in rows[1:]:
        if not row:
            continue
        matrix[row[0]] = {
            verb: (None if cell == "-" else cell) for verb, cell in zip(verbs, row[1:], strict=True)
        }
    return verbs, matrix


def matrix_events() -> dict[str, str]:
    """The verb -> event mapping written in the matrix header (``active(->deploy)``)."""
    with open(DATA / "api_verb_matrix.tsv", newline="") as fh:
        header = next(csv.reader(fh, delimiter="\t"))
    return {col.split("(")[0]: col.split("->")[1].rstrip(")") for col in header[1:]}


def _record(task: Task, name: str, **args: Any) -> None:
    info = task.node.driver_internal_info
    info.setdefault("calls", []).append(f"{name}{args}" if args else name)


def _count(task: Task, key: str) -> int:
    info = task.node.driver_internal_info
    info[key] = info.get(key, 0) + 1
    return int(info[key])


def _fails(task: Task, what: str) -> bool:
    """Whether the node asks the test interfaces to misbehave (``driver_info['fail_on']``)."""
    return what in (task.node.driver_info.get("fail_on") or ())


def _misbehave(task: Task, what: str, error: str, wait: str) -> str | None:
    """Fail with ``error`` or wait in ``wait`` when the node asks (``what``, ``what_async``)."""
    if _fails(task, what):
        raise RuntimeError(error)
    return wait if _fails(task, f"{what}_async") else None


# -- test interfaces ------------------------------------------------------------------------


class RecordingPower(FakePower):
    """Fake power that counts validate() and get_power_state() calls."""

    def validate(self, task: Task) -> None:
        _count(task, "power_validations")

    def get_power_state(self, task: Task) -> str:
        _count(task, "power_reads")
        return super().get_power_state(task)


class FailingValidatePower(FakePower):
    """Power whose validate() always fails (missing BMC address)."""

    def validate(self, task: Task) -> None:
        raise InvalidParameterValue(
            f"Node {task.node.uuid}: driver_info is missing ipmi_address", node=task.node.uuid
        )


class RecordingManagement(FakeManagement):
    @clean_step(priority=0, requires_ramdisk=False)
    def mgmt_clean(self, task: Task) -> None:
        _record(task, "mgmt_clean")


class RecordingBIOS(FakeBIOS):
    @clean_step(priority=0, requires_ramdisk=False)
    def bios_clean(self, task: Task) -> None:
        _record(task, "bios_clean")


_WAIT_STATES = {"clean": states.CLEANWAIT, "service": states.SERVICEWAIT}
_DECLARE = {"clean": clean_step, "service": service_step}


def _declared(phase: str, name: str, run: Callable[..., Any], **declared: Any) -> Any:
    """``run`` named ``name``, declared a step of ``phase`` (priority 0, no ramdisk)."""
    run.__name__ = run.__qualname__ = name
    return _DECLARE[phase](priority=0, requires_ramdisk=False, **declared)(run)


def recording_step(
    name: str, *declare: Callable[[Any], Any], record: Callable[[Task, str], object] = _record
) -> Any:
    """A step method ``name`` that runs ``record(task, name)``, declared by ``declare``
    (outermost first, as decorators read): one line per step, for interfaces of many."""

    def run(self: Any, task: Task) -> None:
        record(task, name)

    run.__name__ = run.__qualname__ = name
    for decorate in reversed(declare):
        run = decorate(run)
    return run


#: Declares a plain step of cleaning and servicing (priority 0: run only when asked).
CLEAN_AND_SERVICE = (
    clean_step(priority=0, requires_ramdisk=False),
    service_step(requires_ramdisk=False),
)


def _waiting(phase: str, name: str, **declared: Any) -> Any:
    """A step method that records its call and waits in its phase's wait state."""

    def run(self: Any, task: Task) -> str:
        _record(task, name)
        return _WAIT_STATES[phase]

    return _declared(phase, name, run, **declared)


def _rerun(phase: str, name: str) -> Any:
    """A step method whose first run asks to be run again on continuation and waits."""

    def run(self: Any, task: Task) -> str | None:
        if _count(task, f"{name}_runs") == 1:
            task.node.driver_internal_info[f"skip_current_{phase}_step"] = False
            _record(task, f"{name}#1")
            return _WAIT_STATES[phase]
        _record(task, f"{name}#2")
        return None

    return _declared(phase, name, run)


class StepVendor(VendorInterface):
    """Vendor steps for every situation; all priority 0 (run only when asked or overridden)."""

    # plain recording steps, for cleaning and servicing
    step_a = recording_step("step_a", *CLEAN_AND_SERVICE)
    step_b = recording_step("step_b", *CLEAN_AND_SERVICE)
    step_c = recording_step("step_c", *CLEAN_AND_SERVICE)

    @clean_step(
        priority=0,
        requires_ramdisk=False,
        argsinfo={
            "size": {"description": "How big", "required": True},
            "label": {"description": "A label", "required": False},
        },
    )
    def with_args(self, task: Task, size: int, label: str = "") -> None:
        _record(task, "with_args", size=size, label=label)

    # asynchronous steps: they wait, or ask to be run again on continuation
    async_clean = _waiting("clean", "async_clean", abortable=True)
    async_noabort = _waiting("clean", "async_noabort")
    again = _rerun("clean", "again")
    async_service = _waiting("service", "async_service", abortable=True)
    async_service_noabort = _waiting("service", "async_service_noabort")
    again_service = _rerun("service", "again_service")

    # failing steps
    @clean_step(priority=0, requires_ramdisk=False)
    def boom(self, task: Task) -> None:
        _record(task, "boom")
        raise RuntimeError("disk on fire")

    @service_step(requires_ramdisk=False)
    def boom_service(self, task: Task) -> None:
        _record(task, "boom_service")
        raise RuntimeError("firmware bricked")

    @clean_step(priority=0, requires_ramdisk=False)
    def garbage(self, task: Task) -> str:
        _record(task, "garbage")
        return "banana"

    @clean_step(priority=0, requires_ramdisk=False)
    def leaky(self, task: Task) -> None:
        """Fails with an error that quotes the BMC password (a careless driver)."""
        password = task.node.driver_info.get("ipmi_password")
        raise RuntimeError(f"login as admin/{password} refused")

    @clean_step(
        priority=0,
        requires_ramdisk=False,
        argsinfo={"bmc_password": {"description": "BMC password", "required": True}},
    )
    def secret_boom(self, task: Task, bmc_password: str) -> None:
        _record(task, "secret_boom")
        raise RuntimeError("BMC refused the login")


class StepDeploy(FakeDeploy):
    """Fake deploy plus recording, asynchronous and failing deploy steps.

    The preparation and clean-up hooks count their calls in
    ``driver_internal_info['hooks']`` (``{'prepare_cleaning': 1, ...}``).
    """

    def _hook(self, task: Task, name: str) -> None:
        hooks = task.node.driver_internal_info.setdefault("hooks", {})
        hooks[name] = hooks.get(name, 0) + 1

    def prepare(self, task: Task) -> None:
        self._hook(task, "prepare")

    def clean_up(self, task: Task) -> None:
        self._hook(task, "clean_up")

    def prepare_cleaning(self, task: Task) -> str | None:
        self._hook(task, "prepare_cleaning")
        return None

    def tear_down_cleaning(self, task: Task) -> None:
        self._hook(task, "tear_down_cleaning")

    def prepare_service(self, task: Task) -> str | None:
        self._hook(task, "prepare_service")
        return None

    def tear_down_service(self, task: Task) -> None:
        self._hook(task, "tear_down_service")

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        _record(task, "deploy")
        return super().deploy(task)

    @deploy_step(priority=0)
    def async_deploy(self, task: Task) -> str:
        _record(task, "async_deploy")
        return states.DEPLOYWAIT

    @deploy_step(priority=0, abortable=False)
    def noabort_deploy(self, task: Task) -> str:
        _record(task, "noabort_deploy")
        return states.DEPLOYWAIT

    @deploy_step(priority=0)
    def again_deploy(self, task: Task) -> str | None:
        if _count(task, "again_deploy_runs") == 1:
            task.node.driver_internal_info["skip_current_deploy_step"] = False
            _record(task, "again_deploy#1")
            return states.DEPLOYWAIT
        _record(task, "again_deploy#2")
        return None

    @deploy_step(priority=0)
    def fail_deploy(self, task: Task) -> None:
        _record(task, "fail_deploy")
        raise RuntimeError("image checksum mismatch")

    def take_over(self, task: Task) -> None:
        if _fails(task, "adopt"):
            raise RuntimeError("cannot take over")


class FailingTearDownDeploy(StepDeploy):
    """A deploy interface whose tear_down fails."""

    def tear_down(self, task: Task) -> str | None:
        raise RuntimeError("disk would not wipe")


class FlakyInspect(FakeInspect):
    def inspect_hardware(self, task: Task) -> str:
        wait = _misbehave(task, "inspect", "no inventory", states.INSPECTWAIT)
        return wait or super().inspect_hardware(task)

    def continue_inspection(
        self, task: Task, inventory: Any, plugin_data: Any = None
    ) -> str | None:
        task.node.properties.update(inventory)
        return None


class FlakyRescue(FakeRescue):
    def rescue(self, task: Task) -> str:
        wait = _misbehave(task, "rescue", "rescue ramdisk did not boot", states.RESCUEWAIT)
        return wait or super().rescue(task)

    def clean_up(self, task: Task) -> None:
        _count(task, "rescue_clean_ups")

    def unrescue(self, task: Task) -> str:
        if _fails(task, "unrescue"):
            raise RuntimeError("instance did not boot")
        return super().unrescue(task)


class DeployStepsBIOS(BIOSInterface):
    """Deploy steps whose priorities templates and user steps override in the deploy tests."""

    b1 = recording_step("b1", deploy_step(priority=0))
    b2 = recording_step("b2", deploy_step(priority=0))
    b3 = recording_step("b3", deploy_step(priority=70))
    b4 = recording_step("b4", deploy_step(priority=100))


def build_hardware(**overrides: Any) -> HardwareType:
    """The test hardware type: fake interfaces plus the test interfaces above."""
    kinds: dict[str, Any] = {
        "power": RecordingPower(),
        "management": RecordingManagement(),
        "deploy": StepDeploy(),
        "boot": FakeBoot(),
        "bios": RecordingBIOS(),
        "raid": FakeRAID(),
        "inspect": FlakyInspect(),
        "rescue": FlakyRescue(),
        "vendor": StepVendor(),
        "firmware": FakeFirmware(),
    }
    kinds.update(overrides)
    return HardwareType(**kinds, description="ironic_fsm test hardware")


def register_test_hardware(conductor: Conductor) -> None:
    conductor.register_hardware_type(TEST_HW, build_hardware())
    conductor.register_hardware_type(
        BAD_TEARDOWN_HW, build_hardware(deploy=FailingTearDownDeploy())
    )
    conductor.register_hardware_type(BAD_POWER_HW, build_hardware(power=FailingValidatePower()))
    conductor.register_hardware_type(TEMPLATES_HW, build_hardware(bios=DeployStepsBIOS()))


#: Makes the store of each make_conductor() call; conftest.py switches it to
#: SQLite files so that the conductor tests run on both stores.
STORE_FACTORY: Callable[[], Any] = MemoryStore


def make_conductor(
    *,
    config: Config | None = None,
    clock: Clock | None = None,
    listeners: Iterable[Any] = (),
    guards: Iterable[Any] = (),
    store: Any = None,
    register: bool = True,
) -> Conductor:
    """A synchronous conductor on a fresh store, with the test hardware registered."""
    conductor = Conductor(
        store=store if store is not None else STORE_FACTORY(),
        config=config,
        listeners=listeners,
        clock=clock,
        guards=guards,
    )
    if register:
        register_test_hardware(conductor)
    return conductor


def new_node(
    conductor: Conductor, state: str = states.ENROLL, driver: str = TEST_HW, **fields: Any
) -> Node:
    """Import a node directly in ``state``."""
    return conductor.create_node(provision_state=state, driver=driver, **fields)


def watched(state: str = states.ENROLL, **fields: Any) -> tuple[Recorder, Conductor, Node]:
    """A conductor whose every event a ``Recorder`` hears, and a node of it in ``state``."""
    recorder = Recorder()
    conductor = make_conductor(listeners=[recorder])
    return recorder, conductor, new_node(conductor, state, **fields)


# -- one scenario, three phases ---------------------------------------------------------------


@dataclass(frozen=True)
class PhaseCase:
    """How a test drives cleaning, deployment or servicing, so one test covers all three.

    Clean and service steps are requested on the vendor interface in the
    user's order; deploy steps need priorities, so :meth:`steps` gives
    them falling priorities above the core step, which runs last
    (:attr:`tail`). The test hardware has no plain deploy steps:
    :meth:`plain` names a recording step for cleaning and servicing, and
    nothing for deployment.
    """

    name: str
    start: str
    verb: str
    wait: str
    hold: str
    fail: str
    done: str
    target: str
    async_step: str
    noabort_step: str
    again_step: str
    #: A step that raises, and the text of its error.
    boom_step: str
    boom_text: str
    #: What a successful run records after the requested steps.
    tail: tuple[str, ...]
    #: State and target after ``abort`` of an abortable step or a hold.
    aborted: str
    aborted_target: str | None
    #: A failure or abort leaves the node showing the step (deployment only).
    keeps_step: bool
    #: What a timed-out wait sets as the fault (and maintenance); None: nothing.
    fault: str | None

    @property
    def step_field(self) -> str:
        return f"{self.name}_step"

    @property
    def step_iface(self) -> str:
        return "deploy" if self.name == "deploy" else "vendor"

    def plain(self, name: str) -> tuple[str, ...]:
        return () if self.name == "deploy" else (name,)

    def steps(self, *names: str | dict[str, Any]) -> list[dict[str, Any]]:
        """Requested steps by name (a dict is taken as it is, plus a priority if deploying)."""
        out = []
        for index, entry in enumerate(names):
            if isinstance(entry, dict):
                requested = dict(entry)
            elif entry in ("hold", "wait"):
                requested = {"interface": "deploy", "step": entry, "args": {}}
            else:
                requested = step(self.step_iface, entry)
            if self.name == "deploy":
                requested["priority"] = 150 - index
            out.append(requested)
        return out

    def new_node(self, conductor: Conductor, **fields: Any) -> Node:
        return new_node(conductor, self.start, **fields)

    def run(self, conductor: Conductor, uuid: str, *names: str | dict[str, Any]) -> Node:
        """Start the phase on the node with these steps."""
        return conductor.do_provisioning_action(
            uuid, self.verb, **{f"{self.name}_steps": self.steps(*names)}
        )

    def resume(self, conductor: Conductor, uuid: str) -> Node:
        """``continue_node_<phase>``."""
        method: Callable[[str], Node] = getattr(conductor, f"continue_node_{self.name}")
        return method(uuid)


# One column per phase, so that the phases read side by side.
_PHASE_COLUMNS: dict[str, tuple[Any, Any, Any]] = {
    #                  cleaning                 deployment               servicing
    "name":           ("clean",                 "deploy",                "service"),
    "start":          (states.MANAGEABLE,       states.AVAILABLE,        states.ACTIVE),
    "verb":           ("clean",                 "deploy",                "service"),
    "wait":           (states.CLEANWAIT,        states.DEPLOYWAIT,       states.SERVICEWAIT),
    "hold":           (states.CLEANHOLD,        states.DEPLOYHOLD,       states.SERVICEHOLD),
    "fail":           (states.CLEANFAIL,        states.DEPLOYFAIL,       states.SERVICEFAIL),
    "done":           (states.MANAGEABLE,       states.ACTIVE,           states.ACTIVE),
    "target":         (states.MANAGEABLE,       states.ACTIVE,           states.ACTIVE),
    "async_step":     ("async_clean",           "async_deploy",          "async_service"),
    "noabort_step":   ("async_noabort",         "noabort_deploy",        "async_service_noabort"),
    "again_step":     ("again",                 "again_deploy",          "again_service"),
    "boom_step":      ("boom",                  "fail_deploy",           "boom_service"),
    "boom_text":      ("disk on fire",          "image checksum mismatch", "firmware bricked"),
    "tail":           ((),                      ("deploy",),             ()),
    "aborted":        (states.CLEANFAIL,        states.DEPLOYFAIL,       states.ACTIVE),
    "aborted_target": (states.MANAGEABLE,       states.ACTIVE,           None),
    "keeps_step":     (False,                   True,                    False),
    "fault":          ("clean failure",         None,                    "service failure"),
}  # fmt: skip
CLEAN_CASE, DEPLOY_CASE, SERVICE_CASE = (
    PhaseCase(**{field: column[index] for field, column in _PHASE_COLUMNS.items()})
    for index in range(3)
)

#: For ``@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)``.
PHASE_CASES = (CLEAN_CASE, DEPLOY_CASE, SERVICE_CASE)
PHASE_IDS = [case.name for case in PHASE_CASES]
#: The phases that run the user's own step list (``clean_steps``, ``service_steps``).
USER_STEP_CASES = (CLEAN_CASE, SERVICE_CASE)
USER_STEP_IDS = [case.name for case in USER_STEP_CASES]


# -- store reads ---------------------------------------------------------------------------


def expected_order(nodes: list[Node], sort_key: str, sort_dir: str) -> list[str]:
    """The contract's order, computed independently: unset first, then value, then creation."""
    position = {n.uuid: i for i, n in enumerate(nodes)}

    def key(node: Node) -> tuple[Any, ...]:
        value = getattr(node, sort_key)
        if sort_key == "uuid":
            return (value,)
        return (value is not None, value if value is not None else 0, position[node.uuid])

    ordered = sorted(nodes, key=key, reverse=sort_dir == "desc")
    return [n.uuid for n in ordered]


class DecodeCounter:
    """Counts the node records decoded (every store read goes through ``Node.from_json``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = Node.from_json.__func__  # type: ignore[attr-defined]

        def counted(cls: type[Node], text: str | bytes) -> Node:
            self.count += 1
            return original(cls, text)  # type: ignore[no-any-return]

        monkeypatch.setattr(Node, "from_json", classmethod(counted))


# -- executors ---------------------------------------------------------------------------


class ManualExecutor:
    """An executor that runs submitted work only when the test says so."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Any, tuple[Any, ...]]] = []

    def submit(self, fn: Any, /, *args: Any) -> None:
        self.jobs.append((fn, args))

    def run_all(self) -> None:
        while self.jobs:
            fn, args = self.jobs.pop(0)
            fn(*args)


# -- BMC peers -----------------------------------------------------------------------------


class _Stoppable(Protocol):
    def stop(self) -> None: ...


_Peer = TypeVar("_Peer", bound=_Stoppable)


def stopped_after(peer: _Peer) -> Iterator[_Peer]:
    """A fixture's body for a started peer: ``yield from stopped_after(start_bmc(...))``.

    The peer (BMC, emulator, simulator) is stopped by its PID however the
    tests that used it ended.
    """
    try:
        yield peer
    finally:
        peer.stop()


def manageable_on(conductor: Conductor, driver: str, driver_info: dict[str, Any]) -> Node:
    """A node enrolled and managed (its BMC reached): it must end manageable."""
    node = conductor.create_node(driver=driver, driver_info=driver_info)
    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    return node


def clean_one(conductor: Conductor, node: Node, interface: str, step: str, **args: Any) -> Node:
    """A manual clean of one step, with ``args`` when there are any."""
    spec: dict[str, Any] = {"interface": interface, "step": step}
    if args:
        spec["args"] = args
    return conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[spec])


def task_for(name: str, hardware: HardwareType, driver_info: dict[str, Any], **fields: Any) -> Task:
    """A task on a new node of hardware type ``name``, for driver-level tests."""
    node = Node(driver=name, driver_info=driver_info, **fields)
    return Task(node=node, driver=hardware, config=Config())


_T = TypeVar("_T")


def once_back(call: Callable[[], _T], timeout: float = 60) -> _T:
    """``call()`` once the store answers again after an outage (a pool backs off meanwhile)."""
    import time

    from ironic_fsm.exceptions import StoreError

    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except StoreError:
            assert time.monotonic() < deadline, f"the store never came back for {call}"
            time.sleep(0.1)


def metric_samples(metrics: Any) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of one ``Metrics.exposition()``, by name and labels, as Prometheus'
    own parser (prometheus_client's) reads the text."""
    from prometheus_client.parser import text_string_to_metric_families

    found = {}
    for family in text_string_to_metric_families(metrics.exposition()[0].decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found
