"""Manual cleaning: run chosen steps on a manageable node, and recover when one fails.

Run it with ``python examples/manual_cleaning.py``. It uses
``fake-hardware``, whose BIOS and RAID interfaces keep their "settings" on
the node record, so the effect of each step can be printed.
"""

from __future__ import annotations

import ironic_fsm
from ironic_fsm import exceptions

RAID1 = {"logical_disks": [{"size_gb": 100, "raid_level": "1", "is_root_volume": True}]}


def show(node: ironic_fsm.Node) -> None:
    """Print the fields an operator looks at after a clean."""
    print(f"   provision_state={node.provision_state!r} target={node.target_provision_state!r}")
    if node.maintenance or node.last_error:
        print(f"   maintenance={node.maintenance} fault={node.fault!r}")
        print(f"   last_error={node.last_error!r}")


def main() -> None:
    """Clean a node by hand: list, validate, run, fail, recover."""
    conductor = ironic_fsm.Conductor()
    node = conductor.create_node(name="rack1-u07", target_raid_config=RAID1)
    conductor.do_provisioning_action("rack1-u07", "manage")  # enroll -> manageable

    print("1. The clean steps the node's driver offers (highest priority first):")
    for step in conductor.get_clean_steps("rack1-u07"):
        name = f"{step['interface']}.{step['step']}"
        args = ", ".join(step["argsinfo"]) or "-"
        print(f"   {name:<26} priority {step['priority']}  args: {args}")

    print("2. validate_clean_steps reports every problem at once, and changes nothing:")
    try:
        conductor.validate_clean_steps(
            "rack1-u07",
            [
                {"interface": "bios", "step": "apply_configuration"},  # missing 'settings'
                {"interface": "raid", "step": "rebuild"},  # no such step
                {"interface": "bios", "step": "factory_reset", "args": {"force": True}},
            ],
        )
    except exceptions.InvalidParameterValue as exc:
        for problem in exc.details["problems"]:
            print("   -", problem)

    print("3. A manual clean runs the steps in the order given, then returns to manageable:")
    steps = [
        {"interface": "raid", "step": "delete_configuration"},
        {
            "interface": "bios",
            "step": "apply_configuration",
            "args": {"settings": [{"name": "BootMode", "value": "Uefi"}]},
        },
        {"interface": "raid", "step": "create_configuration"},
        {"interface": "deploy", "step": "power_off"},  # a reserved step: honoured
    ]
    node = conductor.do_provisioning_action("rack1-u07", "clean", clean_steps=steps)
    show(node)
    print(f"   BIOS: {node.driver_internal_info['fake_bios_settings']}")
    print(f"   RAID: {node.raid_config}  power: {node.power_state!r}")

    print("4. A disallowed step is refused before anything starts:")
    try:
        conductor.do_provisioning_action(
            "rack1-u07",
            "clean",
            clean_steps=[{"interface": "vendor", "step": "send_raw", "args": {"raw_bytes": "00"}}],
        )
    except exceptions.StepNotAllowed as exc:
        print(f"   {type(exc).__name__}: {exc}")
    show(conductor.get_node("rack1-u07"))

    print("5. Steps the driver does not have are refused too; the node stays as it was:")
    try:
        conductor.do_provisioning_action(
            "rack1-u07", "clean", clean_steps=[{"interface": "raid", "step": "rebuild"}]
        )
    except exceptions.InvalidParameterValue as exc:
        print(f"   {type(exc).__name__}: {exc}")
    show(conductor.get_node("rack1-u07"))

    print("6. A step that raises fails the clean and puts the node in maintenance:")
    conductor.update_node("rack1-u07", target_raid_config={})  # create_configuration will fail
    node = conductor.do_provisioning_action(
        "rack1-u07", "clean", clean_steps=[{"interface": "raid", "step": "create_configuration"}]
    )
    show(node)
    try:
        conductor.do_provisioning_action("rack1-u07", "provide")
    except exceptions.InvalidStateRequested as exc:
        print(f"   provide is refused: {exc}")

    print("7. Recovering: fix the cause, manage, clear maintenance, provide:")
    conductor.update_node("rack1-u07", target_raid_config=RAID1)
    node = conductor.do_provisioning_action("rack1-u07", "manage")
    print(f"   after manage: {node.provision_state!r}, still in maintenance: {node.maintenance}")
    node = conductor.update_node("rack1-u07", maintenance=False)
    print(f"   maintenance cleared: fault={node.fault!r}")
    node = conductor.do_provisioning_action("rack1-u07", "provide")
    show(node)

    print("8. Manual cleaning by runbook (the node must carry one of its traits):")
    conductor.add_runbook(
        "bios-reset",
        [{"interface": "bios", "step": "factory_reset"}, {"interface": "deploy", "step": "hold"}],
        traits=["CUSTOM_BIOS_RESET"],
    )
    other = conductor.create_node(name="rack1-u08", provision_state="manageable")
    try:
        conductor.do_provisioning_action(other.uuid, "clean", runbook="bios-reset")
    except exceptions.InvalidParameterValue as exc:
        print(f"   refused: {exc}")
    conductor.update_node(other.uuid, traits=["CUSTOM_BIOS_RESET"])
    node = conductor.do_provisioning_action(other.uuid, "clean", runbook="bios-reset")
    print("   the runbook's hold step pauses the clean:")
    show(node)
    node = conductor.do_provisioning_action(other.uuid, "unhold")
    print("   after unhold, the manual clean still ends in manageable:")
    show(node)


if __name__ == "__main__":
    main()
