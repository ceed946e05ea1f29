"""openstacksdk's own baremetal functional suite, run against ``serve --api``.

The suite ships in openstacksdk's wheel (``openstack/tests/functional/
baremetal``); it is what the SDK's maintainers run against a real Ironic.
Here it runs unchanged, as a separate pytest process, against a real
``ironic-fsm serve --api`` on SQLite and on PostgreSQL, configured the way a
standalone Ironic is reached (``auth_type: none`` and the API's endpoint;
no compute, image, network or volume service).

Real Ironic 39.0.0 started the same way (standalone, noauth, SQLite,
fake-hardware) passes 95 of its 96 tests. Every test passes here too except
those in :data:`KNOWN_GAPS`, each with the reason; and each of those must
still not pass, so that the list shrinks as the API grows (a gap that starts
passing fails this test until it is taken off the list).
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import openstack
import pytest
from api_helpers import serve_api
from conftest import fresh_postgres_url

SUITE = Path(openstack.__file__).parent / "tests" / "functional" / "baremetal"

_NOT_YET = "resource not served yet (issue 20)"

#: The suite's tests that do not pass here yet, by ``file::Class::test``, with why.
KNOWN_GAPS: dict[str, str] = {
    **{
        f"test_allocation.py::{name}": _NOT_YET
        for name in (
            "TestBareMetalAllocation::test_allocation_create_get_delete",
            "TestBareMetalAllocation::test_allocation_fields",
            "TestBareMetalAllocation::test_allocation_list",
            "TestBareMetalAllocation::test_allocation_negative_failure",
            "TestBareMetalAllocationUpdate::test_allocation_patch",
            "TestBareMetalAllocationUpdate::test_allocation_update",
        )
    },
    **{
        f"test_chassis.py::{name}": _NOT_YET
        for name in (
            "TestBareMetalChassis::test_chassis_create_get_delete",
            "TestBareMetalChassis::test_chassis_negative_non_existing",
            "TestBareMetalChassis::test_chassis_patch",
            "TestBareMetalChassis::test_chassis_update",
            "TestBareMetalChassisFields::test_chassis_fields",
        )
    },
    **{
        f"test_port.py::{name}": _NOT_YET
        for name in (
            "TestBareMetalPort::test_port_create_get_delete",
            "TestBareMetalPort::test_port_list",
            "TestBareMetalPort::test_port_list_update_delete",
            "TestBareMetalPort::test_port_negative_non_existing",
            "TestBareMetalPort::test_port_patch",
            "TestBareMetalPort::test_port_update",
            "TestBareMetalPortFields::test_port_fields",
        )
    },
    **{
        f"test_port_group.py::TestBareMetalPortGroup::{name}": _NOT_YET
        for name in (
            "test_port_group_create_get_delete",
            "test_port_group_fields",
            "test_port_group_negative_non_existing",
            "test_port_group_patch",
            "test_port_group_update",
            "test_port_list",
            "test_port_list_update_delete",
        )
    },
    **{
        f"test_volume_connector.py::TestBareMetalVolumeconnector::{name}": _NOT_YET
        for name in (
            "test_volume_connector_create_get_delete",
            "test_volume_connector_fields",
            "test_volume_connector_list",
            "test_volume_connector_list_update_delete",
            "test_volume_connector_negative_non_existing",
            "test_volume_connector_patch",
            "test_volume_connector_update",
        )
    },
    **{
        f"test_volume_target.py::TestBareMetalVolumetarget::{name}": _NOT_YET
        for name in (
            "test_volume_target_create_get_delete",
            "test_volume_target_fields",
            "test_volume_target_list",
            "test_volume_target_list_update_delete",
            "test_volume_target_negative_non_existing",
            "test_volume_target_patch",
            "test_volume_target_update",
        )
    },
    "test_driver.py::TestBareMetalDriverDetails::test_fake_hardware_get": (
        "driver details (enabled_*/default_* interfaces, 1.30) not served yet (issue 20)"
    ),
    "test_driver.py::TestBareMetalDriverDetails::test_fake_hardware_list_details": (
        "driver details (enabled_*/default_* interfaces, 1.30) not served yet (issue 20)"
    ),
    "test_node.py::TestBareMetalNodeListFirmware::test_list_firmware": _NOT_YET,
    "test_node.py::TestBareMetalVif::test_node_vif_attach_detach": _NOT_YET,
    "test_node.py::TestBareMetalVirtualMedia::test_node_vmedia_attach_detach": _NOT_YET,
    "test_node.py::TestNodeRetired::test_retired_in_available": (
        "needs per-node interface choice (issue 20)"
    ),
    **{
        f"test_inspection_rules.py::TestBareMetalInspectionRule::{name}": (
            "inspection rules (1.96) not served yet (issue 20)"
        )
        for name in (
            "test_baremetal_inspection_rule_create_get_delete",
            "test_baremetal_inspection_rule_list",
            "test_baremetal_inspection_rule_list_update_delete",
            "test_baremetal_inspection_rule_update",
            "test_inspection_rule_negative_non_existing",
            "test_inspection_rule_patch",
        )
    },
    **{
        f"test_node.py::TestBareMetalNodeInstanceName::{name}": "microversion 1.104 not served yet"
        for name in (
            "test_node_instance_name",
            "test_node_instance_name_query",
            "test_node_instance_name_with_instance_info",
        )
    },
    **{
        f"test_runbooks.py::TestBareMetalRunbookTraits::{name}": "microversion 1.112 not served yet"
        for name in (
            "test_runbook_add_remove_trait",
            "test_runbook_description",
            "test_runbook_logical_name",
            "test_runbook_set_traits",
        )
    },
}


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "suite.sqlite")
        return
    yield from fresh_postgres_url(request.getfixturevalue("postgres_server"))


def clouds_yaml(path: Path, url: str) -> Path:
    """The four clouds the suite names, each a standalone noauth Ironic at ``url``."""
    lines = ["clouds:"]
    for cloud in ("devstack", "devstack-alt", "devstack-admin", "devstack-system-admin"):
        lines += [
            f"  {cloud}:",
            "    auth_type: none",
            "    auth:",
            f"      endpoint: {url}",
            *(f"    has_{service}: false" for service in ("compute", "image", "network", "volume")),
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def outcomes(report: Path) -> dict[str, str]:
    """``file::Class::test`` -> passed / failed / skipped, from a JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module, _, cls = case.attrib["classname"].rpartition(".")
        key = f"{module.rpartition('.')[2]}.py::{cls}::{case.attrib['name']}"
        if case.find("skipped") is not None:
            found[key] = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            found[key] = "failed"
        else:
            found[key] = "passed"
    return found


