"""Real BMC peers for tests and demos: IPMI and Redfish emulators on loopback.

These start child processes serving the protocols on 127.0.0.1, so that
drivers are tested against real wire traffic, not mocks:

* :mod:`ironic_fsm.testing.ipmi_bmc`: the project's pyghmi BMC
  (``start_bmc``, ``start_bmcs``);
* :mod:`ironic_fsm.testing.redfish_emulator`: the sushy-tools emulator with
  the project's fake driver (``start_emulator``).

They need the ``demo`` extra (pyghmi, sushy-tools, bcrypt) and are imported
only when used. Applications can use them to test their own orchestration.
"""
