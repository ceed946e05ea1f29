"""The conductor's listing pages through the store; its periodic scans read only candidates.

``Conductor.list_nodes`` takes ``limit``, ``marker``,
``sort_key`` and ``sort_dir`` (on every store); ``recover()`` and
``check_timeouts()`` decode no node when nothing is due, on a SQLite fleet
of thousands, and act on exactly the nodes that are due.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import FAKE_HW, T0, Clock, DecodeCounter, expected_order, make_conductor, new_node

from ironic_fsm import Conductor, Config, states
from ironic_fsm.conductor.common import process_start
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore

UTC = timezone.utc

# -- list_nodes: pages, order, filters -------------------------------------------------------------


def _fleet(conductor: Conductor, count: int = 23) -> list[Node]:
    """Nodes with tied creation times and names, some unset, in creation order."""
    nodes = []
    for i in range(count):
        nodes.append(
            new_node(
                conductor,
                states.MANAGEABLE if i % 3 else states.AVAILABLE,
                driver=FAKE_HW,
                name=None if i % 4 == 0 else f"n-{i % 5}-{i:02d}",
                created_at=T0 + timedelta(seconds=i // 4),  # ties
            )
        )
    return nodes


def _walk(conductor: Conductor, limit: int, **kwargs: Any) -> list[str]:
    seen: list[str] = []
    marker = None
    while True:
        page = conductor.list_nodes(limit=limit, marker=marker, **kwargs)
        assert len(page) <= limit
        seen += [n.uuid for n in page]
        if len(page) < limit:
            return seen
        marker = page[-1].uuid


@pytest.mark.parametrize("sort_dir", ["asc", "desc"])
@pytest.mark.parametrize("sort_key", ["created_at", "name", "uuid"])
def test_list_nodes_walks_the_fleet_by_pages_in_order(sort_key: str, sort_dir: str) -> None:
    conductor = make_conductor()
    nodes = _fleet(conductor)
    expected = expected_order(nodes, sort_key, sort_dir)
    whole = conductor.list_nodes(sort_key=sort_key, sort_dir=sort_dir)
    assert [n.uuid for n in whole] == expected
    for limit in (1, 4, 23, 50):
        assert _walk(conductor, limit, sort_key=sort_key, sort_dir=sort_dir) == expected


def test_list_nodes_pages_the_filtered_nodes() -> None:
    conductor = make_conductor()
    nodes = _fleet(conductor)
    manageable = [n.uuid for n in nodes if n.provision_state == states.MANAGEABLE]
    assert _walk(conductor, 3, provision_state=states.MANAGEABLE) == manageable
    assert [n.uuid for n in conductor.list_nodes(limit=2, provision_state="manageable")] == (
        manageable[:2]
    )
    assert conductor.list_nodes(limit=0) == []
    # The marker need not match the filters: the page starts after it all the same.
    available = [n.uuid for n in nodes if n.provision_state == states.AVAILABLE]
    after = conductor.list_nodes(marker=available[0], provision_state=states.MANAGEABLE)
    first = next(i for i, n in enumerate(nodes) if n.uuid == available[0])
    assert [n.uuid for n in after] == [
        n.uuid for n in nodes[first + 1 :] if n.provision_state == states.MANAGEABLE
    ]


def test_list_nodes_filters_on_reserved() -> None:
    conductor = make_conductor()
    a, b = _fleet(conductor, 2)
    conductor.store.reserve(b.uuid, "other-host:1:x")
    assert [n.uuid for n in conductor.list_nodes(reserved=True)] == [b.uuid]
    assert [n.uuid for n in conductor.list_nodes(reserved=False)] == [a.uuid]
    with pytest.raises(InvalidParameterValue, match="reserved filter"):
        conductor.list_nodes(reserved="yes")


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"limit": -1}, "limit"),
        ({"limit": "10"}, "limit"),
        ({"limit": True}, "limit"),
        ({"marker": "0b6d7c0a-5d5e-4b8e-9d47-4f4d6a0e0f11"}, "marker"),
        ({"marker": 7}, "marker"),
        ({"sort_key": "driver_info"}, "sort"),
        ({"sort_dir": "up"}, "sort_dir"),
        ({"flavour": "x"}, "unknown field"),
        ({"provision_state": "asleep"}, "not a state of this lifecycle"),
        ({"maintenance": "no"}, "maintenance"),
        ({"extra": {}}, "extra"),
    ],
)
def test_list_nodes_refuses_bad_paging_and_filters(kwargs: dict[str, Any], text: str) -> None:
    conductor = make_conductor()
    _fleet(conductor, 3)
    with pytest.raises(InvalidParameterValue, match=text):
        conductor.list_nodes(**kwargs)


# -- periodic scans on a fleet of thousands: only candidates are read ------------------------------

FLEET = 3000
NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
CLEAN_TIMEOUT = Config().clean_callback_timeout


def _node(state: str, **fields: Any) -> Node:
    fields.setdefault("provision_updated_at", NOW - timedelta(seconds=60))
    return Node(
        driver=FAKE_HW,
        provision_state=state,
        power_state=states.POWER_ON,
        driver_info={"ipmi_address": "10.0.0.1", "ipmi_password": "pw"},
        properties={"cpus": 64, "memory_mb": 262144},
        **{
            "created_at": NOW - timedelta(days=1),
            "updated_at": NOW - timedelta(seconds=60),
            **fields,
        },
    )


def _live_holder() -> str:
    """Another conductor of this process: alive (same host, same pid, same start time)."""
    return f"{Config().host}:{os.getpid()}:{process_start(os.getpid()) or '0'}-0live000"


@pytest.fixture(scope="module")
def fleet_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fleet in which nothing is due at NOW, though many nodes wait or are held.

    Every kind of node the old scans decoded is here: stable nodes, nodes in
    every wait state well inside their timeout, a ``wait`` step not yet up,
    nodes in maintenance or held by someone else past their timeout, and
    nodes held by live conductors (here, and on another host with a fresh
    heartbeat).
    """
    path: Path = tmp_path_factory.mktemp("scans") / "fleet.sqlite"
    url = f"sqlite:///{path}"
    store = SQLStore(url)
    long_ago = NOW - timedelta(days=2)
    nodes: list[Node] = []
    for i in range(FLEET):
        kind = i % 10
        if kind < 4:
            nodes.append(_node(states.ACTIVE if kind % 2 else states.AVAILABLE))
        elif kind == 4:
            nodes.append(_node(states.CLEANWAIT))
        elif kind == 5:
            wake = (NOW + timedelta(hours=1)).isoformat()
            nodes.append(_node(states.DEPLOYWAIT, driver_internal_info={"deploy_wait_until": wake}))
        elif kind == 6:
            nodes.append(_node(sorted(states.WAIT_STATES)[i % len(states.WAIT_STATES)]))
        elif kind == 7:
            nodes.append(_node(states.CLEANWAIT, maintenance=True, provision_updated_at=long_ago))
        else:  # 8, 9: held below
            nodes.append(_node(states.CLEANWAIT, provision_updated_at=long_ago))
    store.create_many(nodes)
    remote = "far.example:4242:abcd"
    for i, node in enumerate(nodes):
        if i % 10 == 8:
            store.reserve(node.uuid, _live_holder())
        elif i % 10 == 9:
            store.reserve(node.uuid, remote)
    store.close()
    return url


