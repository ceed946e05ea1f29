"""How SQLStore reads a database URL: split by urllib, a PostgreSQL one read by libpq."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore


def test_a_postgres_url_libpq_cannot_read_is_refused_at_once_without_its_password() -> None:
    # libpq's own reason quotes what it could not read: here, the password itself.
    with pytest.raises(InvalidParameterValue, match="cannot be read") as info:
        SQLStore("postgresql://fsm:hunter%zz@127.0.0.1:1/fsm")
    assert "hunter" not in str(info.value)
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_a_postgres_url_with_an_option_libpq_lacks_is_refused() -> None:
    with pytest.raises(InvalidParameterValue, match=re.escape("postgresql://fsm@127.0.0.1:1/fsm")):
        SQLStore("postgresql://fsm@127.0.0.1:1/fsm?no_such_option=1")


def test_a_hash_sign_is_part_of_a_sqlite_file_name(tmp_path: Path) -> None:
    with SQLStore(f"sqlite:///{tmp_path / 'fleet#1.sqlite'}") as store:
        store.create(Node(name="n"))
    assert (tmp_path / "fleet#1.sqlite").is_file()
