"""A periodic task through a store outage: one warning when it starts, one line when it ends.

Not a traceback per pass: a heartbeat every 10 s through a 5-minute outage
would bury the log. Other failures keep their traceback on every pass.
"""

from __future__ import annotations

import logging

import pytest

from ironic_fsm.exceptions import StoreError, StoreUnavailable
from ironic_fsm.service.periodic import Periodic


def test_an_outage_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    outcomes: list[Exception | None] = [
        StoreUnavailable("The PostgreSQL database db is unavailable"),
        StoreUnavailable("The PostgreSQL database db is unavailable"),
        StoreUnavailable("The PostgreSQL database db is unavailable"),
        None,
        StoreError("The PostgreSQL database db failed the request"),
        StoreError("The PostgreSQL database db failed the request"),
    ]

    def duty() -> None:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    task = Periodic("claim", duty, 1.0)
    with caplog.at_level(logging.DEBUG, logger="ironic_fsm.service"):
        for _ in range(6):
            task.run_once()
    lines = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines[:2] == [
        (
            "WARNING",
            "Periodic task claim: the store is unavailable (The PostgreSQL database db is "
            "unavailable); retrying every 1 s",
            False,
        ),
        ("INFO", "Periodic task claim: the store is back after 3 failed passes", False),
    ]
    assert [(level, tb) for level, _, tb in lines[2:]] == [("ERROR", True), ("ERROR", True)]
    assert (task.passes, task.failures) == (1, 5)
