"""The fake IPMI BMC's server: pyghmi's BMC, fixed and extended (runs in the child process).

:mod:`ironic_fsm.testing.ipmi_bmc` starts it as a script,
``python _ipmi_server.py --user admin --password PW --state-dir DIR``, and
reads its ``READY <port>`` lines; what it fixes and adds is described there.
This module imports nothing of ironic_fsm, so that the child pays for
pyghmi only; the files it shares with the test process (state, faults)
are named here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

# pyghmi is imported in the server process only (see _server_classes), so
# that the test process can import the paths and codes below cheaply.

#: IPMI completion codes the peer uses.
CC_OK = 0x00
CC_INVALID_COMMAND = 0xC1
CC_INVALID_DATA = 0xCC
CC_PARAM_NOT_SUPPORTED = 0x80
CC_NOT_IN_PRESENT_STATE = 0xD5

#: RMCP+ status codes (IPMI 2.0 table 13-15).
RMCP_NO_CIPHER_SUITE_MATCH = 0x11
RMCP_UNAUTHORIZED_NAME = 0x0D

#: How long the BMC stays deaf after a cold or warm reset unless faults say otherwise.
DEFAULT_RESET_DOWNTIME = 0.5


def state_path(state_dir: Path, index: int) -> Path:
    """Where BMC number ``index`` of a process writes its state."""
    return Path(state_dir) / f"bmc{index}.state.json"


def faults_path(state_dir: Path, index: int) -> Path:
    """Where BMC number ``index`` of a process reads its faults."""
    return Path(state_dir) / f"bmc{index}.faults.json"


def _write_json(path: Path, data: Any) -> None:
    # Write-then-rename: a reader never sees half a file, and each write is
    # a new inode, so a change is always visible to a stat() comparison.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


# -- the server (runs in the child process) ----------------------------------------------


def _server_classes() -> tuple[type[Any], type[Any]]:
    """Build the server classes; pyghmi is imported here so helpers stay light."""
    import pyghmi.ipmi.bmc as pyghmi_bmc
    import pyghmi.ipmi.command as ipmicommand
    import pyghmi.ipmi.private.serversession as serversession
    import pyghmi.ipmi.private.session as ipmisession

    boot_devices: dict[Any, Any] = ipmicommand.boot_devices

    class PeerSession(serversession.ServerSession):  # type: ignore[misc]
        """One client session: suite negotiation, fresh sessions, unknown users."""

        bmc: PeerBmc

        def create_open_session_response(self, request: bytearray) -> bytearray:
            # Open Session Request (IPMI 2.0 table 13-9): the algorithm of the
            # authentication, integrity and confidentiality payloads sits at
            # offsets 12, 20 and 28. The stock server ignores them and answers
            # "suite 3" to a suite-17 proposal, which the client cannot parse.
            # Refusing makes the client propose suite 3 by itself.
            proposal = (request[12], request[20], request[28]) if len(request) >= 32 else ()
            if proposal != (1, 1, 1):
                self.clientsessionid = request[4:8]
                self.managedsessionid = os.urandom(4)
                return bytearray([request[0], RMCP_NO_CIPHER_SUITE_MATCH, 0, 0]) + request[4:8]
            self.bmc.sessions_opened += 1
            self.bmc.dump()
            response: bytearray = super().create_open_session_response(request)
            return response

        def _got_rmcp_openrequest(self, data: bytearray) -> None:
            # A new Open Session from a client address we already know: start
            # a new session object (the constructor answers and registers it
            # in place of this one) rather than re-keying a used one.
            type(self)(
                self.bmc.authdata,
                self.bmc.kg,
                self.sockaddr,
                self.socket,
                data,
                self.uuid,
                bmc=self.bmc,
            )

        def _got_rakp1(self, data: bytearray) -> None:
            # RAKP1 (table 13-11): the user name starts at offset 28, its
            # length is at 27. Real BMCs answer an unknown name with status
            # 0x0d; the stock server stays silent and pyghmi retries forever.
            if len(data) > 27 and data[27]:
                name = bytes(data[28 : 28 + data[27]]).decode("utf-8", "replace")
                if self.bmc.authdata.get(name) is None:
                    refusal = bytearray([data[0], RMCP_UNAUTHORIZED_NAME, 0, 0])
                    self.send_payload(
                        refusal + self.clientsessionid,
                        ipmisession.constants.payload_types["rakp2"],
                        retry=False,
                    )
                    return
            super()._got_rakp1(data)

        def process_pktqueue(self) -> None:
            if self.bmc.deaf():
                self.pktqueue.clear()
                return
            super().process_pktqueue()

        def sessionless_data(self, data: bytes, sockaddr: Any) -> None:
            # Packets queued to this session before it was forgotten (logout,
            # reset) come back here; the stock ServerSession lacks this method.
            self.bmc.sessionless_data(data, sockaddr)

        def close_server_session(self) -> None:
            self.forget()

        def forget(self) -> None:
            """Drop this session from the routing table (logout or BMC reset)."""
            handlers = ipmisession.Session.bmc_handlers.get(self.sockaddr)
            if handlers is not None and handlers.get(self.bmc.port) is self:
                del handlers[self.bmc.port]
                if not handlers:
                    ipmisession.Session.bmc_handlers.pop(self.sockaddr, None)

    class PeerBmc(pyghmi_bmc.Bmc):  # type: ignore[misc]
        """A BMC whose state is inspectable and whose faults are injectable."""

        def __init__(self, users: dict[str, str], address: str, state_dir: Path, index: int):
            super().__init__(users, port=0, address=address)
            # The parent keeps the port it was given (0), but the packet
            # router matches sessions by the socket's real port.
            self.port = self.serversocket.getsockname()[1]
            self.index = index
            self.state_file = state_path(state_dir, index)
            self.faults_file = faults_path(state_dir, index)
            self._faults: dict[str, Any] = {}
            self._faults_sig: tuple[int, int, int] | None = None
            self.down_until = 0.0
            self.sessions_opened = 0
            self.power = "off"
            self.pending: tuple[str, float, str] | None = None  # (state, due, action)
            self.boot = {"device": "default", "persistent": False, "uefi": False, "valid": False}
            self.last_boot: dict[str, Any] | None = None
            self.boots = 0
            self.identify = False
            self.counters = {"cold_resets": 0, "warm_resets": 0}
            self.power_actions: dict[str, int] = {}
            self.dump()

        # -- faults and state -------------------------------------------------------------

        def faults(self) -> dict[str, Any]:
            """The current faults, re-read only when the file changed."""
            try:
                st = self.faults_file.stat()
            except FileNotFoundError:
                self._faults, self._faults_sig = {}, None
                return self._faults
            sig = (st.st_ino, st.st_mtime_ns, st.st_size)
            if sig != self._faults_sig:
                try:
                    loaded = json.loads(self.faults_file.read_text() or "{}")
                except (OSError, ValueError):
                    loaded = {}
                self._faults = loaded if isinstance(loaded, dict) else {}
                self._faults_sig = sig
            return self._faults

        def deaf(self) -> bool:
            """Whether to drop packets now: told to be silent, or resetting."""
            return bool(self.faults().get("silent")) or time.monotonic() < self.down_until

        def dump(self) -> None:
            _write_json(
                self.state_file,
                {
                    "port": self.port,
                    "power": self.power,
                    "pending_power": self.pending[0] if self.pending else None,
                    "power_actions": dict(self.power_actions),
                    "boot_device": self.boot["device"],
                    "boot_persistent": self.boot["persistent"],
                    "boot_uefi": self.boot["uefi"],
                    "boot_valid": self.boot["valid"],
                    "last_boot": self.last_boot,
                    "boots": self.boots,
                    "identify": self.identify,
                    "cold_resets": self.counters["cold_resets"],
                    "warm_resets": self.counters["warm_resets"],
                    "bmc_resets": self.counters["cold_resets"] + self.counters["warm_resets"],
                    "sessions_opened": self.sessions_opened,
                },
            )

        # -- packet entry points ----------------------------------------------------------

        def process_pktqueue(self) -> None:
            if self.deaf():
                self.pktqueue.clear()
                return
            super().process_pktqueue()

        def sessionless_data(self, data: bytes, sockaddr: Any) -> None:
            if self.deaf():
                return
            packet = bytearray(data)
            is_open_request = (
                len(packet) >= 22
                and packet[0] == 6
                and packet[2:4] == b"\xff\x07"
                and packet[4] == 6
                and packet[5] == 0x10
            )
            if is_open_request:
                PeerSession(
                    self.authdata, self.kg, sockaddr, self.serversocket, packet[16:], self.uuid,
                    bmc=self,
                )  # fmt: skip
                return
            super().sessionless_data(data, sockaddr)

        def handle_raw_request(self, request: dict[str, Any], session: Any) -> None:
            netfn, command, data = request["netfn"], request["command"], request["data"]
            handlers = {
                (0, 1): self._chassis_status,
                (0, 2): self._chassis_control,
                (0, 4): self._chassis_identify,
                (0, 8): self._set_boot_options,
                (0, 9): self._get_boot_options,
                (6, 1): lambda _d, s: self.send_device_id(s),
                (6, 2): lambda _d, s: self._bmc_reset("cold_resets", s),
                (6, 3): lambda _d, s: self._bmc_reset("warm_resets", s),
                (6, 0x37): lambda _d, s: s.send_ipmi_response(data=self.uuid.bytes_le),
            }
            handler = handlers.get((netfn, command))
            if handler is None:
                session.send_ipmi_response(code=CC_INVALID_COMMAND)
                return
            try:
                handler(data, session)
            except (IndexError, KeyError):
                session.send_ipmi_response(code=CC_INVALID_DATA)

        # -- chassis ----------------------------------------------------------------------

        def _refused(self, session: Any) -> bool:
            """Answer with the injected completion code, if any; else catch up on power first."""
            code = self.faults().get("completion_code")
            if code and int(code):
                session.send_ipmi_response(code=int(code))
                return True
            self.tick()
            return False

        def _chassis_status(self, data: bytearray, session: Any) -> None:
            if self._refused(session):
                return
            session.send_ipmi_response(data=[1 if self.power == "on" else 0, 0, 0])

        def _chassis_control(self, data: bytearray, session: Any) -> None:
            if self._refused(session):
                return
            action = {0: "off", 1: "on", 2: "cycle", 3: "reset", 4: "diag", 5: "shutdown"}.get(
                data[0]
            )
            if action is None:
                session.send_ipmi_response(code=CC_INVALID_DATA)
                return
            if action in ("cycle", "reset", "diag") and self.power == "off":
                session.send_ipmi_response(code=CC_NOT_IN_PRESENT_STATE)
                return
            self.power_actions[action] = self.power_actions.get(action, 0) + 1
            target = {"off": "off", "shutdown": "off", "diag": self.power}.get(action, "on")
            delay = float(self.faults().get("power_delay") or 0)
            if delay > 0 and action != "diag":
                self.pending = (target, time.monotonic() + delay, action)
            else:
                self._apply(target, action)
            self.dump()
            session.send_ipmi_response()

        def _apply(self, target: str, action: str) -> None:
            booted = action in ("cycle", "reset") or (target == "on" and self.power == "off")
            self.power = target
            self.pending = None
            if booted:
                self.boots += 1
                used = dict(self.boot) if self.boot["valid"] else None
                self.last_boot = {
                    "device": used["device"] if used else "default",
                    "uefi": bool(used and used["uefi"]),
                }
                if used and not used["persistent"]:
                    # A one-time override is consumed by the boot that used it.
                    self.boot = {
                        "device": "default", "persistent": False, "uefi": False, "valid": False,
                    }  # fmt: skip

        def tick(self) -> None:
            """Apply a delayed power change whose time has come."""
            if self.pending and time.monotonic() >= self.pending[1]:
                self._apply(self.pending[0], self.pending[2])
                self.dump()

        def _chassis_identify(self, data: bytearray, session: Any) -> None:
            interval = data[0] if len(data) > 0 else 15
            force = data[1] & 1 if len(data) > 1 else 0
            self.identify = bool(force or interval)
            self.dump()
            session.send_ipmi_response()

        # -- boot options -----------------------------------------------------------------

        def _set_boot_options(self, data: bytearray, session: Any) -> None:
            param = data[0] & 0x7F
            if param in (0, 3, 4):  # set-in-progress, info acknowledge: accept
                session.send_ipmi_response()
                return
            if param != 5:
                session.send_ipmi_response(code=CC_PARAM_NOT_SUPPORTED)
                return
            flags, device_byte = data[1], data[2]
            name = boot_devices.get((device_byte >> 2) & 0x0F)
            if not isinstance(name, str):
                session.send_ipmi_response(code=CC_INVALID_DATA)
                return
            valid = bool(flags & 0x80)
            self.boot = {
                "device": name if valid else "default",
                "persistent": valid and bool(flags & 0x40),
                "uefi": valid and bool(flags & 0x20),
                "valid": valid,
            }
            self.dump()
            session.send_ipmi_response()

        def _get_boot_options(self, data: bytearray, session: Any) -> None:
            if data[0] & 0x7F != 5:
                session.send_ipmi_response(code=CC_PARAM_NOT_SUPPORTED)
                return
            flags = 0
            if self.boot["valid"]:
                flags = 0x80 | (0x40 if self.boot["persistent"] else 0)
                flags |= 0x20 if self.boot["uefi"] else 0
            device = boot_devices[self.boot["device"]]
            session.send_ipmi_response(data=[1, 5, flags, device, 0, 0, 0])

        # -- BMC reset --------------------------------------------------------------------

        def _bmc_reset(self, counter: str, session: Any) -> None:
            code = int(self.faults().get("reset_code") or 0)
            if code:  # refused: nothing resets
                session.send_ipmi_response(code=code)
                return
            self.counters[counter] += 1
            self.dump()
            if not self.faults().get("reset_no_reply"):
                session.send_ipmi_response()
            # A resetting BMC forgets every session and answers nothing for a while.
            downtime = self.faults().get("reset_downtime", DEFAULT_RESET_DOWNTIME)
            self.down_until = time.monotonic() + float(downtime)
            for handlers in list(ipmisession.Session.bmc_handlers.values()):
                for candidate in list(handlers.values()):
                    if isinstance(candidate, PeerSession) and candidate.bmc is self:
                        candidate.forget()

    return PeerBmc, PeerSession


def serve(
    user: str, password: str, state_dir: Path, count: int, address: str = "127.0.0.1"
) -> None:
    """Start ``count`` BMCs, announce their ports, serve until SIGTERM."""
    import pyghmi.ipmi.private.session as ipmisession

    peer_bmc, _ = _server_classes()
    state_dir.mkdir(parents=True, exist_ok=True)
    bmcs = [peer_bmc({user: password}, address, state_dir, i) for i in range(count)]
    for bmc in bmcs:
        print(f"READY {bmc.port}", flush=True)

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    # The parent stops us; a terminal's Ctrl-C reaches the whole process group and
    # could leave a peer hanging in pyghmi's own shutdown.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    next_parent_check = time.monotonic() + 1.0
    while True:
        # A short timeout: delayed power changes are applied between packets.
        try:
            ipmisession.Session.wait_for_rsp(timeout=0.05)
        except Exception:  # one bad packet must not take the BMC down
            traceback.print_exc()
        for bmc in bmcs:
            bmc.tick()
        if time.monotonic() >= next_parent_check:
            next_parent_check = time.monotonic() + 1.0
            if os.getppid() != parent:  # the test process died: do not linger
                raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A fake IPMI BMC for ironic_fsm tests.")
    parser.add_argument("--user", default="admin")
    parser.add_argument("--password", required=True)
    parser.add_argument("--state-dir", required=True, type=Path)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--address", default="127.0.0.1")
    args = parser.parse_args(argv)
    serve(args.user, args.password, args.state_dir, args.count, args.address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
