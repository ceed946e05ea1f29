"""A store of your own in twenty lines: any key-value database with compare-and-set.

Run it with ``python examples/kv_store.py``. :class:`~ironic_fsm.stores.KeyValueStore`
builds the whole store protocol (versions, unique names, reservations,
heartbeats) on four methods. Here they sit on a dict under a lock; on etcd,
Consul or Redis each is a call or two (a revision is etcd's ``mod_revision``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import ironic_fsm
from ironic_fsm.stores import KeyValueStore


class DictStore(KeyValueStore):
    """Keys in a dict: each value with a revision that every write bumps."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[str, int]] = {}
        self._lock = threading.Lock()
        self._revision = 0

    def read(self, key: str) -> tuple[str, int] | None:
        with self._lock:
            return self._data.get(key)

    def write(self, key: str, value: str, revision: int | None) -> bool:
        with self._lock:
            current = self._data.get(key)
            if (current[1] if current else None) != revision:
                return False  # someone else wrote it since it was read
            self._revision += 1
            self._data[key] = (value, self._revision)
            return True

    def remove(self, key: str, revision: int) -> bool:
        with self._lock:
            current = self._data.get(key)
            if current is None or current[1] != revision:
                return False
            del self._data[key]
            return True

    def scan(self, prefix: str) -> Iterable[tuple[str, str]]:
        with self._lock:
            return [(k, v) for k, (v, _) in self._data.items() if k.startswith(prefix)]


def main() -> None:
    conductor = ironic_fsm.Conductor(store=DictStore())
    node = conductor.create_node(name="rack1-u07", driver="fake-hardware")
    for verb in ("manage", "provide", "deploy"):
        node = conductor.do_provisioning_action(node.uuid, verb)
        print(f"{verb:>8}: {node.provision_state} (record version {node.version})")
    assert node.provision_state == ironic_fsm.states.ACTIVE


if __name__ == "__main__":
    main()
