"""The Falcon application: middleware, routes and error handlers, built around one conductor."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Final

import falcon

from ironic_fsm.api import (
    actions,
    allocations,
    bios,
    catalog,
    chassis,
    console,
    indicators,
    inspection_rules,
    inventory,
    node_media,
    nodes,
    openapi,
    passthru,
    portgroups,
    ports,
    raid,
    ramdisk,
    resources,
    shards,
    traits,
    vifs,
    volumes,
)  # fmt: skip
from ironic_fsm.api.access_log import AccessLog
from ironic_fsm.api.auth import BasicAuth
from ironic_fsm.api.common import Resource, send, version_of
from ironic_fsm.api.errors import ApiError, install_error_handlers
from ironic_fsm.api.versions import (
    MAX_VERSION,
    MIN_VERSION,
    NotAcceptable,
    negotiate,
    root_document,
    v1_document,
    version_text,
)
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import IronicFSMError

if TYPE_CHECKING:
    from ironic_fsm.metrics import Metrics

__all__ = ["make_app"]


class Versions:
    """Negotiates the microversion and stamps the version and request-id headers on every answer."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        request_id = f"req-{uuid.uuid4()}"
        resp.set_header("X-OpenStack-Request-Id", request_id)
        resp.set_header("OpenStack-Request-Id", request_id)
        resp.set_header("X-OpenStack-Ironic-API-Minimum-Version", version_text(MIN_VERSION))
        resp.set_header("X-OpenStack-Ironic-API-Maximum-Version", version_text(MAX_VERSION))
        req.context.version = MIN_VERSION
        try:
            req.context.version = negotiate(req.headers)
        except NotAcceptable as error:
            raise ApiError(406, str(error)) from None
        req.context.negotiated = True

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        if req_succeeded and req.context.get("negotiated"):
            version = version_text(req.context.version)
            resp.set_header("X-OpenStack-Ironic-API-Version", version)
            resp.set_header("OpenStack-API-Version", f"baremetal {version}")
            resp.append_header("Vary", "X-OpenStack-Ironic-API-Version")


#: Paths of this server's own, outside Ironic's ``/v1`` (never given the ``/v1`` prefix).
_OWN_PATHS: Final = frozenset({"/", "/openapi.json", "/healthz", "/readyz", "/metrics"})


class IronicPaths:
    """Routes paths as Ironic's root controller does, before anything else reads them.

    Below 1.91 a trailing ``.json`` is stripped (the format it asked for is
    the only one), and a path without a version goes to ``/v1`` (clients
    ask ``/nodes/detail`` and ``/drivers/x/properties`` so).
    """

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        path = req.path
        if path.endswith(".json") and path not in _OWN_PATHS and req.context.version < (1, 91):
            path = path[: -len(".json")] or "/"
        if path not in _OWN_PATHS and path != "/v1" and not path.startswith("/v1/"):
            path = "/v1" + path
        if path != req.path:
            req.path = path


