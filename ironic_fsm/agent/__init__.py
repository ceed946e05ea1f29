"""The ramdisk agent's half: its token, and a client for its API.

Ironic drives a machine's BMC for power and boot, and the ramdisk agent
(Ironic Python Agent, IPA) for what only the machine itself can do: erase
and write disks, report inventory. The agent finds its node through the
API's lookup, heartbeats with the token that lookup gave it, and serves
commands that the conductor sends to the URL it heartbeats with.

* :mod:`ironic_fsm.agent.token`: the agent token's life in
  ``driver_internal_info`` (issued once, checked, wiped), and the other
  fields a heartbeat records.
* :mod:`ironic_fsm.agent.client`: :class:`~ironic_fsm.agent.client.AgentClient`,
  commands to the agent's ``/v1/commands/`` with a deadline on each call
  (extra ``agent``: httpx).

See ``docs/agent.rst`` ("Provisioning with the ramdisk agent").
"""

from __future__ import annotations
