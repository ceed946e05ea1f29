"""A verb whose first save takes the reservation, on the SQL store (SQLite and PostgreSQL).

The SQL store is a :class:`~ironic_fsm.stores.capabilities.ReservingStore`:
a verb that starts a flow decides on the copy of the node the store last
wrote (else a read), and its first save is one compare-and-set that also
takes the reservation. These tests hold it to the reservation rules: a node
someone holds is refused with ``NodeLocked`` naming the holder, a refused
verb leaves the record exactly as it was and unreserved, and a copy found
stale (another process saved since) is read again and decided again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers import FAKE_HW, Recorder, snapshot

from ironic_fsm import Conductor, Node
from ironic_fsm import states as s
from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    InvalidStateRequested,
    NodeInMaintenance,
    NodeLocked,
    NodeNotFound,
    TransitionRejected,
)
from ironic_fsm.stores import MemoryStore, SQLStore
from ironic_fsm.stores.capabilities import ReservingStore, StoreCapabilities

OTHER = "other-conductor"


@pytest.fixture
def stores(sql_url: str) -> Iterator[tuple[SQLStore, SQLStore]]:
    """Two stores on one database: ours, and another process's."""
    ours, theirs = SQLStore(sql_url), SQLStore(sql_url)
    try:
        yield ours, theirs
    finally:
        ours.close()
        theirs.close()


@pytest.fixture
def enrolled(stores: tuple[SQLStore, SQLStore]) -> tuple[Conductor, SQLStore, SQLStore, str]:
    """Our conductor on our store, the other store, and one enrolled node's UUID."""
    ours, theirs = stores
    conductor = Conductor(store=ours)
    return conductor, ours, theirs, conductor.create_node(driver=FAKE_HW).uuid


def _statements(store: SQLStore) -> list[str]:
    """The statements ``store`` sends from now on (its echo, kept here)."""
    sent: list[str] = []
    store._echo = store._sql.echo = True
    store._sql.log = sent.append
    return sent


def _stored(store: SQLStore, uuid: str) -> tuple[dict[str, Any], int, str | None]:
    node = store.get(uuid)
    return snapshot(node), node.version, node.reservation


def _refused(
    conductor: Conductor,
    theirs: SQLStore,
    uuid: str,
    verb: str,
    error: type[Exception],
    **match: str,
) -> None:
    """``verb`` is refused with ``error`` and the record, read by the other store, is as it was."""
    before = _stored(theirs, uuid)
    with pytest.raises(error, **match):
        conductor.do_provisioning_action(uuid, verb)
    assert _stored(theirs, uuid) == before


