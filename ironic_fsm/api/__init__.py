"""The Ironic-compatible REST API (extra ``ironic_fsm[api]``).

Existing Ironic clients (openstacksdk, python-ironicclient, the
``openstack baremetal`` CLI) drive a :class:`~ironic_fsm.Conductor`
through it unchanged. :func:`start_api` serves it in a thread of the
calling process; ``python -m ironic_fsm.api`` runs it standalone. The
core package never imports this one.
"""

from __future__ import annotations

from ironic_fsm.api.server import ApiServer, start_api

__all__ = ["ApiServer", "start_api"]
