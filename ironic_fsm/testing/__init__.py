"""Real BMC peers for tests and demos: IPMI and Redfish emulators on loopback.

These start child processes serving the protocols on 127.0.0.1, so that
drivers are tested against real wire traffic, not mocks:

* :mod:`ironic_fsm.testing.ipmi_bmc`: the project's pyghmi BMC
  (``start_bmc``, ``start_bmcs``), one child process per BMC: pyghmi's
  server routes sessions by the client's address only, so one process
  serving several BMCs mixes up a client's sessions with them;
* :mod:`ironic_fsm.testing.ipmi_sim`: OpenIPMI's ``ipmi_sim``, a BMC in C
  that nobody here wrote (``start_sim``; Debian package ``openipmi``);
* :mod:`ironic_fsm.testing.redfish_emulator`: the sushy-tools emulator with
  the project's fake driver (``start_emulator``).

They need the ``demo`` extra (pyghmi, sushy-tools, bcrypt), and
``ipmi_sim`` its Debian package; they are imported only when used.
Applications can use them to test their own orchestration.
"""