class Health:
    """``GET /healthz``: the process answers (Kubernetes' liveness probe; no auth, no I/O)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send(resp, {"status": "ok"})

    on_head = on_get


class Ready(Resource):
    """``GET /readyz``: ready for work (Kubernetes' readiness probe; no auth).

    Ready when the database answers, this conductor is registered and alive
    in it (its heartbeat is current), and it is not draining; else ``503``
    with the reason, so that a load balancer sends requests elsewhere.
    """

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        reason = self._unready()
        if reason is None:
            send(resp, {"status": "ready"})
        else:
            send(resp, {"status": "not ready", "reason": reason}, 503)

    on_head = on_get

    def _unready(self) -> str | None:
        conductor = self._conductor
        if conductor.draining:
            return "draining: finishing its flows before it stops"
        try:
            conductors = conductor.list_conductors()
        except IronicFSMError as error:
            return f"the database does not answer: {type(error).__name__}"
        host = conductor.config.host
        if not any(info.hostname == host and info.alive for info in conductors):
            return f"conductor {host} is not registered and alive in the database"
        return None


class MetricsPage:
    """``GET /metrics``: the conductor's Prometheus metrics, behind the API's authentication."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data, resp.content_type = self._metrics.exposition(req.get_header("Accept"))


class Root:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send(resp, root_document(req.prefix))

    on_head = on_get  # Falcon sends the headers and drops the body


class V1:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send(resp, v1_document(req.prefix, version_of(req)))

    on_head = on_get


def make_app(
    conductor: Conductor,
    *,
    users: dict[str, bytes] | None = None,
    metrics: Metrics | None = None,
) -> falcon.App[Any, Any]:
    """The WSGI application; ``users`` (from an htpasswd file) turns on HTTP basic auth,
    ``metrics`` times each request and serves ``/metrics``.
    """
    # The access log first: its timing and its line cover the other middleware too.
    middleware: list[Any] = [AccessLog(), Versions(), IronicPaths()]
    if metrics is not None:
        middleware.insert(1, metrics.api)
    if users is not None:
        middleware.append(BasicAuth(users))
    app: falcon.App[Any, Any] = falcon.App(middleware=middleware)
    app.req_options.strip_url_path_trailing_slash = True
    app.req_options.auto_parse_qs_csv = False
    # Every body sets its own type; an empty 202 carries none, as Ironic's do
    # (ironicclient complains about an empty body typed as JSON).
    app.resp_options.default_media_type = None  # type: ignore[assignment]
    install_error_handlers(app)
    node = "/v1/nodes/{ident}"
    history = traits.NodeHistory(conductor)
    routes: list[tuple[str, Any, dict[str, str]]] = [
        ("/", Root(), {}),
        ("/v1", V1(), {}),
        ("/openapi.json", openapi.OpenApi(), {}),
        ("/healthz", Health(), {}),
        ("/readyz", Ready(conductor), {}),
        ("/v1/nodes", nodes.NodeCollection(conductor), {}),
        ("/v1/nodes/detail", nodes.NodeCollection(conductor, detail=True), {}),
        ("/v1/nodes/validate", actions.Validate(conductor), {}),
        (node, nodes.NodeItem(conductor), {}),
        (f"{node}/states", actions.NodeStates(conductor), {}),
        (f"{node}/states/provision", actions.ProvisionState(conductor), {}),
        (f"{node}/states/power", actions.PowerState(conductor), {}),
        (f"{node}/states/boot_mode", actions.BootSetting(conductor), {}),
        (f"{node}/states/secure_boot", actions.BootSetting(conductor, secure_boot=True), {}),
        (f"{node}/management/boot_device", actions.BootDevice(conductor), {}),
        (f"{node}/management/boot_device/supported",
         actions.BootDevice(conductor, supported=True), {}),
        (f"{node}/maintenance", actions.Maintenance(conductor), {}),
        (f"{node}/validate", actions.Validate(conductor), {}),
        (f"{node}/traits", traits.NodeTraits(conductor), {}),
        (f"{node}/traits/{{trait}}", traits.NodeTrait(conductor), {}),
        (f"{node}/history", history, {}),
        (f"{node}/history/{{entry}}", history, {"suffix": "entry"}),
        (f"{node}/inventory", inventory.NodeInventory(conductor), {}),
        *resources.routes(conductor),
        *catalog.routes(conductor),
        *shards.routes(conductor),
        *ports.routes(conductor),
        *ramdisk.routes(conductor),
        *portgroups.routes(conductor),
        *chassis.routes(conductor),
        *allocations.routes(conductor),
        *volumes.routes(conductor),
        *vifs.routes(conductor),
        *inspection_rules.routes(conductor),
        *raid.routes(conductor),
        *node_media.routes(conductor),
        *bios.routes(conductor),
        *console.routes(conductor),
        *indicators.routes(conductor),
        *passthru.routes(conductor),
        ("/v1/chassis/{ident}/nodes", nodes.NodeCollection(conductor, chassis=True), {}),
        ("/v1/chassis/{ident}/nodes/detail",
         nodes.NodeCollection(conductor, detail=True, chassis=True), {}),
    ]  # fmt: skip
    if metrics is not None:
        routes.append(("/metrics", MetricsPage(metrics), {}))
    for path, resource, options in routes:
        app.add_route(path, resource, **options)
    return app
