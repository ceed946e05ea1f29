"""What every resource needs from a request: its version, its JSON body, its query values.

Bodies are read under a size cap and validated by JSON Schema
(``fastjsonschema``) so that each resource deals only in checked values.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import falcon
import fastjsonschema
import orjson
import tenacity

from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.versions import Version, version_text
from ironic_fsm.exceptions import ConcurrentUpdate

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

__all__ = [
    "MAX_BODY_BYTES",
    "Resource",
    "compile_schema",
    "link_pair",
    "page_limit",
    "node_lock",
    "one_field",
    "one_field_check",
    "query_bool",
    "read_json",
    "read_modify_write",
    "require_version",
    "send",
    "text_bool",
    "too_new",
    "with_item",
    "wants_detail",
]

#: Ironic's nodes fit in a few KB; a megabyte leaves room for big ``instance_info``.
MAX_BODY_BYTES: Final = 1024 * 1024
#: The deepest nesting a body may have. A record is written as JSON by orjson,
#: which refuses more than 254 levels, and deep values are copied and compared
#: recursively on their way there: a deeper body is refused here, as a 400.
MAX_BODY_DEPTH: Final = 200

Validator = Callable[[Any], Any]
T = TypeVar("T")

# Read-modify-write requests (a patch, adding one trait) on one node run one at a
# time in this process, so that two of them never base their change on the same
# read and lose one another's work. Striped: a lock per node would grow forever.
_RMW_LOCKS: Final = tuple(threading.Lock() for _ in range(64))


def node_lock(uuid: str) -> threading.Lock:
    """The lock that serialises read-modify-write requests on node ``uuid``."""
    return _RMW_LOCKS[zlib.crc32(uuid.encode()) % len(_RMW_LOCKS)]


#: Attempts of a read-modify-write that another process keeps overtaking, before 409.
RMW_ATTEMPTS: Final = 10


def read_modify_write(uuid: str, change: Callable[[], T]) -> T:
    """Run ``change`` (read the node, compute, ``update_node(expected_version=...)``) until
    no other writer came in between; :class:`ConcurrentUpdate` (409) after
    :data:`RMW_ATTEMPTS`, never a lost update.

    The in-process lock makes this process's writers take turns (no retry
    among them); the version check catches the writers of other processes.
    """
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(ConcurrentUpdate),
        stop=tenacity.stop_after_attempt(RMW_ATTEMPTS),
        # Jittered and growing: writers that collided once spread out (5 ms .. 0.2 s).
        wait=tenacity.wait_random_exponential(multiplier=0.005, max=0.2),
        reraise=True,
    )
    with node_lock(uuid):
        return retrying(change)


def compile_schema(schema: dict[str, Any]) -> Validator:
    """A validator raising 400 with the schema's own wording of what is wrong."""
    check = fastjsonschema.compile(schema)

    def validate(value: Any) -> Any:
        try:
            return check(value)
        except fastjsonschema.JsonSchemaValueException as error:
            raise ApiError(400, f"Invalid input: {error.message}{_size_words(error)}") from None

    return validate


class Resource:
    """A falcon resource: its responders answer through the conductor it is handed."""

    def __init__(self, conductor: Conductor) -> None:
        self._conductor = conductor


