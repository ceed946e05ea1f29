"""The cheaper save and history paths (issues 10 and 12) refuse and hide what the full ones did.

MemoryStore checks only the fields that are not the very objects of the
stored snapshot; scrubbing skips flat dicts without a secret-looking key;
``driver_internal_info`` without a waiting key skips the wake-time parse;
history UUIDs are cut from one hex string. Each test below puts one of
those shortcuts where a wrong answer would show.
"""

from __future__ import annotations

import uuid as _uuid
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

import pytest

from ironic_fsm import Conductor, Config
from ironic_fsm import history as h
from ironic_fsm.conductor.common import scrub_node
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.masking import MASK, scrub, secret_values
from ironic_fsm.node import Node, check_storable, freeze, freeze_checked, thaw
from ironic_fsm.stores import MemoryStore

UTC = timezone.utc


class _Text(str):
    """Equal to a plain string, but not one: a store must not keep it."""


def _stored(store: MemoryStore, **fields: Any) -> Node:
    node = Node(name="margin", driver_info={"ipmi_address": "10.0.0.1"}, **fields)
    store.create(node)
    return store.get(node.uuid)


# -- MemoryStore: only the changed fields are checked, and every changed one is --------------


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("provision_state", _Text("enroll")),  # equal to the stored value, not the same object
        ("version", 1.0),  # equal to the stored version: the version check lets it by
        ("maintenance", 0),  # equal to False
        ("driver", "fake\x00hardware"),
        ("uuid", "NOT-A-UUID"),
        ("uuid", ["unhashable"]),
        ("conductor_group", "Upper"),
        ("updated_at", datetime(2026, 1, 1)),  # naive
        ("last_error", 42),
        ("traits", ["CUSTOM_OK", ""]),
        ("traits", ("CUSTOM_TUPLE",)),
        ("driver_info", [("ipmi_address", "10.0.0.1")]),
        ("clean_step", "not a dict"),
    ],
)
def test_save_refuses_a_changed_field_of_the_wrong_shape(field: str, bad: Any) -> None:
    store = MemoryStore()
    node = _stored(store)
    uuid, before = node.uuid, store.get(node.uuid)
    setattr(node, field, bad)
    with pytest.raises(InvalidParameterValue) as caught:
        store.save(node)
    assert caught.value.details.get("field") == field
    after = store.get(uuid)
    assert after == before
    assert after.reservation is None


def test_save_refuses_what_json_would_change_in_a_container() -> None:
    store = MemoryStore()
    node = _stored(store)
    before = store.get(node.uuid)
    node.extra["pair"] = (1, 2)
    with pytest.raises(InvalidParameterValue, match="JSON-serializable"):
        store.save(node)
    assert store.get(node.uuid) == before


def test_unchanged_fields_of_another_stored_node_still_count_as_changed() -> None:
    """Identity with *this* node's snapshot spares a check, not equality with any value."""
    store = MemoryStore()
    node = _stored(store)
    node.provision_state = _Text(node.provision_state)
    with pytest.raises(InvalidParameterValue):
        store.save(node)
    node.provision_state = "manageable"
    store.save(node)
    assert store.get(node.uuid).provision_state == "manageable"


def test_create_checks_every_field() -> None:
    store = MemoryStore()
    node = Node()
    node.power_state = 5  # type: ignore[assignment]
    with pytest.raises(InvalidParameterValue) as caught:
        store.create(node)
    assert caught.value.details.get("field") == "power_state"
    assert store.list() == []


def test_freeze_checked_agrees_with_check_storable_and_freeze() -> None:
    node = Node(name="agree", traits=["CUSTOM_A"], extra={"k": [1, 2.5, None]})
    assert freeze_checked(node, None) == freeze(node)
    assert thaw(freeze(node)) == node
    node.retired_reason = "x\x00y"
    assert freeze_checked(node, None) is None
    with pytest.raises(InvalidParameterValue):
        check_storable(node)


def test_freeze_checked_skips_only_the_fields_of_its_snapshot() -> None:
    node = Node(name="since")
    since = freeze(node)
    # A value check_storable refuses, put in the snapshot as if stored: it is trusted there.
    node.description = "fine"
    assert freeze_checked(node, since) is not None
    node.description = 5  # type: ignore[assignment]
    assert freeze_checked(node, since) is None


# -- the wake time: skipped only when no key ends like a waiting one -------------------------


def test_a_waiting_key_is_found_among_others() -> None:
    store = MemoryStore()
    node = _stored(store)
    due = datetime(2026, 1, 1, tzinfo=UTC)
    node.driver_internal_info = {"a": 1, "cleaning_wait_until": due.isoformat(), "z": "x"}
    store.save(node)
    assert [n.uuid for n in store.waking(due)] == [node.uuid]
    assert store.waking(due - timedelta(seconds=1)) == []


