"""openstacksdk's own functional suite for the resources served, run against the API.

The suite ships in openstacksdk's wheel (``openstack/tests/functional/baremetal``)
and was written against real Ironic: each of its modules named here must
pass whole (no failure, no skip) against ``python -m ironic_fsm.api``. It
reaches the server as a devstack cloud would, through a ``clouds.yaml``
whose clouds have no auth (``auth: {endpoint: ...}``, so that version
discovery gives the microversion range its checks read) and no compute or
image service (its setup looks for flavors and images only where those exist).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import openstack
import pytest
from api_helpers import api_process

SUITE = Path(openstack.__file__).parent / "tests" / "functional" / "baremetal" / "v1"
#: The suite's modules of the resources served, and how many tests each has.
MODULES = {
    "test_port.py": 7, "test_port_group.py": 7, "test_chassis.py": 5, "test_allocation.py": 7,
    "test_volume_connector.py": 7, "test_volume_target.py": 7,
}  # fmt: skip


def _clouds(url: str, path: Path) -> Path:
    cloud = (
        f'{{auth_type: none, auth: {{endpoint: "{url}"}}, has_compute: false, has_image: false}}'
    )
    path.write_text(
        "clouds:\n"
        + "".join(f"  {n}: {cloud}\n" for n in ("devstack", "devstack-admin", "devstack-alt"))
    )
    return path


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_sdk_suite_passes(module: str, tmp_path: Path) -> None:
    with api_process(tmp_path / "sdk.sqlite") as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "OPENSTACKSDK"))}
        env.update(
            OS_CLIENT_CONFIG_FILE=str(_clouds(url, tmp_path / "clouds.yaml")),
            OS_CLOUD="devstack-admin", OPENSTACKSDK_SYSTEM_ADMIN_CLOUD="devstack-admin",
        )  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs",
             "-W", "ignore", "--rootdir", str(tmp_path), str(SUITE / module)],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary) if word != "warning"}
    assert counts == {"passed": MODULES[module]}, result.stdout[-4000:] + result.stderr[-2000:]
