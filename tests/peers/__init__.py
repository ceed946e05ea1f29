"""Real BMC peers for tests: servers that run on 127.0.0.1 in child processes.

They speak the real protocols over real sockets, so the drivers are tested
against the wire, not against mocks. See ``reference/bmc-peers.md`` for what
the stock servers lack and why each peer extends them.
"""