@pytest.fixture
def fleet(fleet_url: str, tmp_path: Path) -> Iterator[Conductor]:
    """A conductor on a private copy of the fleet (each test may change it)."""
    copy = tmp_path / "fleet.sqlite"
    copy.write_bytes(Path(fleet_url[len("sqlite:///") :]).read_bytes())
    store = SQLStore(f"sqlite:///{copy}")
    conductor = Conductor(store=store, clock=Clock(NOW))
    store.heartbeat("far.example:4242:abcd", NOW)
    try:
        yield conductor
    finally:
        store.close()


def test_recover_decodes_no_node_when_no_holder_is_gone(
    fleet: Conductor, monkeypatch: pytest.MonkeyPatch
) -> None:
    decodes = DecodeCounter(monkeypatch)
    assert fleet.recover() == []
    assert decodes.count == 0


def test_check_timeouts_decodes_no_node_when_nothing_is_due(
    fleet: Conductor, monkeypatch: pytest.MonkeyPatch
) -> None:
    decodes = DecodeCounter(monkeypatch)
    assert fleet.check_timeouts(NOW) == []
    assert decodes.count == 0


def test_recover_takes_over_exactly_the_nodes_of_gone_holders(
    fleet: Conductor, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = fleet.config.host
    gone = [
        f"{here}:{os.getpid()}:1-0reused0",  # this pid, another start time: the pid was reused
        "gone.example:7:dead",  # another host, no heartbeat, record untouched for a day
    ]
    due = []
    for holder in gone:
        for _ in range(2):
            node = _node(states.MANAGEABLE, updated_at=NOW - timedelta(days=1))
            fleet.store.create(node)
            fleet.store.reserve(node.uuid, holder)
            due.append(node.uuid)
    decodes = DecodeCounter(monkeypatch)
    assert fleet.recover() == due
    assert decodes.count <= 4 * len(due)  # a few reads per node taken over, none of the fleet
    for uuid in due:
        node = fleet.get_node(uuid)
        assert node.reservation is None
        assert node.provision_state == states.MANAGEABLE
    assert len(fleet.list_nodes(reserved=True)) == FLEET // 5  # the live holders kept theirs


def test_check_timeouts_acts_on_exactly_the_due_nodes(
    fleet: Conductor, monkeypatch: pytest.MonkeyPatch
) -> None:
    at_timeout = _node(
        states.CLEANWAIT,
        target_provision_state=states.AVAILABLE,
        provision_updated_at=NOW - timedelta(seconds=CLEAN_TIMEOUT),
    )
    just_inside = _node(
        states.CLEANWAIT,
        target_provision_state=states.AVAILABLE,
        provision_updated_at=NOW - timedelta(seconds=CLEAN_TIMEOUT) + timedelta(microseconds=1),
    )
    # A wait step that is up ends even in maintenance (the node goes on; only timeouts wait).
    woken = _node(
        states.CLEANWAIT,
        target_provision_state=states.MANAGEABLE,
        maintenance=True,
        driver_internal_info={
            "clean_wait_until": NOW.isoformat(),
            "clean_steps": [],
            "clean_step_index": 0,
        },
    )
    for node in (at_timeout, just_inside, woken):
        fleet.store.create(node)
    decodes = DecodeCounter(monkeypatch)
    assert sorted(fleet.check_timeouts(NOW)) == sorted([at_timeout.uuid, woken.uuid])
    assert decodes.count <= 10
    timed_out = fleet.get_node(at_timeout.uuid)
    assert timed_out.provision_state == states.CLEANFAIL
    assert timed_out.last_error is not None
    assert timed_out.last_error.startswith("Timeout reached while cleaning the node")
    assert fleet.get_node(just_inside.uuid).provision_state == states.CLEANWAIT
    assert fleet.get_node(woken.uuid).provision_state == states.MANAGEABLE
    decodes.count = 0
    assert fleet.check_timeouts(NOW) == []
    assert decodes.count == 0
