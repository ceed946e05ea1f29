"""Ironic 39.0.0's conductor on PostgreSQL: the worker ``bench_pgcost.py`` runs beside ours.

Not imported by the benchmarks: it runs in Ironic's own virtualenv, which
this file builds when asked (``python benchmarks/_ironic_pg.py --install
[VENV]``: ``shared/bench/ironic_baseline/requirements-lock.txt`` plus
``psycopg2-binary``, Ironic's usual PostgreSQL driver). Nothing of Ironic
is kept in the repository.

As a worker (``python _ironic_pg.py URL N WORKDIR``, in that virtualenv) it
sets Ironic up as ``ironic-conductor`` does and as the baseline harness
does on SQLite (config file, ``objects.register_all``, the schema from
``models.Base.metadata.create_all``, a ``ConductorManager`` registered and
given synchronous executors), creates N ``fake-hardware`` nodes, says
``ready``, waits for ``go``, runs ``manage``, ``provide``, ``deploy`` and
``undeploy`` of each node in turn, and prints its CPU as JSON. All options
but the driver and database ones keep Ironic's defaults (node history on).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HOST = "bench-conductor"
CONF = """[DEFAULT]
host = {host}
log_file = {log}
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake
enabled_boot_interfaces = fake
enabled_console_interfaces = fake
enabled_deploy_interfaces = fake
enabled_firmware_interfaces = fake
enabled_inspect_interfaces = fake
enabled_management_interfaces = fake
enabled_power_interfaces = fake
enabled_raid_interfaces = fake
enabled_rescue_interfaces = fake
enabled_vendor_interfaces = fake
enabled_network_interfaces = noop
enabled_storage_interfaces = noop
[conductor]
automated_clean = true
[database]
connection = {url}
"""


def install(venv: Path) -> None:
    """Ironic 39's pinned virtualenv, with the PostgreSQL driver its SQLAlchemy URL names."""
    lock = Path(os.environ.get("IRONIC_BASELINE_DIR", "/work/shared/bench/ironic_baseline"))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q"]
    subprocess.run([*pip, "-r", str(lock / "requirements-lock.txt"), "psycopg2-binary"], check=True)


def _conductor(url: str, workdir: str) -> tuple[object, object]:
    """A ConductorManager set up as the service does; (manager, admin context)."""
    # isort: off
    import ironic.command  # noqa: F401  (first: it picks oslo.service's threading backend)

    # isort: on
    import threading

    import futurist
    from ironic import objects
    from ironic.common import config, context, driver_factory, hash_ring
    from ironic.conductor import manager
    from ironic.conf import opts
    from ironic.db import api as dbapi_mod
    from ironic.db.sqlalchemy import models
    from oslo_config import cfg
    from oslo_db.sqlalchemy import enginefacade
    from oslo_log import log

    conf_path = os.path.join(workdir, "ironic.conf")
    with open(conf_path, "w", encoding="utf-8") as conf:
        alchemy_url = "postgresql+psycopg2" + url[url.index("://") :]
        conf.write(CONF.format(host=HOST, log=os.path.join(workdir, "ironic.log"), url=alchemy_url))
    log.register_options(cfg.CONF)
    opts.update_opt_defaults()
    config.parse_args(["bench", "--config-file", conf_path], default_config_files=[])
    log.setup(cfg.CONF, "ironic")
    objects.register_all()
    models.Base.metadata.create_all(enginefacade.writer.get_engine())
    dbapi = dbapi_mod.get_instance()

    service = manager.ConductorManager(HOST, "ironic.conductor_manager")
    service._conductor_service_record_keepalive = lambda: None
    service._shutdown = threading.Event()
    service.dbapi = dbapi
    hardware = driver_factory.hardware_types()
    driver_factory.NetworkInterfaceFactory()
    driver_factory.StorageInterfaceFactory()
    service.conductor = objects.Conductor.register(
        None, service.host, list(hardware), cfg.CONF.conductor.conductor_group
    )
    service._register_and_validate_hardware_interfaces(hardware)
    service._executor = futurist.SynchronousExecutor()
    service._reserved_executor = futurist.SynchronousExecutor()
    service.ring_manager = hash_ring.HashRingManager()
    service._keepalive_evt = threading.Event()
    return service, context.get_admin_context()


def worker(url: str, n: int, workdir: str) -> None:
    service, ctx = _conductor(url, workdir)
    from ironic import objects
    from ironic.common import states
    from oslo_utils import uuidutils

    uuids = [uuidutils.generate_uuid() for _ in range(n)]
    for i, uuid in enumerate(uuids):
        node = objects.Node(
            ctx, uuid=uuid, name=f"bench-{i:06d}", driver="fake-hardware",
            provision_state=states.ENROLL,
        )  # fmt: skip
        service.create_node(ctx, node)
    print("ready", flush=True)
    sys.stdin.readline()
    before = os.times()
    for uuid in uuids:
        service.do_provisioning_action(ctx, uuid, "manage")
        service.do_provisioning_action(ctx, uuid, "provide")
        service.do_node_deploy(ctx, uuid)
        service.do_node_tear_down(ctx, uuid)
    after = os.times()
    node = objects.Node.get_by_uuid(ctx, uuids[-1])
    if node.provision_state != states.AVAILABLE or node.reservation:
        raise SystemExit(f"node {node.uuid} ended {node.provision_state}: {node.last_error}")
    cpu = (after.user + after.system) - (before.user + before.system)
    print(json.dumps({"cpu": cpu}), flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    if sys.argv[1] == "--install":
        install(Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/ironicpg/venv"))
    else:
        worker(sys.argv[1], int(sys.argv[2]), sys.argv[3])