def one_field(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of a body of one required field ``name`` (checked by ``schema``) and
    nothing else, as Ironic's ``states/*`` setters, console mode and indicator state."""
    return {
        "type": "object",
        "properties": {name: schema},
        "required": [name],
        "additionalProperties": False,
    }


def one_field_check(name: str, schema: dict[str, Any]) -> Validator:
    """The validator of :func:`one_field`'s body."""
    return compile_schema(one_field(name, schema))


def with_item(
    path: str, resource: object, item: str, suffix: str = "item"
) -> list[tuple[str, Any, dict[str, str]]]:
    """The routes of a collection at ``path`` and of one member at ``path/{item}``, one
    resource answering both (the member's responders are ``on_<method>_<suffix>``)."""
    return [(path, resource, {}), (f"{path}/{{{item}}}", resource, {"suffix": suffix})]


#: jsonschema's words for a size limit (Ironic validates with it, and clients match them).
_SIZE_WORDS: Final = {
    "minItems": "is too short",
    "minLength": "is too short",
    "maxItems": "is too long",
    "maxLength": "is too long",
}


def _size_words(error: fastjsonschema.JsonSchemaValueException) -> str:
    """``; [] is too short`` after a size error, as Ironic's validator says it."""
    words = _SIZE_WORDS.get(error.rule or "")
    if words is None:
        return ""
    return f"; {orjson.dumps(error.value).decode()} {words}"


def read_json(req: falcon.Request, *, optional: bool = False) -> Any:
    """The request's JSON body (``None`` when empty and ``optional``)."""
    data = read_body(req)
    if not data.strip():
        if optional:
            return None
        raise ApiError(400, "A JSON request body is required")
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ApiError(400, f"The request body is not valid JSON: {error}") from None
    if _nested_deeper(body, MAX_BODY_DEPTH):
        raise ApiError(400, f"The request body is nested deeper than {MAX_BODY_DEPTH} levels")
    return body


def read_body(req: falcon.Request) -> bytes:
    """The request's body, whole, under the size cap; chunked bodies included.

    A chunked body has no Content-Length, and Falcon's bounded stream then
    reads nothing: the server marks such input as terminated, so it
    is read to its end, which also keeps its bytes from being taken for the
    next request on the connection.
    """
    length = req.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise ApiError(413, f"Request body larger than {MAX_BODY_BYTES} bytes")
    if length is None and req.env.get("wsgi.input_terminated"):
        data = req.stream.read(MAX_BODY_BYTES + 1)
    else:
        data = req.bounded_stream.read(MAX_BODY_BYTES + 1)
    if len(data) > MAX_BODY_BYTES:
        raise ApiError(413, f"Request body larger than {MAX_BODY_BYTES} bytes")
    return data


def _nested_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and dicts more than ``limit`` deep (level by level)."""
    level: list[Any] = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def send(resp: falcon.Response, body: Any, status: int = 200) -> None:
    resp.status = status
    resp.content_type = "application/json"
    resp.data = orjson.dumps(body)


def version_of(req: falcon.Request) -> Version:
    return req.context.version  # type: ignore[no-any-return]


def too_new(what: str, since: Version, version: Version) -> ApiError:
    return ApiError(
        406,
        f"{what} requires API version {version_text(since)} or later; "
        f"the request asked for {version_text(version)}",
    )


def require_version(req: falcon.Request, since: Version, what: str, *, status: int = 406) -> None:
    """Refuse what is newer than the request's version (406, or 404 for whole endpoints)."""
    version = version_of(req)
    if version < since:
        if status == 404:
            raise ApiError(404, f"The resource could not be found: {what}")
        raise too_new(what, since, version)


_TRUE: Final = frozenset({"true", "1", "yes", "on", "y", "t"})
_FALSE: Final = frozenset({"false", "0", "no", "off", "n", "f"})


def text_bool(raw: str, what: str) -> bool:
    """A boolean written as text (``True``, ``false``, ``1``...), parsed strictly."""
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ApiError(400, f"Invalid value for {what}: {raw!r} is not a boolean")


def query_bool(req: falcon.Request, name: str) -> bool | None:
    """A boolean query value, parsed strictly: anything else is a 400."""
    raw = req.get_param(name)
    return None if raw is None else text_bool(raw, f"query parameter {name}")


#: The most items a page holds, and how many a listing without ``limit`` gets.
MAX_LIMIT: Final = 1000


def page_limit(req: falcon.Request) -> int:
    """The ``limit`` of a listing: a positive integer, at most :data:`MAX_LIMIT` (the default)."""
    raw = req.get_param("limit")
    if raw is None:
        return MAX_LIMIT
    try:
        limit = int(raw)
    except ValueError:
        raise ApiError(400, f"Invalid limit {raw!r}: not an integer") from None
    if limit <= 0:
        raise ApiError(400, f"Limit must be positive, not {limit}")
    return min(limit, MAX_LIMIT)


def wants_detail(
    req: falcon.Request, fields: object, detail: bool, since: Version = (1, 43)
) -> bool:
    """Whether a listing shows whole records: its ``/detail`` path (``detail``) or the
    ``detail`` query value (from ``since``: 1.43, the volume resources' 1.32); ``400``
    with ``fields`` too."""
    if detail and fields is not None:
        raise ApiError(400, "Cannot ask for both detail and fields")
    asked = query_bool(req, "detail")
    if asked is not None:
        require_version(req, since, "The detail parameter")
        if fields is not None and asked:
            raise ApiError(400, "Cannot ask for both detail and fields")
        detail = detail or asked
    return detail


def link_pair(base: str, resource: str, ident: str) -> list[dict[str, str]]:
    """Ironic's ``self`` and ``bookmark`` links of one resource."""
    return [
        {"href": f"{base}/v1/{resource}/{ident}", "rel": "self"},
        {"href": f"{base}/{resource}/{ident}", "rel": "bookmark"},
    ]
