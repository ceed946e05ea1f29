"""Ironic 39's own API with its conductor in the same process: the rival of the API benchmarks.

Two halves. The functions at the top (only the standard library) name the
data both sides are seeded with, so that ours and Ironic's hold the same
nodes and ports, with the same UUIDs and MAC addresses, and a marker means
the same place in both. Run as a script by the Python of Ironic 39's
virtualenv (``IRONIC_PYTHON``: ``shared/bench/ironic_baseline``'s lock file
plus cheroot; ``_ironic_pg.py --install`` builds one), it serves Ironic::

    IRONIC_PYTHON _ironic_api.py WORKDIR NODES PORTS_PER_NODE AVAILABLE

Ironic is set up as its single-process service (``ironic``) sets it up:
``rpc_transport = none``, the conductor manager in the same process (what
the API's calls reach), its worker pool as configured (Ironic's defaults),
noauth, SQLite in WAL mode, fake-hardware. Its periodic tasks are not
started (ours are not either): both servers do only what the requests ask.
The data is written through Ironic's own models in one session, the rows
``dbapi.create_node``/``create_port`` write (interfaces as node creation
fills them in), since 100,000 one-at-a-time creations take many minutes.
The WSGI application is served by cheroot (16 threads), as in
``bench_api.py``. The script prints the port it listens on, then serves
until killed.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

__all__ = ["AVAILABLE_CLASS", "SCRIPT", "mac", "node_uuid", "port_uuid"]

SCRIPT = Path(__file__).resolve()
#: The resource class of the nodes seeded ``available`` (what allocations ask for).
AVAILABLE_CLASS = "bench-rc"
_NODES = uuid.UUID("6d1e7c52-46a5-4bd3-9e54-30f1d1f7a001")
_PORTS = uuid.UUID("6d1e7c52-46a5-4bd3-9e54-30f1d1f7a002")


def node_uuid(index: int) -> str:
    """The UUID of the ``index``-th node (random-looking, the same on both sides)."""
    return str(uuid.uuid5(_NODES, str(index)))


def port_uuid(index: int) -> str:
    return str(uuid.uuid5(_PORTS, str(index)))


def mac(index: int) -> str:
    """A unique MAC address for the ``index``-th port (from 1)."""
    return ":".join(f"{(index >> shift) & 0xFF:02x}" for shift in (40, 32, 24, 16, 8, 0))


def port_fields(index: int) -> dict[str, object]:
    """What both sides store for the ``index``-th port besides its node."""
    return {
        "local_link_connection": {"switch_id": "00:11:22:33:44:55", "port_id": f"Eth{index}"},
        "physical_network": "physnet1",
        "extra": {"rack": index // 160},
    }


_CONF = """[DEFAULT]
host = bench-api
auth_strategy = noauth
rpc_transport = none
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake
enabled_boot_interfaces = fake
enabled_console_interfaces = fake
enabled_deploy_interfaces = fake
enabled_firmware_interfaces = fake
enabled_inspect_interfaces = fake
enabled_management_interfaces = fake
enabled_network_interfaces = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = fake
enabled_rescue_interfaces = fake
enabled_storage_interfaces = noop
enabled_vendor_interfaces = fake
use_stderr = false
[conductor]
heartbeat_timeout = 86400
[database]
connection = sqlite:///{db}
"""


def _conductor() -> object:
    """Ironic's conductor manager in this process, registered, with its worker pool."""
    import threading

    from ironic import objects
    from ironic.common import driver_factory, hash_ring, rpc
    from ironic.conductor import manager
    from ironic.conf import CONF
    from ironic.db import api as dbapi_mod

    service = manager.ConductorManager(CONF.host, "ironic.conductor_manager")
    service.dbapi = dbapi_mod.get_instance()
    hardware = driver_factory.hardware_types()
    driver_factory.NetworkInterfaceFactory()
    driver_factory.StorageInterfaceFactory()
    service.conductor = objects.Conductor.register(
        None, service.host, list(hardware), CONF.conductor.conductor_group
    )
    service._register_and_validate_hardware_interfaces(hardware)
    service._init_executors(
        CONF.conductor.workers_pool_size, CONF.conductor.reserved_workers_pool_percentage
    )
    service.ring_manager = hash_ring.HashRingManager()
    service._keepalive_evt = threading.Event()
    service._shutdown = threading.Event()
    rpc.set_global_manager(service)
    return service


def _seed(nodes: int, ports_per_node: int, available: int) -> None:
    """The nodes (the first ``available`` of them available) and their ports, in one session."""
    from ironic import objects
    from ironic.common import context, driver_factory
    from ironic.db.sqlalchemy import api as sa_api
    from ironic.db.sqlalchemy import models

    template = objects.Node(context.get_admin_context(), driver="fake-hardware", uuid=node_uuid(0))
    driver_factory.check_and_update_node_interfaces(template)
    interfaces = {
        field: template[field] for field in template.fields if field.endswith("_interface")
    }
    with sa_api._session_for_write() as session:
        made = []
        for i in range(nodes):
            ready = i < available
            node = models.Node()
            node.update({
                "uuid": node_uuid(i), "name": f"n{i}", "driver": "fake-hardware",
                "provision_state": "available" if ready else "enroll",
                "power_state": "power off" if ready else None,
                "resource_class": AVAILABLE_CLASS if ready else None,
                "version": objects.Node.VERSION, **interfaces,
            })  # fmt: skip
            node["tags"] = []
            node["traits"] = []
            made.append(node)
        session.add_all(made)
        session.flush()
        ports = []
        for i in range(nodes * ports_per_node):
            port = models.Port()
            port.update({
                "uuid": port_uuid(i), "address": mac(i + 1), "pxe_enabled": True,
                "node_id": made[i // ports_per_node].id, "version": objects.Port.VERSION,
                **port_fields(i),
            })  # fmt: skip
            ports.append(port)
        session.add_all(ports)


def main(workdir: str, nodes: int, ports_per_node: int, available: int) -> None:
    # isort: off
    import ironic.command  # noqa: F401  (first: it picks oslo.service's threading backend)

    # isort: on
    import logging
    import os

    db = os.path.join(workdir, "ironic.sqlite")
    conf = os.path.join(workdir, "ironic.conf")
    with open(conf, "w", encoding="utf-8") as f:
        f.write(_CONF.format(db=db))
    from ironic.api import app as api_app
    from ironic.common import i18n, service

    i18n.install("ironic")
    service.prepare_command(["ironic", "--config-file", conf])  # objects registered too
    app = api_app.VersionSelectorApplication()  # as the combined service builds it
    logging.getLogger().handlers[:] = [logging.NullHandler()]
    from ironic.db.sqlalchemy import models
    from oslo_db.sqlalchemy import enginefacade

    engine = enginefacade.writer.get_engine()
    models.Base.metadata.create_all(engine)
    raw = engine.raw_connection()
    raw.driver_connection.execute("PRAGMA journal_mode=WAL")
    raw.close()
    engine.dispose()
    _conductor()
    _seed(nodes, ports_per_node, available)
    from cheroot import wsgi as cw

    server = cw.Server(("127.0.0.1", 0), app, numthreads=16, max=-1, request_queue_size=128)
    server.prepare()
    print(server.bind_addr[1], flush=True)
    server.serve()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
