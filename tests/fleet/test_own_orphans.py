"""A conductor takes back its own orphaned reservations (``recover()``), and only those.

A flow stopped by a database outage that outlasted ``store_retry_timeout``
leaves its node reserved by its still-living conductor, at the last step it
recorded; nobody else may take it (the holder is alive), so the conductor
must go on with it itself once the database is back. A node that one of its
threads still holds must be left alone. Real PostgreSQL (stopped and started
on its port), real threads, the crash test's logging steps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import attrs
import crash_worker
import pytest
from conftest import fresh_postgres_url
from helpers import once_back
from pgserver import PostgresServer

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.stores import SQLStore

STEPS = [{"interface": "vendor", "step": name, "args": {}} for name in crash_worker.STEPS]


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    for url in fresh_postgres_url(postgres_server):
        yield url + quote(" -csynchronous_commit=on")  # see test_db_outages


def _conductor(url: str, executor: ThreadPoolExecutor) -> ironic_fsm.Conductor:
    conductor = ironic_fsm.Conductor(
        store=SQLStore(url, pool_timeout=1.0),
        config=ironic_fsm.Config(store_retry_timeout=0.5),
        executor=executor,
    )
    conductor.register_hardware_type("crash-hardware", crash_worker.crash_hardware())
    return conductor


def _until(check: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {check}"
        time.sleep(0.05)


def test_a_flow_stopped_by_an_outage_is_taken_back_by_its_own_conductor(
    postgres_server: PostgresServer, pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log, flag = tmp_path / "steps.log", tmp_path / "hang"
    flag.touch()
    with ThreadPoolExecutor(2) as executor:
        conductor = _conductor(pg_url, executor)
        node = conductor.create_node(
            driver="crash-hardware",
            provision_state=states.MANAGEABLE,
            driver_info={"log_path": str(log), "hang_flag": str(flag)},
        )
        conductor.do_provisioning_action(node.uuid, "clean", clean_steps=STEPS)
        _until(lambda: log.exists() and "start c" in log.read_text())
        # Step c runs: the flow holds the node, and recover() must leave it alone.
        assert conductor.recover() == []
        assert conductor.running() == 1
        postgres_server.pause("immediate")
        try:
            with caplog.at_level(logging.WARNING, logger="ironic_fsm.conductor"):
                flag.unlink()  # c ends; the save that records it cannot be made
                _until(lambda: conductor.running() == 0)
        finally:
            postgres_server.resume()
        assert "the flow stops at its last recorded step" in caplog.text
        stopped = once_back(lambda: conductor.store.get(node.uuid))
        assert stopped.provision_state == states.CLEANING  # not failed for the outage
        assert stopped.clean_step["step"] == "c"
        assert stopped.reservation == conductor.holder
        assert stopped.last_error is None
        assert once_back(conductor.recover) == [node.uuid]
        _until(lambda: conductor.get_node(node.uuid).provision_state == states.MANAGEABLE)
        _until(lambda: conductor.running() == 0)
    done = conductor.get_node(node.uuid)
    assert done.reservation is None
    assert done.last_error is None
    assert not done.maintenance
    # a and b, recorded done, never ran again; c, whose end was never recorded, did.
    assert log.read_text().split("\n")[:-1] == [
        "start a", "end a", "start b", "end b", "start c", "end c",
        "start c", "end c", "start d", "end d",
    ]  # fmt: skip
    history = [entry.event for entry in conductor.get_node_history(node.uuid)]
    assert any("no flow running" in event for event in history), history
    conductor.store.close()


def test_an_own_orphan_outside_a_flow_is_released(tmp_path: Path) -> None:
    with ThreadPoolExecutor(1) as executor:
        conductor = _conductor(f"sqlite:///{tmp_path / 'nodes.sqlite'}", executor)
        node = conductor.create_node(driver="crash-hardware", provision_state=states.MANAGEABLE)
        other = conductor.create_node(driver="crash-hardware", provision_state=states.MANAGEABLE)
        # What a release lost with its connection leaves: reserved by a live conductor.
        conductor.store.reserve(node.uuid, conductor.holder)
        assert conductor.recover() == [node.uuid]
        _until(lambda: conductor.running() == 0)
        after = conductor.get_node(node.uuid)
        assert after.reservation is None
        assert after.provision_state == states.MANAGEABLE
        assert conductor.get_node(other.uuid) == other  # untouched
        assert conductor.recover() == []
        conductor.store.close()


def test_a_save_whose_answer_was_lost_counts_as_saved(tmp_path: Path) -> None:
    """The database committed, the connection broke before it said so: the retry is stale.

    That stale retry must be recognised as the save already made (the record
    is ours exactly, one version on), and anything else still refused.
    """
    from ironic_fsm.conductor.outage import save_through
    from ironic_fsm.exceptions import ConcurrentUpdate, StoreUnavailable

    with ThreadPoolExecutor(1) as executor:
        conductor = _conductor(f"sqlite:///{tmp_path / 'nodes.sqlite'}", executor)
        ctx = conductor._ctx
        node = conductor.create_node(driver="crash-hardware", provision_state=states.MANAGEABLE)
        lost = StoreUnavailable("The SQLite database x cannot write now")
        node.extra = {"rack": "r1"}
        sent = node.version
        conductor.store.save(node)  # committed...
        node.version = sent  # ...but its answer never came back
        save_through(ctx, node, lambda: conductor.store.save(node), lost)
        assert node.version == sent + 1
        assert conductor.get_node(node.uuid) == node
        node.extra = {"rack": "r2"}  # someone else's change meanwhile: still refused
        conductor.store.save(attrs.evolve(node, extra=dict(node.extra)))
        node.extra = {"rack": "r3"}
        with pytest.raises(ConcurrentUpdate):
            save_through(ctx, node, lambda: conductor.store.save(node), lost)
        conductor.store.close()
