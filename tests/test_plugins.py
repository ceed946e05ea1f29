"""Plugin loading through stevedore: built-in entry points, a third-party package, extras."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.exceptions import DriverNotFound, MissingDependency
from ironic_fsm.hardware import installed_hardware_types, load_hardware_type, load_interface

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "plugin_package"


def test_builtin_hardware_types_are_installed_entry_points() -> None:
    names = installed_hardware_types()
    assert {"fake-hardware", "ipmi", "redfish"} <= set(names)


def test_unknown_hardware_type_lists_what_is_installed() -> None:
    with pytest.raises(DriverNotFound) as info:
        load_hardware_type("no-such-type")
    assert "no-such-type" in str(info.value)
    assert "fake-hardware" in str(info.value)


def test_interface_plugins_load_by_kind_and_name() -> None:
    power = load_interface("power", "fake")
    assert power.interface_type == "power"
    assert load_interface("power", "fake") is power  # one shared instance
    with pytest.raises(DriverNotFound, match="No power interface named 'nope'"):
        load_interface("power", "nope")


def test_node_picks_a_supported_interface_by_name() -> None:
    from ironic_fsm.drivers.fake import FakeVendor
    from ironic_fsm.interfaces import VendorInterface

    class QuietVendor(VendorInterface): ...

    conductor = ironic_fsm.Conductor()
    conductor.register_hardware_type(
        "picky",
        ironic_fsm.HardwareType(
            vendor=QuietVendor(),
            supported={"vendor": ["fake"]},
        ),
    )
    node = conductor.create_node(driver="picky", vendor_interface="fake",
                                 provision_state=states.MANAGEABLE)  # fmt: skip
    steps = conductor.get_clean_steps(node.uuid)
    assert any(st["step"] == "log_passthrough" for st in steps)  # FakeVendor's step
    assert isinstance(load_interface("vendor", "fake"), FakeVendor)
    with pytest.raises(DriverNotFound, match=r"vendor interface 'acme-turbo'.*supported: fake"):
        conductor.create_node(driver="picky", vendor_interface="acme-turbo")


def _venv_python(tmp_path: Path) -> Path:
    """A venv that sees this environment's packages (ironic_fsm included)."""
    target = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(target)
    return target / "bin" / "python"


def test_third_party_package_adds_a_hardware_type(tmp_path: Path) -> None:
    python = _venv_python(tmp_path)
    # Install the example plugin package into the venv with this pip.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--prefix", str(tmp_path / "venv"), str(PLUGIN)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    script = """
import ironic_fsm
from ironic_fsm.hardware import installed_hardware_types
assert "acme" in installed_hardware_types(), installed_hardware_types()
c = ironic_fsm.Conductor()
node = c.create_node(driver="acme", provision_state="manageable")
node = c.do_provisioning_action(node.uuid, "provide")
print(node.provision_state, node.driver_internal_info["acme_event_log_cleared"])
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["available", "1"]
    # Without the package, the same driver name is unknown (and says what is installed).
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ironic_fsm; ironic_fsm.Conductor().create_node(driver='acme')",
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "DriverNotFound" in done.stderr
    assert "No hardware type named 'acme' is installed" in done.stderr


_BLOCK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"No module named {{name!r}} (blocked by the test)")
        return None
sys.meta_path.insert(0, _Block())
"""


@pytest.mark.parametrize(
    ("driver", "module", "extra"), [("ipmi", "pyghmi", "ipmi"), ("redfish", "sushy", "redfish")]
)
def test_missing_extra_names_the_extra(driver: str, module: str, extra: str) -> None:
    """A plugin whose library is absent says which extra to install."""
    script = (
        _BLOCK.format(blocked={module})
        + f"""
import ironic_fsm
from ironic_fsm.exceptions import MissingDependency
c = ironic_fsm.Conductor()
try:
    node = c.create_node(driver={driver!r}, driver_info={{}})
    c.do_provisioning_action(node.uuid, "manage")
    print("LAST_ERROR", c.get_node(node.uuid).last_error)
except MissingDependency as exc:
    print("MISSING", exc.extra, exc)
"""
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"ironic_fsm[{extra}]" in done.stdout, done.stdout
    assert MissingDependency.__name__  # the type the library raises


def test_builtin_interfaces_are_entry_points_by_kind_and_name() -> None:
    from ironic_fsm.drivers.ipmi import IPMIPower
    from ironic_fsm.drivers.redfish import RedfishBoot, RedfishRescue

    assert isinstance(load_interface("power", "ipmi"), IPMIPower)
    assert isinstance(load_interface("boot", "redfish-virtual-media"), RedfishBoot)
    assert isinstance(load_interface("rescue", "redfish"), RedfishRescue)


def test_a_bmc_node_may_rehearse_on_fake_interfaces() -> None:
    """ipmi supports 'fake' for every kind: no BMC is contacted at all."""
    conductor = ironic_fsm.Conductor()
    node = conductor.create_node(
        driver="ipmi",
        driver_info={"ipmi_address": "192.0.2.1", "ipmi_username": "u", "ipmi_password": "p"},
        power_interface="fake",
        management_interface="fake",
        deploy_interface="fake",
    )
    for verb in ("manage", "provide", "deploy", "undeploy"):
        node = conductor.do_provisioning_action(node.uuid, verb)
        assert node.last_error is None
    assert node.provision_state == states.AVAILABLE
    with pytest.raises(DriverNotFound, match="power interface 'redfish' is not supported"):
        conductor.update_node(node.uuid, power_interface="redfish")
