"""Interfaces chosen per node, as Ironic does: supported, enabled, defaults, reset.

A hardware type supports several implementations of each kind; the
conductor's Config enables some (``enabled_<kind>_interfaces``) and picks a
default (``default_<kind>_interface``, else the type's first enabled); a
node chooses with its ``<kind>_interface`` field.
"""

from __future__ import annotations

import pytest

import ironic_fsm
from ironic_fsm import Conductor, Config, states
from ironic_fsm.drivers.agent import AgentDeploy
from ironic_fsm.drivers.generic import RAMDISK_KEY, IPXEBoot, PXEBoot, RamdiskDeploy
from ironic_fsm.drivers.pending import PendingAgentRAID
from ironic_fsm.exceptions import (
    DriverNotFound,
    IncompatibleInterface,
    InterfaceNotFound,
    InvalidParameterValue,
    UnsupportedDriverExtension,
    UnsupportedOperation,
)
from ironic_fsm.hardware import HardwareType, load_interface
from ironic_fsm.interfaces import INTERFACE_KINDS, NO_OP_NAMES
from ironic_fsm.task import Task

IPMI_INFO = {"ipmi_address": "192.0.2.1", "ipmi_username": "u", "ipmi_password": "p"}


def _driver(conductor: Conductor, ident: str) -> HardwareType:
    return conductor.hardware_type_for(conductor.get_node(ident))


# -- the cases of the issue ------------------------------------------------------------------


def test_fake_hardware_accepts_deploy_fake_and_no_raid() -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="fake-hardware", deploy_interface="fake")
    assert node.deploy_interface == "fake"
    node = conductor.update_node(node.uuid, raid_interface="no-raid")
    assert node.raid_interface == "no-raid"
    raid = _driver(conductor, node.uuid).raid
    assert raid.no_op
    task = Task(node=node, driver=_driver(conductor, node.uuid), config=conductor.config)
    with pytest.raises(UnsupportedDriverExtension, match=r"'no-raid'.*create_configuration"):
        raid.create_configuration(task)


def test_ipmi_node_with_ipxe_boot_and_agent_raid_is_accepted() -> None:
    """What gophercloud's test creates."""
    conductor = Conductor()
    node = conductor.create_node(
        driver="ipmi", driver_info=IPMI_INFO, boot_interface="ipxe", raid_interface="agent"
    )
    driver = _driver(conductor, node.uuid)
    assert isinstance(driver.boot, IPXEBoot)
    assert isinstance(driver.raid, PendingAgentRAID)
    task = Task(node=node, driver=driver, config=conductor.config)
    with pytest.raises(UnsupportedOperation, match="needs the ramdisk agent"):
        driver.raid.create_configuration(task)


def test_every_ironic_name_is_an_installed_implementation() -> None:
    names = {
        "boot": ["fake", "pxe", "ipxe", "redfish-virtual-media", "redfish-https"],
        "deploy": ["direct", "ramdisk", "fake"],
        "network": ["noop", "flat"],
        "storage": ["noop", "fake"],
        "inspect": ["agent", "redfish", "no-inspect", "fake"],
        "raid": ["agent", "redfish", "no-raid", "fake"],
        **{kind: [f"no-{kind}", "fake"] for kind in ("console", "vendor", "firmware", "bios")},
        "rescue": ["no-rescue", "fake"],
    }
    for kind, wanted in names.items():
        for name in wanted:
            iface = load_interface(kind, name)
            assert iface.interface_type == kind, (kind, name)


def test_no_op_names_are_ironics() -> None:
    assert NO_OP_NAMES["raid"] == "no-raid"
    assert NO_OP_NAMES["network"] == NO_OP_NAMES["storage"] == "noop"
    assert load_interface("raid", "no-raid").no_op


# -- defaults ---------------------------------------------------------------------------------


def test_defaults_follow_the_types_preference() -> None:
    conductor = Conductor()
    ipmi = conductor.default_interfaces("ipmi")
    assert ipmi["power"] == "ipmitool"
    assert ipmi["boot"] == "ipxe"
    assert ipmi["raid"] == "no-raid"
    assert ipmi["network"] == "flat"
    assert ipmi["storage"] == "noop"  # Ironic's default_storage_interface
    fake = conductor.default_interfaces("fake-hardware")
    assert fake["deploy"] == fake["console"] == "fake"
    assert set(fake) == set(INTERFACE_KINDS)


