"""A page is read at one moment: a node that another process reserves or releases, or
whose sort key moves, meanwhile is listed exactly once, never missed and never twice.

A page sorted on a timestamp reads the free nodes on the sort index and the
held ones on the reservation index, and a nullable key reads its unset rows
apart from the others. Read as separate statements, a node taken or let go
between them fell in neither part (an operator's ``list`` came back without
it) or in both. Two stores on one database stand for two processes.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
#: How long the listing side keeps reading while the other side flips nodes.
SECONDS = 3.0


def _flip(store: SQLStore, uuids: list[str], stop: threading.Event, key: str) -> None:
    """Reserve and release the nodes (or set and clear ``key``) until told to stop."""
    tick = 0
    while not stop.is_set():
        for uuid in uuids:
            if key == "reservation":
                store.reserve(uuid, "other-process")
                store.release(uuid, "other-process")
            else:
                node = store.get(uuid)
                tick += 1
                setattr(node, key, None if tick % 2 else T0 + timedelta(seconds=tick))
                store.save(node)


@pytest.mark.parametrize(
    ("sort_key", "sort_dir", "key"),
    [
        ("created_at", "asc", "reservation"),
        ("created_at", "desc", "reservation"),
        ("provision_updated_at", "asc", "provision_updated_at"),
        ("provision_updated_at", "desc", "provision_updated_at"),
    ],
)
def test_a_page_lists_every_node_once_while_another_store_changes_them(
    sql_url: str, sort_key: str, sort_dir: str, key: str
) -> None:
    lister, writer = SQLStore(sql_url), SQLStore(sql_url)
    try:
        nodes = [
            Node(driver="fake-hardware", created_at=T0 + timedelta(minutes=i),
                 provision_updated_at=T0 + timedelta(minutes=i))
            for i in range(6)
        ]  # fmt: skip
        for node in nodes:
            lister.create(node)
        everyone = sorted(n.uuid for n in nodes)
        stop = threading.Event()
        flipper = threading.Thread(
            target=_flip, args=(writer, [nodes[2].uuid, nodes[3].uuid], stop, key)
        )
        flipper.start()
        wrong: list[list[str]] = []
        reads = 0
        try:
            deadline = time.monotonic() + SECONDS
            while time.monotonic() < deadline:
                listed = [n.uuid for n in lister.list(sort_key=sort_key, sort_dir=sort_dir)]
                reads += 1
                if sorted(listed) != everyone:
                    wrong.append(listed)
        finally:
            stop.set()
            flipper.join()
        assert reads > 50, "too few pages read to tell"
        assert wrong == [], f"{len(wrong)} of {reads} pages missed or repeated a node"
    finally:
        lister.close()
        writer.close()