def test_openstacksdk_functional_suite(db_url: str, tmp_path: Path) -> None:
    with serve_api("--db", db_url, "serve", "--no-access-log") as (url, _lines):
        env = {
            **os.environ,
            "OS_CLIENT_CONFIG_FILE": str(clouds_yaml(tmp_path / "clouds.yaml", url)),
            "OPENSTACKSDK_FUNC_TEST_TIMEOUT": "120",
        }
        report = tmp_path / "suite.xml"
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-o", "addopts=", "--rootdir", str(tmp_path), f"--junitxml={report}", str(SUITE)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    found = outcomes(report)
    assert len(found) >= 90, (len(found), run.stdout[-3000:])
    missing = sorted(set(KNOWN_GAPS) - set(found))
    assert not missing, f"gaps no longer in the suite (take them off the list): {missing}"
    failing = sorted(k for k, v in found.items() if v != "passed" and k not in KNOWN_GAPS)
    closed = sorted(k for k in KNOWN_GAPS if found[k] == "passed")
    passed = sum(v == "passed" for v in found.values())
    print(f"openstacksdk suite: {passed} passed of {len(found)}; {len(KNOWN_GAPS)} known gaps")
    assert not failing, f"{failing}\n{run.stdout[-6000:]}"
    assert not closed, f"gaps that now pass (take them off KNOWN_GAPS): {closed}"
