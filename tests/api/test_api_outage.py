"""The API while its database cannot write: 503 with a clear message, never a 500.

SQLite on a real tmpfs filled to the last byte (root, as in CI): a change
is answered ``503`` with ``Retry-After`` and a message that says nothing
changed (not the database's path or the driver's text), the node is left
exactly as it was and unreserved, reads go on, and once space is back the
same request works.
"""

from __future__ import annotations

from pathlib import Path

from api_helpers import api_client, error_text
from tmpfs import tmpfs


def test_a_full_disk_answers_503_and_changes_nothing(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", size="4m") as disk:
        db = disk.path / "nodes.sqlite"
        with api_client(db) as (conductor, client):
            node = conductor.create_node(driver="fake-hardware", name="n1")
            before = conductor.get_node(node.uuid)
            patch = [{"op": "add", "path": "/extra/rack", "value": "r" * 100_000}]
            disk.fill()
            refused = client.patch(f"/v1/nodes/{node.uuid}", json=patch)
            assert refused.status_code == 503, refused.text
            assert refused.headers["Retry-After"] == "2"
            text = error_text(refused)
            assert "database of this service is unavailable" in text
            assert "nothing was changed" in text
            assert str(db) not in text  # the operator's log has it, not the client
            got = client.get(f"/v1/nodes/{node.uuid}")
            assert got.status_code == 200
            assert got.json()["extra"] == {}
            assert conductor.get_node(node.uuid) == before  # as it was, and unreserved
            disk.free()
            done = client.patch(f"/v1/nodes/{node.uuid}", json=patch)
            assert done.status_code == 200, done.text
            assert conductor.get_node(node.uuid).extra == {"rack": "r" * 100_000}
