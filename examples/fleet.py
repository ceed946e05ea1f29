"""A small fleet of real (emulated) BMCs through the Python API, on the application's own store.

Run it with ``python examples/fleet.py`` (needs ``pip install 'ironic_fsm[demo]'``).
It is ``ironic-fsm demo`` without the show: one IPMI BMC and one Redfish
BMC start on 127.0.0.1; their nodes live in the stdlib-SQLite store of
``examples/own_store.py``; each goes manage -> inspect (Redfish) -> provide
-> deploy -> undeploy, and what the BMCs themselves report is printed at
the end. Every BMC process is stopped on the way out.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from own_store import SQLite3Store

import ironic_fsm
from ironic_fsm.events import Event
from ironic_fsm.testing.ipmi_bmc import start_bmc
from ironic_fsm.testing.redfish_emulator import start_emulator


def show(event: Event) -> None:
    """One line per transition and per step."""
    if event.step is not None:
        print(f"  {event.node[:8]} {event.name:<10} {event.step['interface']}.{event.step['step']}")
    else:
        print(f"  {event.node[:8]} {event.previous_state} --{event.event}--> {event.state}")


def main() -> None:
    """Enroll both BMCs, run the lifecycle, print the BMCs' own view."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        bmc = start_bmc(workdir / "ipmi")
        emulator = start_emulator(workdir / "redfish")
        store = SQLite3Store(workdir / "fleet.sqlite")
        try:
            conductor = ironic_fsm.Conductor(store=store, listeners=[show])
            ipmi_node = conductor.create_node(
                name="ipmi-0",
                driver="ipmi",
                driver_info={
                    "ipmi_address": bmc.address,
                    "ipmi_port": bmc.port,
                    "ipmi_username": bmc.user,
                    "ipmi_password": bmc.password,
                    "ipmi_timeout": 5,
                },
            )
            redfish_node = conductor.create_node(
                name="redfish-0", driver="redfish", driver_info=emulator.driver_info()
            )
            for node, verbs in (
                (ipmi_node, ("manage", "provide", "deploy")),
                (redfish_node, ("manage", "inspect", "provide", "deploy")),
            ):
                print(f"{node.name}:")
                for verb in verbs:
                    node = conductor.do_provisioning_action(node.uuid, verb)
                    assert node.last_error is None, node.last_error
            print("while active, the BMCs say:")
            print(f"  ipmi-0:    power {bmc.state()['power']}, boot {bmc.state()['boot_device']}")
            system = emulator.system_state()
            inspected = conductor.get_node("redfish-0").properties
            print(
                f"  redfish-0: power {system.get('power_state')}, "
                f"{inspected.get('memory_mb')} MB, {len(inspected.get('macs', []))} NICs"
            )
            for name in ("ipmi-0", "redfish-0"):
                node = conductor.do_provisioning_action(name, "undeploy")
                print(f"{name} is {node.provision_state!r}, power {node.power_state!r}")
        finally:
            store.close()
            bmc.stop()
            emulator.stop()


if __name__ == "__main__":
    main()
