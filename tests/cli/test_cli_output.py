"""``ironic-fsm`` output as Ironic's client prints it: ``-f``, ``-c``, ``--long``, ``--fields``.

Driven in-process through ``main([...])`` on a SQLite file of the test's
own; the checks parse what was printed (JSON, YAML, CSV, tables).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
import yaml
from cli_harness import Run, ok
from helpers import python_ok

from ironic_fsm.cli.output import LONG_COLUMNS, SHOW_COLUMNS
from ironic_fsm.node import NODE_FIELDS

#: Also for the tests that do not ``run`` (see ``cli_env`` in conftest).
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture
def two_nodes(run: Run) -> list[dict[str, Any]]:
    """n1 manageable with a BMC password, n2 enrolled; their records as ``show -f json``."""
    ok(run("node", "create", "--name", "n1", "--driver-info", "ipmi_password=hunter2"))
    ok(run("node", "manage", "n1"))
    ok(run("node", "create", "--name", "n2", "--property", "cpus=8"))
    return [json.loads(ok(run("node", "show", n, "-f", "json")).out) for n in ("n1", "n2")]


LIST_COLUMNS = ["uuid", "name", "instance_uuid", "power_state", "provision_state", "maintenance"]


def test_list_json_has_the_list_columns_only(run: Run, two_nodes: list[dict[str, Any]]) -> None:
    listed = json.loads(ok(run("node", "list", "-f", "json")).out)
    assert [list(row) for row in listed] == [LIST_COLUMNS, LIST_COLUMNS]
    assert listed[0] == {
        "uuid": two_nodes[0]["uuid"],
        "name": "n1",
        "instance_uuid": None,
        "power_state": "power off",
        "provision_state": "manageable",
        "maintenance": False,
    }
    assert listed[1]["power_state"] is None


def test_list_in_every_format(run: Run, two_nodes: list[dict[str, Any]]) -> None:
    uuids = [node["uuid"] for node in two_nodes]

    as_yaml = yaml.safe_load(ok(run("node", "list", "-f", "yaml")).out)
    assert [row["name"] for row in as_yaml] == ["n1", "n2"]
    assert set(as_yaml[0]) == set(LIST_COLUMNS)

    rows = list(csv.reader(io.StringIO(ok(run("node", "list", "-f", "csv")).out)))
    assert rows[0] == LIST_COLUMNS
    assert [row[0] for row in rows[1:]] == uuids
    assert rows[1][4] == "manageable"

    value = ok(run("node", "list", "-f", "value", "-c", "uuid", "-c", "provision_state")).out
    assert value.splitlines() == [f"{uuids[0]} manageable", f"{uuids[1]} enroll"]

    table = ok(run("node", "list")).out.splitlines()
    assert table[0].startswith("+-")
    assert table[-1].startswith("+-")
    assert [cell.strip() for cell in table[1].strip("|").split("|")] == LIST_COLUMNS
    assert len(table) == 2 + 2 + 2


def test_columns_keep_the_output_order_and_unknown_ones_are_bad_usage(
    run: Run, two_nodes: list[dict[str, Any]]
) -> None:
    # As cliff: -c picks columns, the output keeps its own order.
    picked = json.loads(ok(run("node", "list", "-f", "json", "-c", "name", "-c", "uuid")).out)
    assert [list(row) for row in picked] == [["uuid", "name"], ["uuid", "name"]]
    wrong = run("node", "list", "-c", "Name")  # the former title: columns are field names now
    assert wrong.code == 2
    assert "'Name'" in wrong.err
    assert "'name'" in wrong.err  # the columns that exist are named
    assert "Traceback" not in wrong.err


def test_long_and_fields(run: Run, two_nodes: list[dict[str, Any]]) -> None:
    long = json.loads(ok(run("node", "list", "--long", "-f", "json")).out)
    # The client's detailed columns, in its order; those not kept here at Ironic's values.
    assert list(long[0]) == list(LONG_COLUMNS)
    assert set(long[0]) - set(NODE_FIELDS) == {
        "conductor", "console_enabled",
    }  # fmt: skip
    assert (long[0]["console_enabled"], long[0]["network_interface"]) == (False, "flat")
    assert (long[0]["disable_power_off"], long[0]["health"]) == (False, None)
    assert long[0]["retired"] is False
    assert long[0]["driver_info"] == {"ipmi_password": "******"}
    assert long[1]["properties"] == {"cpus": 8}
    assert long[0]["target_raid_config"] == {}

    fields = json.loads(
        ok(run("node", "list", "--fields", "name", "provision_state", "--fields", "retired",
               "-f", "json")).out
    )  # fmt: skip
    assert fields == [
        {"name": "n1", "provision_state": "manageable", "retired": False},
        {"name": "n2", "provision_state": "enroll", "retired": False},
    ]
    both = run("node", "list", "--long", "--fields", "name")
    assert both.code == 2
    bogus = run("node", "list", "--fields", "bogus")
    assert bogus.code == 2
    assert "bogus" in bogus.err


def test_show_formats_fields_and_columns(run: Run, two_nodes: list[dict[str, Any]]) -> None:
    shown = two_nodes[0]
    assert list(shown) == list(SHOW_COLUMNS)  # show -f json: openstack baremetal's fields
    assert shown["driver_info"] == {"ipmi_password": "******"}

    some = json.loads(
        ok(run("node", "show", "n1", "--fields", "name", "provision_state", "-f", "json")).out
    )
    assert some == {"name": "n1", "provision_state": "manageable"}
    compact = ok(run("node", "show", "n1", "--fields", "name", "uuid", "-f", "json", "--noindent"))
    assert compact.out == json.dumps({"uuid": shown["uuid"], "name": "n1"}) + "\n"  # API order

    value = ok(run("node", "show", "n1", "-f", "value", "-c", "provision_state", "-c", "name"))
    assert value.out.splitlines() == ["manageable", "n1"]  # in the order the API gives them

    as_yaml = yaml.safe_load(ok(run("node", "show", "n2", "-f", "yaml")).out)
    assert as_yaml["properties"] == {"cpus": 8}
    assert as_yaml["uuid"] == two_nodes[1]["uuid"]

    table = ok(run("node", "show", "n1", "-c", "name", "-c", "driver_info")).out.splitlines()
    assert [cell.strip() for cell in table[1].strip("|").split("|")] == ["Field", "Value"]
    assert [cell.strip() for cell in table[3].strip("|").split("|")] == [
        "driver_info",
        '{"ipmi_password": "******"}',
    ]
    assert run("node", "show", "n1", "-f", "csv").code == 2  # csv is for lists, as in cliff


def test_no_format_prints_a_secret(run: Run, two_nodes: list[dict[str, Any]]) -> None:
    for fmt in ("table", "json", "yaml", "value", "csv"):
        listed = ok(run("node", "list", "--long", "-f", fmt))
        assert "hunter2" not in listed.out + listed.err, fmt
    for fmt in ("table", "json", "yaml", "value"):
        shown = ok(run("node", "show", "n1", "-f", fmt))
        assert "hunter2" not in shown.out + shown.err, fmt


def test_csv_quoting(run: Run, two_nodes: list[dict[str, Any]]) -> None:
    ok(run("node", "set", "n2", "--name", 'odd,"name'))
    columns = ("-c", "name", "-c", "maintenance")

    def out(*extra: str) -> list[str]:
        return ok(run("node", "list", "-f", "csv", *columns, *extra)).out.splitlines()

    assert out() == ['"name","maintenance"', '"n1",False', '"odd,""name",False']
    assert out("--quote", "all") == ['"name","maintenance"', '"n1","False"', '"odd,""name","False"']
    assert out("--quote", "minimal") == ["name,maintenance", "n1,False", '"odd,""name",False']
    # No quoting at all still writes every value, escaping what needs it.
    assert out("--quote", "none") == ["name,maintenance", "n1,False", 'odd\\,\\"name,False']


def test_empty_list(run: Run) -> None:
    assert ok(run("node", "list")).out == ""
    header = ok(run("node", "list", "--print-empty")).out.splitlines()
    assert "provision_state" in header[1]
    assert json.loads(ok(run("node", "list", "-f", "json")).out) == []
    assert yaml.safe_load(ok(run("node", "list", "-f", "yaml")).out) == []


def test_create_prints_the_node_in_the_chosen_format(run: Run) -> None:
    created = ok(run("node", "create", "--name", "n1", "-f", "value", "-c", "provision_state"))
    assert created.out == "enroll\n"


def test_states_and_clean_steps_in_every_list_format(run: Run) -> None:
    states = yaml.safe_load(ok(run("states", "-f", "yaml")).out)
    assert states[0] == {
        "state": "enroll",
        "stable": True,
        "default_target": None,
        "accepted_events": ["manage"],
    }
    value = ok(run("states", "-f", "value", "-c", "state", "-c", "stable")).out.splitlines()
    assert value[0] == "enroll yes"
    ok(run("node", "create", "--name", "n1"))
    rows = list(csv.reader(io.StringIO(ok(run("node", "clean-steps", "n1", "-f", "csv")).out)))
    assert rows[0] == ["interface", "step", "priority", "abortable", "requires_ramdisk",
                       "argsinfo"]  # fmt: skip
    apply = next(row for row in rows if row[1] == "apply_configuration")
    assert apply[5] == "settings"


def test_diagram_takes_short_f(run: Run) -> None:
    assert "stateDiagram" in ok(run("diagram", "-f", "mermaid")).out
    assert "digraph" in ok(run("diagram", "-f", "dot")).out


def test_the_library_does_not_import_the_formatters() -> None:
    # The formatters are the CLI's: `import ironic_fsm` (and the CLI's JSON output) never
    # load them; a table does.
    code = (
        "import sys, ironic_fsm, ironic_fsm.cli as cli\n"
        "assert 'prettytable' not in sys.modules and 'yaml' not in sys.modules\n"
        "assert cli.main(['states', '-f', 'json']) == 0\n"
        "assert 'prettytable' not in sys.modules and 'yaml' not in sys.modules\n"
        "assert cli.main(['states']) == 0\n"
        "assert 'prettytable' in sys.modules and 'yaml' not in sys.modules\n"
        "print('LIGHT')\n"
    )
    assert python_ok(code).strip().endswith("LIGHT")