def test_a_key_that_only_contains_the_suffix_is_not_waiting() -> None:
    store = MemoryStore()
    node = _stored(store)
    node.driver_internal_info = {"x_wait_until_not": "2026-01-01T00:00:00+00:00"}
    store.save(node)
    assert store.waking(datetime(2100, 1, 1, tzinfo=UTC)) == []


# -- scrubbing: the flat-dict shortcut finds what the full walk finds ------------------------


@pytest.mark.parametrize(
    ("driver_info", "instance_info"),
    [
        ({}, {}),
        ({"bench_fail": True}, {}),
        ({"ipmi_address": "10.0.0.1", "IPMI_Password": "hunter22"}, {}),
        ({"ipmi_address": "10.0.0.1"}, {"image_auth_token": "tok-abc"}),
        ({"nested": {"redfish_password": "deep-secret"}}, {}),
        ({"listed": [{"ssh_key": "ssh-rsa AAAA"}]}, {}),
        ({1: "numeric key", "secret": "s3cr3t"}, {}),
        ({"password": b"bytes-pw"}, {}),
        ({"password": "pw"}, {}),  # too short to be scrubbed, as before
        ({"pass\nword": "newline-key"}, {}),
        ({"api_key": None, "token": 123}, {}),
    ],
)
def test_scrub_node_hides_what_the_full_walk_finds(
    driver_info: dict[Any, Any], instance_info: dict[str, Any]
) -> None:
    node = Node()
    node.driver_info, node.instance_info = driver_info, instance_info
    values = ["hunter22", "tok-abc", "deep-secret", "ssh-rsa AAAA", "s3cr3t", "bytes-pw", "pw"]
    text = "failed with " + " and ".join([*values, "newline-key", "numeric key", "123"])
    expected = scrub(text, secret_values(driver_info, instance_info))
    assert scrub_node(node, text) == expected
    for secret in secret_values(driver_info, instance_info):
        assert secret not in scrub_node(node, text)
        assert MASK in scrub_node(node, text)


def test_history_entries_hold_no_secret_of_a_flat_driver_info() -> None:
    conductor = Conductor(store=MemoryStore(), config=Config(node_history=True))
    node = conductor.create_node(driver_info={"ipmi_password": "hunter22"})
    conductor.update_node(node.uuid, maintenance=True, maintenance_reason="hunter22 leaked")
    entries = conductor.get_node_history(node.uuid)
    assert entries
    assert all("hunter22" not in e.event for e in entries)
    assert MASK in entries[-1].event


# -- history UUIDs ---------------------------------------------------------------------------


def test_history_uuids_are_random_version_4_and_distinct() -> None:
    drawn = [h._random_uuid() for _ in range(h._UUID_BATCH * 3 + 5)]
    assert len(set(drawn)) == len(drawn)
    for text in drawn:
        parsed = _uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == _uuid.RFC_4122


def test_keys_seen_plain_before_do_not_hide_a_new_secret_key() -> None:
    node = Node()
    node.driver_info = {"ipmi_address": "10.0.0.1", "ipmi_username": "admin"}
    assert scrub_node(node, "as admin at 10.0.0.1") == "as admin at 10.0.0.1"
    node.driver_info = {"ipmi_address": "10.0.0.1", "ipmi_username": "admin", "Ipmi_Key": "k3y"}
    assert scrub_node(node, "as admin with k3y") == f"as admin with {MASK}"
    node.driver_info = {"ipmi_address": {"password": "nested-pw"}}
    assert scrub_node(node, "nested-pw") == MASK


class _NoOffset(tzinfo):
    """A zone that knows no offset: its times are naive, whatever ``tzinfo`` says."""

    def utcoffset(self, dt: datetime | None) -> None:
        return None

    def dst(self, dt: datetime | None) -> None:
        return None

    def tzname(self, dt: datetime | None) -> str:
        return "nowhere"


def test_history_entries_other_than_utc_are_checked_by_their_offset() -> None:
    store = MemoryStore()
    node = _stored(store)
    plus_two = datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=2)))
    store.add_history([h.new_entry(node.uuid, plus_two, h.INFO, h.POWER, "fine")])
    with pytest.raises(InvalidParameterValue, match="created_at"):
        store.add_history(
            [h.new_entry(node.uuid, datetime(2026, 1, 1, tzinfo=_NoOffset()), h.INFO, h.POWER, "x")]
        )
    assert [e.event for e in store.node_history(node.uuid)] == ["fine"]
