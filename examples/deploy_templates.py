"""Deploy steps: the driver's, deploy templates chosen by traits, and the user's own.

Run it with ``python examples/deploy_templates.py``. It plans deployments
with ``validate_deploy_steps`` (which changes nothing), shows the planner's
refusals, and then deploys, printing each step as it runs.
"""

from __future__ import annotations

import ironic_fsm
from ironic_fsm import exceptions
from ironic_fsm.events import STEP_FAIL, STEP_START, Event

RAID1 = {"logical_disks": [{"size_gb": 100, "raid_level": "1", "is_root_volume": True}]}


def print_plan(title: str, plan: list[dict[str, object]]) -> None:
    """One line per planned step, in run order."""
    print(title)
    for step in plan:
        args = f"  args={step['args']}" if step["args"] else ""
        print(f"   {step['priority']:>3}  {step['interface']}.{step['step']}{args}")


def print_steps(event: Event) -> None:
    """A listener: say when each deploy step starts or fails."""
    if event.name in (STEP_START, STEP_FAIL) and event.step is not None:
        print(f"   {event.name:<10} {event.step['interface']}.{event.step['step']}")


def main() -> None:
    """Plan and run deployments with templates and user steps."""
    conductor = ironic_fsm.Conductor(listeners=[print_steps])

    # A deploy template is a named list of steps with priorities. A node uses
    # it when instance_info['traits'] names it and the node has that trait.
    conductor.add_deploy_template(
        "CUSTOM_RAID1",
        [
            {"interface": "raid", "step": "delete_configuration", "priority": 95, "args": {}},
            {"interface": "raid", "step": "create_configuration", "priority": 90, "args": {}},
        ],
    )
    conductor.add_deploy_template(
        "CUSTOM_UEFI",
        [
            {
                "interface": "bios",
                "step": "apply_configuration",
                "priority": 97,
                "args": {"settings": [{"name": "BootMode", "value": "Uefi"}]},
            }
        ],
    )
    node = conductor.create_node(
        name="db-01",
        provision_state="available",
        traits=["CUSTOM_RAID1", "CUSTOM_UEFI"],
        target_raid_config=RAID1,
        instance_info={"image_source": "http://images/db.qcow2", "traits": ["CUSTOM_RAID1"]},
    )

    print_plan(
        "1. Driver steps + the CUSTOM_RAID1 template:", conductor.validate_deploy_steps("db-01")
    )

    user_steps = [
        # Overrides the template's step of the same name (and its priority).
        {"interface": "raid", "step": "create_configuration", "priority": 0, "args": {}},
        # A driver step with priority 0, enabled for this deployment.
        {"interface": "bios", "step": "factory_reset", "priority": 99, "args": {}},
    ]
    print_plan(
        "2. With user deploy_steps (priority 0 removes a step):",
        conductor.validate_deploy_steps("db-01", user_steps),
    )

    print("3. The planner refuses, listing every problem:")
    bad_requests = {
        "core step moved": [{"interface": "deploy", "step": "deploy", "priority": 50, "args": {}}],
        "unknown step": [{"interface": "bios", "step": "overclock", "priority": 50, "args": {}}],
        "a step twice": [
            {"interface": "bios", "step": "factory_reset", "priority": 50, "args": {}},
            {"interface": "bios", "step": "factory_reset", "priority": 40, "args": {}},
        ],
    }
    for what, steps in bad_requests.items():
        try:
            conductor.validate_deploy_steps("db-01", steps)
        except exceptions.InvalidParameterValue as exc:
            print(f"   {what}: {exc.details['problems']}")
    stray = conductor.create_node(
        provision_state="available", instance_info={"traits": ["CUSTOM_UEFI"]}
    )
    try:
        conductor.do_provisioning_action(stray.uuid, "deploy")
    except exceptions.InvalidParameterValue as exc:
        print(f"   instance trait not on the node: {exc.details['problems']}")
    print(f"   ...and that node is still {conductor.get_node(stray.uuid).provision_state!r}")

    print("4. Deploy db-01 with both templates and a user step:")
    conductor.update_node(
        "db-01",
        instance_info={
            "image_source": "http://images/db.qcow2",
            "traits": ["CUSTOM_RAID1", "CUSTOM_UEFI"],
        },
    )
    node = conductor.do_provisioning_action(
        "db-01",
        "deploy",
        deploy_steps=[{"interface": "bios", "step": "factory_reset", "priority": 99, "args": {}}],
    )
    print(f"   -> {node.provision_state!r}; BIOS {node.driver_internal_info['fake_bios_settings']}")
    print(f"      RAID {node.raid_config}")

    print("5. A failed deploy step: deploy failed, deploy_step shows the failed step:")
    bare = conductor.create_node(name="web-07", provision_state="available")  # no RAID target
    node = conductor.do_provisioning_action(
        bare.uuid,
        "deploy",
        deploy_steps=[
            {"interface": "raid", "step": "create_configuration", "priority": 95, "args": {}}
        ],
    )
    print(f"   -> {node.provision_state!r} (target {node.target_provision_state!r})")
    print(f"      deploy_step={node.deploy_step['interface']}.{node.deploy_step['step']}")
    print(f"      last_error={node.last_error!r}")
    print(f"      maintenance={node.maintenance} (deploy failures do not set it)")
    node = conductor.do_provisioning_action(bare.uuid, "deploy")  # try again, driver steps only
    print(f"   deploy again without the step -> {node.provision_state!r}")


if __name__ == "__main__":
    main()
