"""A database that goes away (PostgreSQL restarted) or cannot write (SQLite's disk full).

Both stores raise :class:`~ironic_fsm.exceptions.StoreUnavailable`: typed,
retryable, naming the database without its password, with the driver's
error chained. Nothing is written meanwhile, and the record is as it was
once the database is back. Real server, real file system: the PostgreSQL
fixture is stopped and started on its port; a tmpfs is filled to the byte.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from conftest import fresh_postgres_url
from pgserver import PostgresServer
from tmpfs import tmpfs

from ironic_fsm import Node
from ironic_fsm.exceptions import StoreBusy, StoreError, StoreUnavailable
from ironic_fsm.stores import SQLStore


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    for url in fresh_postgres_url(postgres_server):
        yield durable(url)


def durable(url: str) -> str:
    """``url`` with PostgreSQL's default ``synchronous_commit=on`` back for its sessions.

    The test server turns it off for speed, and then an immediate stop loses
    the last commits it acknowledged: no production server runs that way.
    """
    return url + quote(" -csynchronous_commit=on")


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_postgres_down_raises_store_unavailable_and_keeps_the_record(
    postgres_server: PostgresServer, pg_url: str, mode: str
) -> None:
    # The test server trusts every connection: a password in the URL is accepted, and
    # must appear in no message.
    url = pg_url.replace("://postgres@", "://postgres:hunter2@")
    with SQLStore(url, pool_size=2, pool_timeout=1.0) as store:
        node = Node(name="kept", driver_info={"ipmi_password": "s3cret"})
        store.create(node)
        store.get(node.uuid)  # a pooled connection, which the restart breaks
        before = store.get(node.uuid)
        postgres_server.pause(mode)
        try:
            node.provision_state = "manageable"
            with pytest.raises(StoreUnavailable, match=r"is unavailable|could be opened") as info:
                store.save(node)
            assert info.value.retryable is True
            assert isinstance(info.value, StoreError)
            assert info.value.target in str(info.value)
            assert "s3cret" not in str(info.value)
            assert "hunter2" not in str(info.value)
            assert "***" in info.value.target
            assert node.version == before.version  # not counted as saved
            # Once the broken pooled connections are gone, the pool cannot open one:
            # down, not busy.
            messages = []
            for _ in range(3):  # the pool holds at most 2
                with pytest.raises(StoreUnavailable) as down:
                    store.get(node.uuid)
                messages.append(str(down.value))
            assert "could be opened within 1 s" in messages[-1], messages
            assert not any("hunter2" in message for message in messages)
        finally:
            postgres_server.resume()
        assert _once_back(store, node.uuid) == before  # nothing was written
        store.save(node)  # the same save, once it is back
        assert store.get(node.uuid).provision_state == "manageable"


def _once_back(store: SQLStore, uuid: str, timeout: float = 30) -> Node:
    """The node, read as soon as the pool has reconnected (it backs off: 1, 2, 4 s...)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return store.get(uuid)
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise


def test_postgres_refusals_for_settings_are_not_outages(postgres_server: PostgresServer) -> None:
    url = postgres_server.url.replace("/ironic_fsm", "/no_such_database")
    with pytest.raises(StoreError, match="no_such_database") as info:
        SQLStore(url)
    assert not isinstance(info.value, StoreUnavailable)
    assert isinstance(info.value.__cause__, psycopg.OperationalError)


def test_postgres_busy_pool_is_still_store_busy(pg_url: str) -> None:
    with SQLStore(pg_url, pool_size=1, pool_timeout=0.3) as store:
        with (
            store.connection(),  # the only connection, held
            pytest.raises(StoreBusy, match="all 1 of the pool were busy") as info,
        ):
            store.get("anything")
        assert not isinstance(info.value, StoreUnavailable)


def test_sqlite_disk_full_raises_store_unavailable_and_keeps_the_file(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", size="2m") as disk:
        path = disk.path / "nodes.sqlite"
        with SQLStore(f"sqlite:///{path}") as store:
            nodes = [Node(name=f"n{i}") for i in range(5)]
            for node in nodes:
                store.create(node)
            before = {n.uuid: store.get(n.uuid) for n in nodes}
            disk.fill()
            errors: list[StoreUnavailable] = []
            for node in nodes:  # enough writes to need new pages in the WAL
                node.properties = {"blob": "x" * 200_000}
                try:
                    store.save(node)
                except StoreUnavailable as exc:
                    errors.append(exc)
                    assert store.get(node.uuid) == before[node.uuid]  # left as it was
            assert errors
            for error in errors:
                assert "database or disk is full" in str(error)
                assert error.retryable is True
                assert isinstance(error.__cause__, sqlite3.OperationalError)
                assert str(path) in str(error)
            with pytest.raises(StoreUnavailable):
                store.create(Node(name="new", properties={"blob": "y" * 200_000}))
            disk.free()
            for node in nodes:
                node.version = store.get(node.uuid).version
                store.save(node)
            assert all(store.get(n.uuid).properties == n.properties for n in nodes)
            with store.connection() as conn:
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
