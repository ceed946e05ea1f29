"""Retirement: take nodes out of service without losing track of them.

Run it with ``python examples/retirement.py``. A retired node keeps working
where it is (an active node stays active), but once it is torn down or
cleaned it stops in ``manageable`` instead of going back to ``available``,
and it cannot be provided until it is unretired.
"""

from __future__ import annotations

import ironic_fsm
from ironic_fsm import exceptions


def show(node: ironic_fsm.Node) -> None:
    """Print a node's state and retirement fields."""
    print(
        f"   {node.name}: {node.provision_state!r}, retired={node.retired}, "
        f"retired_reason={node.retired_reason!r}"
    )


def main() -> None:
    """Retire a spare node and a node in use; then bring one back."""
    conductor = ironic_fsm.Conductor()
    conductor.create_node(name="spare-1", provision_state="available")
    conductor.create_node(name="busy-1", provision_state="active")

    print("1. An available node cannot be retired (it could be handed out at any time):")
    try:
        conductor.update_node("spare-1", retired=True, retired_reason="end of warranty")
    except exceptions.InvalidState as exc:
        print(f"   {type(exc).__name__}: {exc}")

    print("2. Move it to manageable first, then retire it:")
    conductor.do_provisioning_action("spare-1", "manage")
    show(conductor.update_node("spare-1", retired=True, retired_reason="end of warranty"))

    print("3. A retired node cannot be provided:")
    try:
        conductor.do_provisioning_action("spare-1", "provide")
    except exceptions.NodeIsRetired as exc:
        print(f"   {type(exc).__name__}: {exc}")

    print("4. Manual cleaning still works (it always ends in manageable):")
    node = conductor.do_provisioning_action(
        "spare-1", "clean", clean_steps=[{"interface": "bios", "step": "factory_reset"}]
    )
    show(node)

    print("5. An active node may be retired; it stays active until its tenant leaves:")
    show(conductor.update_node("busy-1", retired=True, retired_reason="rack decommission"))
    node = conductor.do_provisioning_action("busy-1", "undeploy")
    print("   after undeploy, automated cleaning ends in manageable, not available:")
    show(node)

    print("6. Retired nodes are easy to find:")
    print("   list_nodes(retired=True):", [n.name for n in conductor.list_nodes(retired=True)])

    print("7. A reason needs the flag; unretiring clears the reason:")
    try:
        conductor.update_node("busy-1", retired=False, retired_reason="changed my mind")
    except exceptions.InvalidParameterValue as exc:
        print(f"   {type(exc).__name__}: {exc}")
    show(conductor.update_node("spare-1", retired=False))
    show(conductor.do_provisioning_action("spare-1", "provide"))


if __name__ == "__main__":
    main()
