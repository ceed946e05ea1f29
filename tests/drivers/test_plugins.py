"""Plugin loading through stevedore: built-in entry points, a third-party package, extras."""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest
from helpers import python_ok

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.exceptions import DriverNotFound, MissingDependency
from ironic_fsm.hardware import installed_hardware_types, load_hardware_type, load_interface

ROOT = Path(__file__).resolve().parents[2]
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
    with pytest.raises(DriverNotFound, match=r"vendor .* 'acme-turbo'.*supported: fake"):
        conductor.create_node(driver="picky", vendor_interface="acme-turbo")


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment minus what would leak the outer one into a child (or pip's settings)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"} and not k.startswith("PIP_")
    }
    env.update(extra)
    return env


def _run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a set-up command; on failure the assertion quotes what it printed."""
    kwargs.setdefault("timeout", 300)
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _venv_python(target: Path, *, with_pip: bool = False) -> Path:
    """A venv of its own: it never sees the base interpreter's site-packages."""
    venv.EnvBuilder(system_site_packages=False, with_pip=with_pip).create(target)
    return target / "bin" / "python"


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_path('purelib'))"
    return Path(_run([str(python), "-c", code], timeout=60).stdout.strip())


def _see_this_environment(python: Path) -> None:
    """Let a fresh venv import what this interpreter imports (ironic_fsm included).

    A ``.pth`` line runs ``site.addsitedir`` on this interpreter's path, so the
    ``.pth`` files there (editable installs) work too. A venv built with
    ``system_site_packages=True`` would see the *base* interpreter's packages
    instead, and a tox environment's dependencies are not there.
    """
    paths = [p for p in sys.path if p and Path(p).is_dir()]
    line = f"import site; list(map(site.addsitedir, {paths!r}))\n"
    (_site_packages(python) / "_this_environment.pth").write_text(line, encoding="utf-8")


def _build_wheel(source: Path, wheels: Path) -> Path:
    """Build ``source`` into a wheel with this environment's setuptools, offline.

    The tree is copied first: building in place would write ``build/`` and
    ``*.egg-info`` into the checkout.
    """
    tree = wheels.parent / f"{source.name}-src"
    shutil.copytree(
        source, tree,
        ignore=shutil.ignore_patterns(".*", "__pycache__", "build", "dist", "*.egg-info", "tests",
                                      "docs", "benchmarks", "examples", "ironic-fsm-demo"),
    )  # fmt: skip
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--isolated", "--no-deps",
          "--no-index", "--no-build-isolation", "--wheel-dir", str(wheels), str(tree)],
         env=_clean_env())  # fmt: skip
    (wheel,) = wheels.glob("*.whl")
    return wheel


def test_third_party_package_adds_a_hardware_type(tmp_path: Path) -> None:
    python = _venv_python(tmp_path / "venv")
    _see_this_environment(python)
    # Install the example plugin package into the venv with this pip.
    wheel = _build_wheel(PLUGIN, tmp_path / "wheels")
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--isolated", "--no-deps",
          "--no-index", "--prefix", str(tmp_path / "venv"), str(wheel)],
         env=_clean_env())  # fmt: skip
    script = """
import ironic_fsm
from ironic_fsm.hardware import installed_hardware_types
assert "acme" in installed_hardware_types(), installed_hardware_types()
c = ironic_fsm.Conductor()
node = c.create_node(driver="acme", provision_state="manageable")
node = c.do_provisioning_action(node.uuid, "provide")
print(node.provision_state, node.driver_internal_info["acme_event_log_cleared"])
"""
    done = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                          timeout=120, env=_clean_env())  # fmt: skip
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
    out = python_ok(script)
    assert f"ironic_fsm[{extra}]" in out, out
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
    with pytest.raises(DriverNotFound, match="power interface implementation 'redfish' is not"):
        conductor.update_node(node.uuid, power_interface="redfish")


def _wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a wheel (the project as it is now, not as installed)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(name))
    return metadata.get_all("Requires-Dist") or []


def _copy_requirements(requirements: list[str], target: Path) -> list[str]:
    """Copy the installed distributions these requirements need (no extras), transitively.

    This gives a fresh venv the project's plain dependencies without the
    network, and nothing else: the extras' libraries stay out of sight.
    """
    from importlib import metadata

    from packaging.requirements import Requirement  # pytest depends on packaging

    todo = list(requirements)
    seen: set[str] = set()
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req} is a dependency but is not installed in this environment")
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        todo += dist.requires or []
        assert dist.files is not None, f"{key} was installed without a RECORD"
        for file in dist.files:
            if ".." in file.parts:  # console scripts and data outside site-packages
                continue
            source = Path(str(dist.locate_file(file)))
            if source.is_file():
                (target / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / file)
    return sorted(seen)


def test_plain_install_runs_the_cli_on_sqlite_and_names_the_demo_extra(tmp_path: Path) -> None:
    """``pip install ironic_fsm`` with no extras: the embedded default works, the demo says why not.

    The project is built into a wheel and installed with ``--no-index`` into a
    fresh venv whose only other packages are copies of its plain
    dependencies, so pip fails if the dependency list is incomplete.
    """
    python = _venv_python(tmp_path / "venv", with_pip=True)
    wheel = _build_wheel(ROOT, tmp_path / "wheels")
    deps = tmp_path / "deps"
    copied = _copy_requirements(_wheel_requirements(wheel), deps)
    assert "transitions" in copied
    assert {"alembic", "sqlalchemy"} <= set(copied)  # the SQL store's migrations (SQLite too)
    (_site_packages(python) / "_deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    env = _clean_env(HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    env.pop("IRONIC_FSM_DB", None)
    env.pop("IRONIC_FSM_CONFIG", None)
    _run([str(python), "-m", "pip", "install", "--quiet", "--isolated", "--no-index", str(wheel)],
         env=env)  # fmt: skip
    # Nothing of any extra is importable there.
    probe = "import importlib.util as u; print([m for m in {m!r} if u.find_spec(m)])".format(
        m=("pyghmi", "sushy", "sushy_tools", "psycopg", "bcrypt")
    )
    assert _run([str(python), "-c", probe], env=env).stdout.strip() == "[]"

    cli = str(tmp_path / "venv" / "bin" / "ironic-fsm")
    db = str(tmp_path / "nodes.sqlite")
    created = _run([cli, "--db", db, "node", "create", "--name", "rack1-u07",
                    "--driver", "fake-hardware"], env=env, cwd=tmp_path)  # fmt: skip
    assert "rack1-u07" in created.stdout
    _run([cli, "--db", db, "node", "manage", "rack1-u07"], env=env, cwd=tmp_path)
    listed = _run([cli, "--db", db, "node", "list"], env=env, cwd=tmp_path)
    row = next(line for line in listed.stdout.splitlines() if "rack1-u07" in line)
    assert "manageable" in row
    assert (tmp_path / "nodes.sqlite").is_file()

    demo = subprocess.run(
        [cli, "demo", "--output", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert demo.returncode != 0
    said = (demo.stdout + demo.stderr).strip().splitlines()
    assert len(said) == 1, said
    assert "ironic_fsm[demo]" in said[0]
    assert "Traceback" not in demo.stderr
    assert not (tmp_path / "demo").exists()  # nothing started, nothing written
