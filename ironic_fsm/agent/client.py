"""A client for the ramdisk agent's command API (IPA's ``/v1/commands/``).

The conductor talks to the agent at the URL the agent heartbeats with
(``driver_internal_info.agent_url``), with the token the agent was given
at lookup, over TLS pinned to the certificate it sent (``agent_verify_ca``)
when it serves TLS. Every call has a deadline: an agent that stopped
answering gives :class:`~ironic_fsm.exceptions.AgentTimeout` or
:class:`~ironic_fsm.exceptions.AgentUnreachable` within it, never a hang.
A busy agent (HTTP 409) is :class:`~ironic_fsm.exceptions.AgentBusy`, a
refused token (HTTP 401) :class:`~ironic_fsm.exceptions.AgentTokenRejected`.

The token travels in the query string, as IPA reads it; it never appears
in an error's text or in a log line (URLs are shown without their query,
answers are scrubbed of it, and httpx's own request lines are masked).

Commands that answer quickly are sent with ``wait=true`` (the answer holds
the result); long ones (a clean or deploy step) with ``wait=false``, and
their result is read later with :meth:`AgentClient.last_command`, when the
agent's next heartbeat says it is free again: as Ironic does.
"""

from __future__ import annotations

import functools
import logging
import re
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from ironic_fsm.agent import token as agent_token
from ironic_fsm.events import AGENT_COMMANDS
from ironic_fsm.exceptions import (
    AgentBusy,
    AgentCommandFailed,
    AgentTimeout,
    AgentTokenRejected,
    AgentUnreachable,
    MissingDependency,
)
from ironic_fsm.masking import scrub

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_TIMEOUT", "AgentClient", "AgentEndpoint"]

LOG = logging.getLogger("ironic_fsm.agent")

#: Seconds one call may take, as Ironic's ``[agent]command_timeout``.
DEFAULT_TIMEOUT: Final = 60.0
#: Seconds to open the connection: an agent that is not there is known quickly.
_CONNECT_TIMEOUT: Final = 10.0
#: The statuses of a command as IPA reports them.
RUNNING: Final = "RUNNING"
SUCCEEDED: Final = "SUCCEEDED"
FAILED: Final = "FAILED"


@attrs.frozen(repr=False)
class AgentEndpoint:
    """Where one node's agent listens, and how to speak to it (the token never in its repr)."""

    node: str
    url: str
    token: str | None
    certificate: str | None = None

    @classmethod
    def of(cls, node: str, info: Mapping[str, Any]) -> AgentEndpoint:
        """The endpoint recorded in a node's ``driver_internal_info`` by its heartbeats.

        Raises:
            AgentUnreachable: no agent has heartbeated since the node last booted.
        """
        url = info.get(agent_token.URL_KEY)
        if not isinstance(url, str) or not url:
            raise AgentUnreachable(
                f"Node {node}: no agent has heartbeated since the ramdisk booted "
                "(driver_internal_info has no agent_url)",
                node=node,
            )
        token = info.get(agent_token.TOKEN_KEY)
        certificate = info.get(agent_token.CA_KEY)
        return cls(
            node=node,
            url=url.rstrip("/"),
            token=token if isinstance(token, str) else None,
            certificate=certificate if isinstance(certificate, str) else None,
        )

    def __repr__(self) -> str:
        return f"AgentEndpoint(node={self.node!r}, url={self.url!r}, token=******)"


#: The token in a URL's query, as httpx's own request log line shows the URL.
_TOKEN_IN_QUERY: Final = re.compile(r"(agent_token=)[^&\s\"']+")


