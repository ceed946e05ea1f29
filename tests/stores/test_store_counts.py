"""Node counts by one field (``NodeCounter``): the same answer on every store.

The SQL store answers with one ``GROUP BY`` on an index (schema 13 adds the
nodes in maintenance, by fault); MemoryStore through the capabilities'
fallback, a listing of the fields.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores import Store
from ironic_fsm.stores.capabilities import StoreCapabilities


def _fleet(store: Store) -> list[Node]:
    nodes = [
        Node(driver="ipmi", provision_state="available", conductor_group="rack-1"),
        Node(driver="ipmi", provision_state="available"),
        Node(driver="redfish", provision_state="active", maintenance=True, fault="power failure"),
        Node(driver="redfish", provision_state="cleaning", maintenance=True),
        Node(driver="redfish", provision_state="cleaning", conductor_group="rack-1"),
    ]
    for node in nodes:
        store.create(node)
    store.reserve(nodes[4].uuid, "conductor-a")
    return nodes


def test_counts_by_each_field_and_condition(store: Store) -> None:
    nodes = _fleet(store)
    caps = StoreCapabilities(store)
    assert caps.count_nodes("provision_state") == Counter(n.provision_state for n in nodes)
    assert caps.count_nodes("driver") == {"ipmi": 2, "redfish": 3}
    assert caps.count_nodes("conductor_group") == {"": 3, "rack-1": 2}
    assert caps.count_nodes("fault", maintenance=True) == {"power failure": 1, None: 1}
    assert caps.count_nodes("provision_state", maintenance=False) == {
        "available": 2, "cleaning": 1
    }  # fmt: skip
    assert caps.count_nodes("provision_state", reserved=True) == {"cleaning": 1}
    assert caps.count_nodes("reservation", reserved=True) == {"conductor-a": 1}
    assert caps.count_nodes("provision_state", reserved=False, maintenance=True) == {
        "active": 1, "cleaning": 1
    }  # fmt: skip
    store.release(nodes[4].uuid, "conductor-a")
    assert caps.count_nodes("reservation", reserved=True) == {}


def test_sql_stores_count_themselves(store: Store) -> None:
    caps = StoreCapabilities(store)
    assert (caps.counter is not None) == (type(store).__name__ == "SQLStore")


@pytest.mark.parametrize(
    ("field", "options", "message"),
    [
        ("uuid", {}, "Cannot count nodes by 'uuid'"),
        ("data", {}, "Cannot count nodes by 'data'"),
        ("driver", {"maintenance": 1}, "maintenance must be True, False or None"),
        ("driver", {"reserved": "no"}, "reserved must be True, False or None"),
    ],
)
def test_bad_counts_are_refused(store: Store, field: str, options: dict[str, object],
                                message: str) -> None:  # fmt: skip
    caps = StoreCapabilities(store)
    with pytest.raises(InvalidParameterValue, match=message):
        caps.count_nodes(field, **options)  # type: ignore[arg-type]