def test_configured_default_wins_when_supported_and_enabled() -> None:
    conductor = Conductor(config=Config(default_boot_interface="pxe"))
    assert conductor.default_interfaces("ipmi")["boot"] == "pxe"
    node = conductor.create_node(driver="ipmi", driver_info=IPMI_INFO)
    assert node.boot_interface is None  # None: the default, stored as such
    assert isinstance(_driver(conductor, node.uuid).boot, PXEBoot)
    # A default the type does not support: its first enabled one instead.
    other = Conductor(config=Config(default_raid_interface="redfish"))
    assert other.default_interfaces("ipmi")["raid"] == "no-raid"


def test_a_disabled_first_choice_gives_the_next_enabled_one() -> None:
    conductor = Conductor(config=Config(enabled_boot_interfaces=["pxe", "fake"]))
    assert conductor.default_interfaces("ipmi")["boot"] == "pxe"
    assert conductor.enabled_interfaces("ipmi")["boot"] == ["pxe", "fake"]


def test_no_enabled_implementation_is_an_error_naming_the_kind() -> None:
    conductor = Conductor(config=Config(enabled_raid_interfaces=["redfish"]))
    with pytest.raises(InvalidParameterValue, match="no default value found for raid interface"):
        conductor.create_node(driver="ipmi", driver_info=IPMI_INFO)
    assert conductor.list_nodes() == []


# -- choosing ---------------------------------------------------------------------------------


def test_a_disabled_name_is_refused_in_ironics_words_and_nothing_changes() -> None:
    conductor = Conductor(config=Config(enabled_raid_interfaces=["no-raid", "fake"]))
    node = conductor.create_node(driver="fake-hardware", name="n1")
    with pytest.raises(InterfaceNotFound) as caught:
        conductor.update_node("n1", raid_interface="agent")
    assert str(caught.value) == (
        "Could not find the following interface in the "
        "'ironic_fsm.hardware.interfaces.raid' entrypoint: agent. "
        "Valid interfaces are ['no-raid', 'fake']."
    )
    assert isinstance(caught.value, InvalidParameterValue)
    after = conductor.get_node("n1")
    assert (after.raid_interface, after.version, after.reservation) == (None, node.version, None)


def test_an_unsupported_name_is_refused() -> None:
    conductor = Conductor()
    with pytest.raises(IncompatibleInterface, match="raid interface implementation 'redfish'"):
        conductor.create_node(driver="ipmi", driver_info=IPMI_INFO, raid_interface="redfish")
    with pytest.raises(InterfaceNotFound, match=r"entrypoint: acme\. Valid interfaces are"):
        conductor.create_node(driver="fake-hardware", raid_interface="acme")
    assert conductor.list_nodes() == []


def test_fake_hardware_takes_any_installed_implementation() -> None:
    """As Ironic's: to rehearse an implementation without its hardware type."""
    conductor = Conductor()
    node = conductor.create_node(driver="fake-hardware", power_interface="ipmitool")
    assert type(_driver(conductor, node.uuid).power).__name__ == "IPMIPower"


def test_the_driver_is_built_once_per_choice() -> None:
    conductor = Conductor()
    a = conductor.create_node(driver="fake-hardware", boot_interface="pxe")
    b = conductor.create_node(driver="fake-hardware", boot_interface="pxe")
    c = conductor.create_node(driver="fake-hardware")
    assert _driver(conductor, a.uuid) is _driver(conductor, b.uuid)
    assert _driver(conductor, c.uuid) is not _driver(conductor, a.uuid)


# -- reset ------------------------------------------------------------------------------------


def test_a_new_driver_resets_the_interfaces_not_given() -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="fake-hardware", raid_interface="no-raid",
                                 deploy_interface="fake")  # fmt: skip
    node = conductor.update_node(node.uuid, driver="manual-management", boot_interface="pxe")
    assert (node.raid_interface, node.deploy_interface, node.boot_interface) == (
        None, None, "pxe",
    )  # fmt: skip


def test_reset_interfaces_false_keeps_them_and_they_must_fit_the_new_driver() -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="fake-hardware", raid_interface="no-raid")
    node = conductor.update_node(node.uuid, driver="ipmi", reset_interfaces=False,
                                 driver_info=IPMI_INFO)  # fmt: skip
    assert node.raid_interface == "no-raid"
    conductor.update_node(node.uuid, power_interface="ipmitool")
    with pytest.raises(IncompatibleInterface, match="'ipmitool'"):
        conductor.update_node(node.uuid, driver="redfish", reset_interfaces=False)
    assert conductor.get_node(node.uuid).driver == "ipmi"


