"""The same bad request gets the same answer through the library, the CLI and the API.

A manual clean whose step misses a required argument was sent to ``clean
failed`` by the library and the CLI, and answered 400 by the API. One rule
now (``docs/embedding.rst``, "Refused requests"): the request is refused
with the same words, and the node stays exactly as it was, reserved by no one.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from api_helpers import LATEST, api_process
from cli_harness import isolate_cli_env

from ironic_fsm import Conductor, cli
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores import SQLStore

#: fake-hardware's BIOS step needs ``settings``: missing, the request is bad.
BAD_STEPS = [{"interface": "bios", "step": "apply_configuration", "args": {}}]
WORDS = "bios.apply_configuration is missing these required arguments: settings"


def _manageable(db: Path, name: str) -> str:
    store = SQLStore(f"sqlite:///{db}")
    try:
        conductor = Conductor(store)
        node = conductor.create_node(name=name, driver="fake-hardware")
        return conductor.do_provisioning_action(node.uuid, "manage").uuid
    finally:
        store.close()


def _stored(db: Path, name: str) -> tuple[object, ...]:
    store = SQLStore(f"sqlite:///{db}")
    try:
        node = Conductor(store).get_node(name)
        return (node.provision_state, node.target_provision_state, node.reservation,
                node.last_error, node.maintenance, node.version)  # fmt: skip
    finally:
        store.close()


def test_a_bad_manual_clean_is_refused_alike_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_cli_env(tmp_path, monkeypatch)
    db = tmp_path / "nodes.sqlite"
    for name in ("lib", "cli", "api"):
        _manageable(db, name)
    before = {name: _stored(db, name) for name in ("lib", "cli", "api")}
    assert before["lib"][0] == "manageable"

    store = SQLStore(f"sqlite:///{db}")
    try:
        with pytest.raises(InvalidParameterValue) as library:
            Conductor(store).do_provisioning_action("lib", "clean", clean_steps=BAD_STEPS)
    finally:
        store.close()
    assert WORDS in str(library.value)

    capsys.readouterr()
    code = cli.main(["--db", str(db), "node", "clean", "cli", "--clean-steps",
                     json.dumps(BAD_STEPS)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert WORDS in err

    with api_process(db) as url:
        answer = httpx.put(
            f"{url}/v1/nodes/api/states/provision",
            json={"target": "clean", "clean_steps": BAD_STEPS},
            headers=LATEST,
            timeout=60,
        )
    assert answer.status_code == 400
    assert WORDS in json.loads(answer.json()["error_message"])["faultstring"]

    assert {name: _stored(db, name) for name in ("lib", "cli", "api")} == before