def test_the_sql_store_says_it_takes_reservations_in_a_save_and_the_memory_store_does_not(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    assert StoreCapabilities(stores[0]).reserving is stores[0]
    assert isinstance(stores[0], ReservingStore)
    assert StoreCapabilities(MemoryStore()).reserving is None


def test_save_reserving_takes_a_free_node_at_its_version_and_nothing_else(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    ours, theirs = stores
    node = Node(driver=FAKE_HW, provision_state=s.ENROLL)
    ours.create(node)
    copy = theirs.get(node.uuid)
    # Held by someone: refused naming the holder, the record as it was.
    theirs.reserve(node.uuid, OTHER)
    before = _stored(theirs, node.uuid)
    copy.provision_state = s.VERIFYING
    copy.reservation = "me"
    with pytest.raises(NodeLocked, match=f"locked by {OTHER}"):
        ours.save_reserving(copy)
    assert _stored(theirs, node.uuid) == before
    assert copy.version == 1
    theirs.release(node.uuid, OTHER)
    # Saved by someone since the copy: refused as a change, the record as it was.
    other = theirs.get(node.uuid)
    other.extra = {"theirs": True}
    theirs.save(other)
    before = _stored(theirs, node.uuid)
    with pytest.raises(ConcurrentUpdate):
        ours.save_reserving(copy)
    assert _stored(theirs, node.uuid) == before
    # Free and current: one write sets the change and the reservation, and bumps the version.
    fresh = ours.get(node.uuid)
    fresh.provision_state = s.VERIFYING
    fresh.reservation = "me"
    ours.save_reserving(fresh)
    assert (fresh.version, theirs.get(node.uuid).reservation) == (3, "me")
    assert theirs.get(node.uuid).provision_state == s.VERIFYING
    # Left free when the node says so: saved and unreserved in one write.
    theirs.release(node.uuid, "me")
    fresh.reservation = None
    fresh.provision_state = s.MANAGEABLE
    ours.save_reserving(fresh)
    assert _stored(theirs, node.uuid)[1:] == (4, None)
    theirs.delete(node.uuid)
    with pytest.raises(NodeNotFound):
        ours.save_reserving(fresh)


def test_last_written_is_the_record_as_this_store_wrote_it(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    ours, theirs = stores
    node = Node(driver=FAKE_HW, name="remembered")
    ours.create(node)
    assert theirs.last_written(node.uuid) is None  # it wrote nothing
    node.extra = {"k": "v"}
    ours.save(node)
    known = ours.last_written(node.uuid)
    assert known is not None
    assert known is not node
    assert snapshot(known) == snapshot(ours.get(node.uuid))
    assert (known.version, known.reservation) == (2, None)
    ours.delete(node.uuid)
    assert ours.last_written(node.uuid) is None


def test_a_lifecycle_sends_one_write_per_save_and_no_reservation_or_read(
    enrolled: tuple[Conductor, SQLStore, SQLStore, str],
) -> None:
    conductor, ours, _, uuid = enrolled
    sent = _statements(ours)
    for verb in ("manage", "provide", "deploy", "undeploy"):
        conductor.do_provisioning_action(uuid, verb)
    lifecycle = list(sent)
    node = ours.get(uuid)
    assert (node.provision_state, node.reservation) == (s.AVAILABLE, None)
    writes = [sql for sql in lifecycle if sql.startswith("UPDATE nodes SET")]
    assert len(writes) == len(lifecycle) == node.version - 1  # every statement a save
    taking = [sql for sql in writes if sql.endswith("AND reservation IS NULL")]
    assert len(taking) == 4  # each verb's first save took the reservation


def test_a_node_another_holds_is_refused_with_node_locked_and_left_as_it_was(
    enrolled: tuple[Conductor, SQLStore, SQLStore, str],
) -> None:
    conductor, _, theirs, uuid = enrolled
    theirs.reserve(uuid, OTHER)
    _refused(conductor, theirs, uuid, "manage", NodeLocked, match=f"{uuid} is locked by {OTHER}")


def test_a_refused_verb_writes_nothing_and_holds_nothing(
    enrolled: tuple[Conductor, SQLStore, SQLStore, str],
) -> None:
    conductor, ours, theirs, uuid = enrolled
    sent = _statements(ours)
    _refused(conductor, theirs, uuid, "provide", InvalidStateRequested)  # enroll: manage first
    assert not any(sql.startswith(("UPDATE", "INSERT", "DELETE")) for sql in sent)


def test_a_copy_another_process_changed_is_read_again_and_decided_again(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    ours, theirs = stores
    conductor, other = Conductor(store=ours), Conductor(store=theirs)
    uuid = conductor.create_node(driver=FAKE_HW).uuid
    conductor.do_provisioning_action(uuid, "manage")
    # Our copy says manageable; the other process provides the node meanwhile.
    other.do_provisioning_action(uuid, "provide")
    # Refused on the copy (deploy needs available), accepted on a new read.
    assert conductor.do_provisioning_action(uuid, "deploy").provision_state == s.ACTIVE
    # The other way round: accepted on the copy, refused on a new read.
    conductor.do_provisioning_action(uuid, "undeploy")
    other.update_node(uuid, maintenance=True, maintenance_reason="hands off")
    _refused(conductor, theirs, uuid, "deploy", NodeInMaintenance)


def test_a_node_taken_between_decision_and_save_is_refused_and_left_as_it_was(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    ours, theirs = stores
    recorder = Recorder()

    def reserve_meanwhile(node: Node, verb: str, event: str, new_state: str) -> None:
        theirs.reserve(node.uuid, OTHER)  # after the read, before the first save

    conductor = Conductor(store=ours, listeners=[recorder], guards=[reserve_meanwhile])
    uuid = conductor.create_node(driver=FAKE_HW).uuid
    before = _stored(theirs, uuid)
    recorder.clear()
    with pytest.raises(NodeLocked, match=f"Node {uuid} is locked by {OTHER}"):
        conductor.do_provisioning_action(uuid, "manage")
    after = _stored(theirs, uuid)
    assert after[0] == {**before[0], "reservation": OTHER}
    assert after[1:] == (before[1], OTHER)
    assert recorder.events == []  # nothing was saved, so nothing is told
    assert ours.node_history(uuid) == []


def test_a_node_saved_between_decision_and_save_is_decided_again_on_what_was_saved(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    ours, theirs = stores
    asked: list[str] = []

    def change_meanwhile(node: Node, verb: str, event: str, new_state: str) -> str | None:
        asked.append(node.provision_state)
        if len(asked) == 1:  # the first time only: another process saves the node
            changed = theirs.get(node.uuid)
            changed.extra = {"theirs": True}
            theirs.save(changed)
        return None

    conductor = Conductor(store=ours, guards=[change_meanwhile])
    uuid = conductor.create_node(driver=FAKE_HW).uuid
    node = conductor.do_provisioning_action(uuid, "manage")
    assert asked == [s.ENROLL, s.ENROLL]  # decided twice, the second time on the new read
    assert (node.provision_state, node.extra, node.reservation) == (
        s.MANAGEABLE, {"theirs": True}, None,
    )  # fmt: skip
    assert ours.get(uuid).extra == {"theirs": True}  # their change kept


def test_a_guard_refusal_is_decided_on_a_read_and_leaves_the_record_as_it_was(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    ours, theirs = stores
    allowed = {"manage"}

    def only(node: Node, verb: str, event: str, new_state: str) -> str | None:
        return None if verb in allowed else f"{verb} is not allowed here"

    conductor = Conductor(store=ours, guards=[only])
    uuid = conductor.create_node(driver=FAKE_HW).uuid
    conductor.do_provisioning_action(uuid, "manage")
    _refused(conductor, theirs, uuid, "provide", TransitionRejected)
    assert [e.event for e in ours.node_history(uuid)] == ["Node " + uuid + ": 'provide' "
        "(manageable -> cleaning) rejected: provide is not allowed here"]  # fmt: skip


def test_a_conductor_given_another_store_asks_that_store(
    enrolled: tuple[Conductor, SQLStore, SQLStore, str],
) -> None:
    """The capability is the store's: a memory store set later reserves, then saves."""
    conductor, ours, _, uuid = enrolled
    conductor.store = memory = MemoryStore()
    node = Node(driver=FAKE_HW)
    memory.create(node)
    assert conductor.do_provisioning_action(node.uuid, "manage").provision_state == s.MANAGEABLE
    conductor.store = ours
    assert conductor.do_provisioning_action(uuid, "manage").provision_state == s.MANAGEABLE


# -- a holder's saves: a compare-and-set on the reservation too ----------------------------
#
# A conductor whose save waited out an outage may find, when the database answers
# again, that another conductor took the node over meanwhile (it looked dead for
# longer than heartbeat_timeout). Its save must then write nothing, and never set the
# reservation back to itself: the one UPDATE names the holder in its WHERE, so the
# check costs no statement.

HOLDER_A, HOLDER_B = "cond-a:1:1", "cond-b:2:2"


def _held_by_a(store: SQLStore) -> Node:
    """A node reserved by HOLDER_A, as its flow holds it (saved once under the reservation)."""
    node = Node(driver="fake-hardware", provision_state="cleaning")
    store.create(node)
    held = store.reserve(node.uuid, HOLDER_A)
    held.extra = {"step": "a"}
    store.save_held(held, HOLDER_A)
    return held


def test_a_held_save_is_one_update_naming_the_holder(stores: tuple[SQLStore, SQLStore]) -> None:
    ours, _ = stores
    node = _held_by_a(ours)
    sent = _statements(ours)
    node.extra = {"step": "b"}
    ours.save_held(node, HOLDER_A)
    node.reservation = None  # the final save releases it in the same write
    ours.save_held(node, HOLDER_A)
    assert len(sent) == 2, sent
    assert all(s.startswith("UPDATE nodes") and "reservation = " in s for s in sent), sent
    after = ours.get(node.uuid)
    assert after.reservation is None
    assert after.extra == {"step": "b"}
    assert after.version == node.version


def test_a_save_after_a_takeover_at_the_same_version_is_refused(
    stores: tuple[SQLStore, SQLStore],
) -> None:
    """The taker reserved but has not saved yet: the version alone would let the save through."""
    ours, theirs = stores
    node = _held_by_a(ours)
    theirs.release(node.uuid, HOLDER_A)  # the takeover: the dead holder's reservation cleared...
    theirs.reserve(node.uuid, HOLDER_B)  # ...and taken, with no new version
    before = theirs.get(node.uuid)
    node.extra = {"step": "b"}
    with pytest.raises(NodeLocked, match=HOLDER_B):
        ours.save_held(node, HOLDER_A)
    node.reservation = None
    with pytest.raises(NodeLocked, match=HOLDER_B):
        ours.save_held(node, HOLDER_A)  # nor released from under its new holder
    assert theirs.get(node.uuid) == before


def test_a_save_after_a_takeover_and_a_save_is_refused(stores: tuple[SQLStore, SQLStore]) -> None:
    ours, theirs = stores
    node = _held_by_a(ours)
    theirs.release(node.uuid, HOLDER_A)
    taken = theirs.reserve(node.uuid, HOLDER_B)
    taken.extra = {"step": "a", "by": "b"}
    theirs.save_held(taken, HOLDER_B)
    node.extra = {"step": "b"}
    with pytest.raises(ConcurrentUpdate, match="changed by someone else"):
        ours.save_held(node, HOLDER_A)
    assert theirs.get(node.uuid) == taken


def test_a_save_of_a_node_released_meanwhile_is_refused(stores: tuple[SQLStore, SQLStore]) -> None:
    """Released by another (taken over, then let go): not this holder's to write or take."""
    ours, theirs = stores
    node = _held_by_a(ours)
    theirs.release(node.uuid, HOLDER_A)
    before = theirs.get(node.uuid)
    node.extra = {"step": "b"}
    with pytest.raises(ConcurrentUpdate, match=f"no longer reserved by {HOLDER_A}"):
        ours.save_held(node, HOLDER_A)
    assert theirs.get(node.uuid) == before
    assert before.reservation is None


def test_a_held_save_of_a_deleted_node_is_not_found(stores: tuple[SQLStore, SQLStore]) -> None:
    ours, theirs = stores
    node = _held_by_a(ours)
    theirs.delete(node.uuid)
    with pytest.raises(NodeNotFound):
        ours.save_held(node, HOLDER_A)
