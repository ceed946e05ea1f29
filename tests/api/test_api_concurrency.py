"""Twenty clients at once on the same nodes: only retried 409s, and nothing lost."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import openstack
from api_helpers import LATEST, api_in_process

from ironic_fsm import states as s

CLIENTS = 20
NODES = 3


def test_twenty_clients_lose_nothing(tmp_path: Path) -> None:
    statuses: list[int] = []
    with api_in_process(tmp_path / "nodes.sqlite") as (conductor, _, url):
        uuids = [conductor.create_node(name=f"c{i}").uuid for i in range(NODES)]
        errors: list[BaseException] = []
        start = threading.Barrier(CLIENTS)

        def client(number: int) -> None:
            conn = openstack.connection.Connection(
                auth_type="none", baremetal_endpoint_override=url
            )
            node = uuids[number % NODES]
            try:
                start.wait()
                conn.baremetal.add_node_trait(node, f"CUSTOM_C{number}")
                conn.baremetal.patch_node(
                    node, [{"op": "add", "path": f"/extra/k{number}", "value": number}]
                )
                if number < NODES:  # one client per node also moves it through the lifecycle
                    conn.baremetal.set_node_provision_state(node, "manage", wait=True, timeout=60)
                conn.baremetal.get_node(node)
            except BaseException as error:
                errors.append(error)
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []
        deadline = time.monotonic() + 30
        while any(conductor.get_node(u).reservation for u in uuids):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        for index, uuid in enumerate(uuids):
            node = conductor.get_node(uuid)
            mine = range(index, CLIENTS, NODES)
            assert sorted(node.traits) == sorted(f"CUSTOM_C{i}" for i in mine)
            assert node.extra == {f"k{i}": i for i in mine}
            assert node.provision_state == s.MANAGEABLE
            assert node.reservation is None
        with httpx.Client(base_url=url, headers=LATEST, timeout=60) as http:
            statuses.append(http.get("/v1/nodes").status_code)
    assert statuses == [200]