class _HideToken(logging.Filter):
    """Masks ``agent_token=...`` in httpx's log lines (``HTTP Request: POST https://...``).

    IPA reads the token from the query string only, and httpx logs every
    request's URL at INFO: without this, an application that shows INFO
    would log each node's token.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(
                _TOKEN_IN_QUERY.sub(r"\1******", str(arg)) if "agent_token=" in str(arg) else arg
                for arg in record.args
            )
        elif "agent_token=" in str(record.msg):
            record.msg = _TOKEN_IN_QUERY.sub(r"\1******", str(record.msg))
        return True


_TOKEN_FILTER: Final = _HideToken()


@functools.lru_cache(maxsize=256)
def _pinned(certificate: str) -> ssl.SSLContext:
    """A TLS context trusting only ``certificate`` (PEM), made once per certificate rather
    than on every call (half a millisecond each)."""
    return ssl.create_default_context(cadata=certificate)


class AgentClient:
    """Sends commands to ramdisk agents; one client serves every node (it keeps no connection).

    Args:
        timeout: Seconds each call may take in all (Ironic's ``[agent]command_timeout``).
    """

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        try:
            import httpx
        except ImportError:  # pragma: no cover - the extra is part of the test set
            raise MissingDependency(
                "The ramdisk agent client needs httpx: pip install 'ironic_fsm[agent]'",
                extra="agent",
            ) from None
        self._httpx = httpx
        self.timeout = timeout
        for name in ("httpx", "httpcore"):
            logger = logging.getLogger(name)
            if _TOKEN_FILTER not in logger.filters:
                logger.addFilter(_TOKEN_FILTER)

    # -- commands -------------------------------------------------------------------------

    def execute(
        self,
        endpoint: AgentEndpoint,
        command: str,
        params: Mapping[str, Any] | None = None,
        *,
        wait: bool,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Run ``command`` (``extension.name``) on the agent; its status document.

        With ``wait`` the agent answers once the command has ended, so the
        document holds ``command_result`` or ``command_error``; without it,
        at once with ``command_status`` ``RUNNING``. A command that failed
        is a document with ``command_status`` ``FAILED``, not an exception:
        the caller knows what a failure of that command means.
        """
        query = {"wait": "true" if wait else "false"}
        if endpoint.token:
            query["agent_token"] = endpoint.token
        body = {"name": command, "params": dict(params or {})}
        LOG.debug("Node %s: agent command %s (wait=%s)", endpoint.node, command, wait)
        answer = self._request(endpoint, "POST", "/v1/commands/", command, query, body, timeout)
        if not isinstance(answer, dict) or "command_status" not in answer:
            raise self._malformed(endpoint, command, answer)
        return answer

    def commands(self, endpoint: AgentEndpoint, *, timeout: float | None = None) -> list[Any]:
        """Every command the agent has run since it started, oldest first."""
        query = {"agent_token": endpoint.token} if endpoint.token else {}
        answer = self._request(endpoint, "GET", "/v1/commands/", "list", query, None, timeout)
        if not isinstance(answer, dict) or not isinstance(answer.get("commands"), list):
            raise self._malformed(endpoint, "list commands", answer)
        return list(answer["commands"])

    def last_command(
        self, endpoint: AgentEndpoint, *, timeout: float | None = None
    ) -> dict[str, Any] | None:
        """The agent's latest command (how a ``wait=false`` command's end is read), or None."""
        commands = self.commands(endpoint, timeout=timeout)
        last = commands[-1] if commands else None
        return last if isinstance(last, dict) else None

    def get_clean_steps(
        self, endpoint: AgentEndpoint, node: Mapping[str, Any], ports: list[Any]
    ) -> dict[str, Any]:
        """``clean.get_clean_steps``: the agent's steps by hardware manager, and their versions."""
        answer = self.execute(
            endpoint, "clean.get_clean_steps", {"node": dict(node), "ports": ports}, wait=True
        )
        return self.result_of(endpoint, "clean.get_clean_steps", answer)

    # -- one request ----------------------------------------------------------------------

    def _request(
        self,
        endpoint: AgentEndpoint,
        method: str,
        path: str,
        command: str,
        query: dict[str, str],
        body: dict[str, Any] | None,
        timeout: float | None,
    ) -> Any:
        httpx = self._httpx
        seconds = self.timeout if timeout is None else timeout
        limits = httpx.Timeout(seconds, connect=min(seconds, _CONNECT_TIMEOUT))
        where = f"{endpoint.url}{path}"
        try:
            with (
                AGENT_COMMANDS.timed(endpoint.node, command),
                httpx.Client(verify=self._verify(endpoint), timeout=limits) as http,
            ):
                response = http.request(method, where, params=query, json=body)
        except httpx.TimeoutException:
            raise AgentTimeout(
                f"Node {endpoint.node}: the agent at {endpoint.url} did not answer {command} "
                f"within {seconds:g} s",
                node=endpoint.node,
                command=command,
            ) from None
        except (httpx.TransportError, ssl.SSLError, OSError) as error:
            raise AgentUnreachable(
                f"Node {endpoint.node}: cannot reach the agent at {endpoint.url} for {command}: "
                f"{self._clean(endpoint, str(error) or type(error).__name__)}",
                node=endpoint.node,
                command=command,
            ) from None
        return self._answer(endpoint, command, response)

    def _answer(self, endpoint: AgentEndpoint, command: str, response: httpx.Response) -> Any:
        status = response.status_code
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if status < 400:
            return answer
        fault = answer.get("faultstring") if isinstance(answer, dict) else None
        text = self._clean(endpoint, str(fault or response.text[:200] or "no reason given"))
        where = f"Node {endpoint.node}: the agent at {endpoint.url}"
        if status == 409:
            raise AgentBusy(
                f"{where} is busy with another command; {command} not started: {text}",
                node=endpoint.node,
                command=command,
            )
        if status == 401:
            raise AgentTokenRejected(
                f"{where} refused the agent token for {command}: {text}",
                node=endpoint.node,
                command=command,
            )
        raise AgentCommandFailed(
            f"{where} answered {command} with HTTP {status}: {text}",
            node=endpoint.node,
            command=command,
            status=status,
        )

    def result_of(
        self, endpoint: AgentEndpoint, command: str, answer: dict[str, Any]
    ) -> dict[str, Any]:
        """The result of a command that was waited for; its error raised as AgentCommandFailed."""
        if answer.get("command_status") != SUCCEEDED:
            error = answer.get("command_error") or {}
            detail = (
                (error.get("message") or error.get("details")) if isinstance(error, dict) else None
            )
            raise AgentCommandFailed(
                f"Node {endpoint.node}: the agent's {command} ended "
                f"{answer.get('command_status')}: {self._clean(endpoint, str(detail or error))}",
                node=endpoint.node,
                command=command,
            )
        result = answer.get("command_result")
        if not isinstance(result, dict):
            raise self._malformed(endpoint, command, answer)
        return result

    def _verify(self, endpoint: AgentEndpoint) -> ssl.SSLContext | bool:
        """Pinned to the agent's own certificate when it sent one; plain HTTP needs nothing."""
        if endpoint.certificate and endpoint.url.startswith("https://"):
            return _pinned(endpoint.certificate)
        return True

    @staticmethod
    def _clean(endpoint: AgentEndpoint, text: str) -> str:
        return scrub(text, {endpoint.token}) if endpoint.token else text

    def _malformed(self, endpoint: AgentEndpoint, command: str, answer: Any) -> AgentCommandFailed:
        shown = self._clean(endpoint, repr(answer)[:200])
        return AgentCommandFailed(
            f"Node {endpoint.node}: the agent's answer to {command} is not what IPA sends: {shown}",
            node=endpoint.node,
            command=command,
        )
