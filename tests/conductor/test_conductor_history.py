"""Conductor: what it records in node history, and the retention it applies (issue 12).

Runs on MemoryStore and on a SQLite file (the ``conductor_store`` fixture).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from helpers import SECRET, T0, Clock, make_conductor, new_node, step
from test_conductor_failures import REACH

from ironic_fsm import Conductor, Config, HistoryEntry, states
from ironic_fsm.exceptions import NodeNotFound, TransitionRejected
from ironic_fsm.node import Node

HOST = "cond-1.example"

#: The event type Ironic gives a failure, by the failure state it ends in.
FAILURE_TYPES = {
    states.CLEANFAIL: "cleaning",
    states.DEPLOYFAIL: "deploying",
    states.SERVICEFAIL: "servicing",
    states.INSPECTFAIL: "inspecting",
    states.RESCUEFAIL: "rescuing",
    states.UNRESCUEFAIL: "rescuing",
    states.ADOPTFAIL: "provisioning",
    states.ERROR: "provisioning",
}


def conductor(**options: object) -> tuple[Conductor, Clock]:
    clock = Clock()
    return make_conductor(config=Config(host=HOST, **options), clock=clock), clock


def shape(entries: list[HistoryEntry]) -> list[tuple[str, str]]:
    return [(e.severity, e.event_type) for e in entries]


@pytest.mark.parametrize("state", sorted(REACH))
def test_a_failure_of_any_phase_is_recorded_with_its_last_error(state: str) -> None:
    c = make_conductor(config=Config(host=HOST))
    uuid = REACH[state](c)
    node = c.get_node(uuid)
    assert node.provision_state == state
    failures = [e for e in c.get_node_history(uuid) if e.event_type == FAILURE_TYPES[state]]
    assert len(failures) == 1
    entry = failures[0]
    assert entry.severity == "ERROR"
    assert entry.event == node.last_error
    assert entry.node_uuid == uuid
    assert entry.conductor == HOST
    assert entry.user is None


def test_a_failed_clean_step_records_the_fault_then_the_failure() -> None:
    c = make_conductor(config=Config(host=HOST))
    node = new_node(c, states.MANAGEABLE)
    c.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    node = c.get_node(node.uuid)
    history = c.get_node_history(node.name or node.uuid)
    assert shape(history) == [("ERROR", "maintenance"), ("ERROR", "cleaning")]
    assert "fault 'clean failure'" in history[0].event
    assert "disk on fire" in history[1].event
    assert history[1].event == node.last_error
    assert len({e.uuid for e in history}) == 2


def test_a_successful_lifecycle_records_nothing() -> None:
    c = make_conductor()
    node = new_node(c, states.ENROLL)
    for verb in ("manage", "provide", "deploy", "undeploy"):
        c.do_provisioning_action(node.uuid, verb)
    assert c.get_node(node.uuid).provision_state == states.AVAILABLE
    assert c.get_node_history(node.uuid) == []


def test_maintenance_set_and_unset_are_recorded_with_the_reason() -> None:
    c, clock = conductor()
    node = new_node(c, states.MANAGEABLE)
    c.update_node(node.uuid, maintenance=True, maintenance_reason="fan replacement")
    clock.advance(60)
    c.update_node(node.uuid, maintenance=False)
    c.update_node(node.uuid, extra={"rack": "r1"})  # no flag changed: nothing recorded
    history = c.get_node_history(node.uuid)
    assert shape(history) == [("INFO", "maintenance"), ("INFO", "maintenance")]
    assert "set" in history[0].event
    assert "fan replacement" in history[0].event
    assert "unset" in history[1].event
    assert history[0].created_at == T0
    assert history[1].created_at == T0 + timedelta(seconds=60)


def test_unsetting_maintenance_says_which_fault_it_cleared() -> None:
    c = make_conductor()
    node = new_node(c, states.MANAGEABLE)
    c.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    c.update_node(node.uuid, maintenance=False)
    last = c.get_node_history(node.uuid)[-1]
    assert (last.severity, last.event_type) == ("INFO", "maintenance")
    assert "fault 'clean failure' cleared" in last.event


def test_retirement_is_recorded_and_unretiring_clears_the_reason() -> None:
    c = make_conductor()
    node = new_node(c, states.ACTIVE)
    c.update_node(node.uuid, retired=True, retired_reason="end of lease")
    c.update_node(node.uuid, retired=False)
    node = c.get_node(node.uuid)
    assert node.retired is False
    assert node.retired_reason is None
    history = c.get_node_history(node.uuid)
    assert shape(history) == [("INFO", "provisioning"), ("INFO", "provisioning")]
    assert "retired: end of lease" in history[0].event
    assert "no longer retired" in history[1].event


def test_a_verb_refused_by_a_guard_is_a_warning_and_changes_nothing_else() -> None:
    def no_deploys(node: Node, verb: str, event: str, new_state: str) -> str | None:
        return "change freeze" if verb == "deploy" else None

    c = make_conductor(guards=[no_deploys], config=Config(host=HOST))
    node = new_node(c, states.AVAILABLE)
    before = c.get_node(node.uuid)
    with pytest.raises(TransitionRejected):
        c.do_provisioning_action(node.uuid, "deploy")
    assert c.get_node(node.uuid) == before  # the record, its version and reservation
    (entry,) = c.get_node_history(node.uuid)
    assert (entry.severity, entry.event_type) == ("WARNING", "provisioning")
    assert "change freeze" in entry.event
    assert "'deploy'" in entry.event


def test_a_takeover_by_another_conductor_is_recorded() -> None:
    c, _ = conductor()
    node = new_node(c, states.MANAGEABLE)
    gone = "elsewhere.example:4242:abcd"
    c.store.reserve(node.uuid, gone)
    c.store.heartbeat(gone, T0 - timedelta(hours=1))
    assert c.recover() == [node.uuid]
    (entry,) = c.get_node_history(node.uuid)
    assert (entry.severity, entry.event_type) == ("WARNING", "conductor")
    assert gone in entry.event
    assert HOST in entry.event
    assert entry.conductor == HOST


def test_a_power_discrepancy_is_recorded_with_the_next_save() -> None:
    c = make_conductor()
    node = new_node(c, states.ACTIVE, power_state=states.POWER_ON)
    with c._reserved(node.uuid) as job:
        c._record_power_discrepancy(job, states.POWER_OFF, forced=False)
        job.node.power_state = states.POWER_OFF
    (entry,) = c.get_node_history(node.uuid)
    assert (entry.severity, entry.event_type) == ("WARNING", "power")
    assert "'power off'" in entry.event
    assert c.get_node(node.uuid).power_state == states.POWER_OFF


def test_a_refused_request_drops_its_pending_history() -> None:
    c = make_conductor()
    node = new_node(c, states.ACTIVE, power_state=states.POWER_ON)

    def refused() -> None:
        with c._reserved(node.uuid) as job:
            c._record_power_discrepancy(job, states.POWER_OFF, forced=True)
            raise RuntimeError("refused")

    with pytest.raises(RuntimeError, match="refused"):
        refused()
    assert c.get_node_history(node.uuid) == []
    assert c.get_node(node.uuid).reservation is None


def test_secrets_never_reach_the_history() -> None:
    c = make_conductor()
    node = new_node(c, states.MANAGEABLE, driver_info={"ipmi_password": SECRET})
    c.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "leaky")])
    history = c.get_node_history(node.uuid)
    assert history
    assert all(SECRET not in e.event for e in history)
    assert all(SECRET not in repr(e) for e in history)


def test_nothing_is_recorded_with_node_history_off() -> None:
    c, _ = conductor(node_history=False)
    node = new_node(c, states.MANAGEABLE)
    c.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    c.update_node(node.uuid, maintenance=False)
    assert c.get_node(node.uuid).provision_state == states.CLEANFAIL
    assert c.get_node_history(node.uuid) == []


def test_history_by_name_and_one_entry_by_uuid() -> None:
    c = make_conductor()
    node = new_node(c, states.MANAGEABLE, name="web-1")
    c.update_node("web-1", maintenance=True)
    (entry,) = c.get_node_history("web-1")
    assert c.get_node_history_entry("web-1", entry.uuid) == entry
    with pytest.raises(NodeNotFound, match="no history entry"):
        c.get_node_history_entry(node.uuid, "00000000-0000-4000-8000-000000000000")
    with pytest.raises(NodeNotFound):
        c.get_node_history("no-such-node")


def test_deleting_a_node_deletes_its_history() -> None:
    c = make_conductor()
    node = new_node(c, states.MANAGEABLE)
    c.update_node(node.uuid, maintenance=True)
    c.update_node(node.uuid, maintenance=False)
    c.delete_node(node.uuid)
    again = new_node(c, states.MANAGEABLE, uuid=node.uuid)
    assert c.get_node_history(again.uuid) == []


def _flip(c: Conductor, uuid: str, times: int, clock: Clock, step_seconds: float) -> None:
    for _ in range(times):
        c.update_node(uuid, maintenance=True)
        c.update_node(uuid, maintenance=False)
        clock.advance(step_seconds)


def test_trim_keeps_the_newest_max_entries_per_node() -> None:
    c, clock = conductor(node_history_max_entries=3, node_history_cleanup_batch_count=2)
    busy, quiet = new_node(c, states.MANAGEABLE), new_node(c, states.MANAGEABLE)
    _flip(c, busy.uuid, 4, clock, 60)  # 8 entries
    _flip(c, quiet.uuid, 1, clock, 60)  # 2 entries
    newest = c.get_node_history(busy.uuid)[-3:]
    assert c.trim_node_history() == 5  # in batches of 2: 2, 2, 1
    assert c.get_node_history(busy.uuid) == newest
    assert len(c.get_node_history(quiet.uuid)) == 2
    assert c.trim_node_history() == 0


def test_trim_never_deletes_entries_younger_than_minimum_days() -> None:
    c, clock = conductor(node_history_max_entries=1, node_history_minimum_days=2)
    node = new_node(c, states.MANAGEABLE)
    _flip(c, node.uuid, 3, clock, 86400)  # two entries a day, for three days
    everything = c.get_node_history(node.uuid)
    assert len(everything) == 6
    # Now T0 + 3 days: only the entries of day one are older than two days.
    assert c.trim_node_history() == 2
    assert c.get_node_history(node.uuid) == everything[2:]
    assert c.trim_node_history(now=T0 + timedelta(days=10)) == 3
    assert c.get_node_history(node.uuid) == everything[-1:]


def test_an_abort_by_request_is_info_and_never_repeats_an_old_error() -> None:
    c = make_conductor()
    node = new_node(
        c,
        states.ACTIVE,
        driver_info={"fail_on": ["rescue_async"]},
        last_error="an old error from long ago",
    )
    c.do_provisioning_action(node.uuid, "rescue", rescue_password="pw")
    c.do_provisioning_action(node.uuid, "abort")
    assert c.get_node(node.uuid).provision_state == states.RESCUEFAIL
    (entry,) = c.get_node_history(node.uuid)
    assert (entry.severity, entry.event_type) == ("INFO", "rescuing")
    assert entry.event == "By request, the rescue operation was aborted."


def test_an_aborted_clean_wait_is_info_with_the_abort_message() -> None:
    c = make_conductor()
    node = new_node(c, states.MANAGEABLE)
    c.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "async_clean")])
    assert c.get_node(node.uuid).provision_state == states.CLEANWAIT
    c.do_provisioning_action(node.uuid, "abort")
    node = c.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    (entry,) = c.get_node_history(node.uuid)
    assert (entry.severity, entry.event_type) == ("INFO", "cleaning")
    assert entry.event == node.last_error
    assert entry.event.startswith("By request, the clean operation was aborted")
