"""Several conductor processes sharing one database, as a fleet runs them.

Each worker is a separate Python process with its own Conductor on the same
SQLite file or PostgreSQL database. They drive their own nodes through the
whole lifecycle and all race for the same shared nodes: every node must end
``available`` with no reservation left, and a busy node must only ever be
refused with ``NodeLocked``, never corrupted or lost.
"""

from __future__ import annotations

import json
import textwrap

from procs import worker_reports

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.stores import SQLStore

WORKER = textwrap.dedent(
    """
    import json, sys
    import ironic_fsm
    from ironic_fsm.exceptions import InvalidStateRequested, NodeLocked
    from ironic_fsm.stores import SQLStore

    url, mine, shared = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    conductor = ironic_fsm.Conductor(store=SQLStore(url))
    locked = done = lost = 0
    for uuid in mine:
        for verb in ("manage", "provide", "deploy", "undeploy"):
            conductor.do_provisioning_action(uuid, verb)
        done += 1
    # Everyone tries to take every shared node through its next step.
    for uuid in shared:
        for verb in ("manage", "provide"):
            try:
                node = conductor.get_node(uuid)
                if verb == "manage" and node.provision_state == "enroll" or (
                    verb == "provide" and node.provision_state == "manageable"
                ):
                    conductor.do_provisioning_action(uuid, verb)
            except NodeLocked:
                locked += 1
            except InvalidStateRequested:
                # Another process moved the node on between our read and our verb:
                # a lost race, refused without a change, not an error.
                lost += 1
    print(json.dumps({"done": done, "locked": locked, "lost": lost}))
    """
)


def test_conductor_processes_share_one_database(sql_url: str) -> None:
    store = SQLStore(sql_url)
    try:
        conductor = ironic_fsm.Conductor(store=store)
        own = [[conductor.create_node().uuid for _ in range(6)] for _ in range(3)]
        shared = [conductor.create_node().uuid for _ in range(4)]
        argvs = [[sql_url, json.dumps(mine), json.dumps(shared)] for mine in own]
        reports = worker_reports(WORKER, argvs)
        assert [r["done"] for r in reports] == [6, 6, 6]
        for node in conductor.list_nodes():
            assert node.reservation is None, node.uuid
            assert node.last_error is None, node.last_error
            assert node.provision_state == states.AVAILABLE, node.uuid
            assert node.target_provision_state is None
        # Fresh eyes on the same database see the same thing.
        again = SQLStore(sql_url)
        try:
            assert {n.provision_state for n in again.list()} == {states.AVAILABLE}
            assert len(again.list()) == 22
        finally:
            again.close()
    finally:
        store.close()
