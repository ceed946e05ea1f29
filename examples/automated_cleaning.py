"""Automated cleaning: when it runs, which steps it runs, and how an operator changes that.

Run it with ``python examples/automated_cleaning.py``. Every part uses
``fake-hardware``, whose only clean step enabled by default is
``vendor.log_passthrough`` (priority 1); the other clean steps have
priority 0 and run only when an operator enables them.
"""

from __future__ import annotations

import ironic_fsm
from ironic_fsm.events import STEP_START, Event


def provide(config: ironic_fsm.Config, **node_fields: object) -> list[str]:
    """Provide one manageable node under ``config``; return the clean steps that ran."""
    ran: list[str] = []

    def record(event: Event) -> None:
        if event.name == STEP_START and event.step is not None:
            ran.append(f"{event.step['interface']}.{event.step['step']}")

    conductor = ironic_fsm.Conductor(config=config, listeners=[record])
    # provision_state may be given to import a node that is already manageable.
    node = conductor.create_node(provision_state="manageable", **node_fields)
    node = conductor.do_provisioning_action(node.uuid, "provide")
    assert node.provision_state == "available", node.last_error
    return ran


def main() -> None:
    """Provide nodes under different cleaning settings and print the steps each ran."""
    print("1. Defaults: every enabled step (priority > 0), highest priority first")
    print("   ran:", provide(ironic_fsm.Config()))

    print("2. Config(automated_clean=False): no cleaning at all")
    print("   ran:", provide(ironic_fsm.Config(automated_clean=False)))

    print("3. ...unless the node's own automated_clean field says True")
    print("   ran:", provide(ironic_fsm.Config(automated_clean=False), automated_clean=True))

    print("4. Priority overrides enable, reorder and disable steps")
    config = ironic_fsm.Config(
        clean_step_priority_override={
            "raid.delete_configuration": 90,
            "bios.factory_reset": 80,
            "vendor.log_passthrough": 0,
        }
    )
    print("   ran:", provide(config))
    conductor = ironic_fsm.Conductor(config=config)
    node = conductor.create_node(provision_state="manageable")
    enabled = conductor.get_clean_steps(node.uuid, min_priority=1)
    print("   get_clean_steps(min_priority=1):", [(s["step"], s["priority"]) for s in enabled])

    print("5. Two enabled steps of one interface may not share a priority")
    clash = ironic_fsm.Config(
        clean_step_priority_override={
            "raid.delete_configuration": 50,
            "raid.create_configuration": 50,
        }
    )
    try:
        provide(clash)
    except ironic_fsm.exceptions.InvalidParameterValue as exc:
        print("   refused:", exc)

    print("6. Disallowed steps are left out silently")
    config = ironic_fsm.Config(
        clean_step_priority_override={"raid.delete_configuration": 90},
        disallow_clean_steps=["vendor.send_raw", "raid.delete_configuration"],
    )
    print("   ran:", provide(config))

    print("7. Runbook-driven automated cleaning (automated_cleaning_step_source)")
    conductor = ironic_fsm.Conductor(
        config=ironic_fsm.Config(
            automated_cleaning_step_source="hybrid",
            automated_cleaning_runbook_by_resource_class={"gpu": "CUSTOM_GPU_WIPE"},
        )
    )
    # Runbook steps run in list order; a runbook may only be used on a node
    # that carries one of its traits (with no traits given: its own name).
    conductor.add_runbook(
        "CUSTOM_GPU_WIPE",
        [
            {"interface": "bios", "step": "factory_reset"},
            {
                "interface": "firmware",
                "step": "update",
                "args": {"settings": [{"component": "gpu", "url": "http://fw/gpu.bin"}]},
            },
        ],
    )
    for resource_class, traits in (("gpu", ["CUSTOM_GPU_WIPE"]), ("general", [])):
        node = conductor.create_node(
            provision_state="manageable", resource_class=resource_class, traits=traits
        )
        node = conductor.do_provisioning_action(node.uuid, "provide")
        info = node.driver_internal_info
        print(
            f"   resource_class={resource_class!r}: {node.provision_state}, "
            f"firmware flashed: {'fake_firmware' in info}, "
            f"log_passthrough ran: {'fake_log_passthrough' in info}"
        )

    print("8. step source 'runbook' with no runbook configured: provide is refused")
    conductor = ironic_fsm.Conductor(
        config=ironic_fsm.Config(automated_cleaning_step_source="runbook")
    )
    node = conductor.create_node(provision_state="manageable")
    try:
        conductor.do_provisioning_action(node.uuid, "provide")
    except ironic_fsm.exceptions.InvalidParameterValue as exc:
        print("   refused:", exc)
    print("   node is still", repr(conductor.get_node(node.uuid).provision_state))


if __name__ == "__main__":
    main()