def test_reset_interfaces_needs_a_new_driver() -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="fake-hardware", raid_interface="no-raid")
    with pytest.raises(InvalidParameterValue, match="only be used when changing the node's driver"):
        conductor.update_node(node.uuid, reset_interfaces=True, raid_interface="fake")
    assert conductor.get_node(node.uuid).raid_interface == "no-raid"


# -- the generic implementations at work ---------------------------------------------------


def test_ramdisk_deploy_with_pxe_boot_network_boots_for_good() -> None:
    conductor = Conductor()
    node = conductor.create_node(
        driver="fake-hardware", deploy_interface="ramdisk", boot_interface="pxe",
        instance_info={"kernel": "http://x/k", "ramdisk": "http://x/r"},
    )  # fmt: skip
    assert isinstance(_driver(conductor, node.uuid).deploy, RamdiskDeploy)
    for verb in ("manage", "provide", "deploy"):
        node = conductor.do_provisioning_action(node.uuid, verb)
    assert node.provision_state == states.ACTIVE, node.last_error
    info = node.driver_internal_info
    assert info["fake_boot_device"] == {"boot_device": "pxe", "persistent": True}
    assert info[RAMDISK_KEY] == {
        "loader": "pxe", "params": {"kernel": "http://x/k", "ramdisk": "http://x/r"},
    }  # fmt: skip
    assert node.power_state == states.POWER_ON
    node = conductor.do_provisioning_action(node.uuid, "undeploy")
    assert RAMDISK_KEY not in node.driver_internal_info
    assert node.power_state == states.POWER_OFF


def test_direct_deploy_cleans_through_the_agent_and_needs_an_image_to_deploy() -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="fake-hardware", deploy_interface="direct")
    assert isinstance(_driver(conductor, node.uuid).deploy, AgentDeploy)
    conductor.do_provisioning_action(node.uuid, "manage")
    node = conductor.do_provisioning_action(node.uuid, "provide")
    # The ramdisk was booted; its agent's first heartbeat will tell the steps (tests/agent).
    assert node.provision_state == states.CLEANWAIT
    assert node.power_state == states.POWER_ON
    uncleaned = conductor.create_node(
        driver="fake-hardware", deploy_interface="direct", automated_clean=False
    )
    for verb in ("manage", "provide"):
        uncleaned = conductor.do_provisioning_action(uncleaned.uuid, verb)
    # The image is written by the agent (tests/agent); without one, the request is refused.
    with pytest.raises(
        InvalidParameterValue, match=r"Missing are: \['instance_info.image_source'\]"
    ):
        conductor.do_provisioning_action(uncleaned.uuid, "deploy")
    assert conductor.get_node(uncleaned.uuid).provision_state == states.AVAILABLE
    assert conductor.get_node(uncleaned.uuid).reservation is None


def test_manual_management_is_ironics() -> None:
    conductor = Conductor()
    defaults = conductor.default_interfaces("manual-management")
    assert (defaults["power"], defaults["management"], defaults["boot"]) == (
        "fake", "noop", "ipxe",
    )  # fmt: skip
    assert defaults["deploy"] == "direct"
    assert conductor.enabled_interfaces("manual-management")["deploy"] == [
        "direct", "ramdisk", "fake",
    ]  # fmt: skip
    node = conductor.create_node(driver="manual-management", deploy_interface="fake")
    for verb in ("manage", "provide", "deploy"):
        node = conductor.do_provisioning_action(node.uuid, verb)
    assert node.provision_state == states.ACTIVE, node.last_error
    assert "manual-management" in conductor.served_hardware_types()


def test_an_unknown_driver_is_still_driver_not_found() -> None:
    with pytest.raises(DriverNotFound, match="acme"):
        ironic_fsm.Conductor().create_node(driver="acme")


@pytest.mark.parametrize(
    ("option", "value"),
    [("enabled_raid_interfaces", "no-raid"), ("enabled_raid_interfaces", [""]),
     ("default_boot_interface", 3)],
)  # fmt: skip
def test_config_options_are_checked(option: str, value: object) -> None:
    with pytest.raises(InvalidParameterValue, match=option):
        Config(**{option: value})
