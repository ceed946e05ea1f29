"""The generated code that shows a listing's page of nodes, one function per version and fields.

A page of 1,000 nodes is shown by straight-line code compiled (``exec``)
for one microversion and ``fields=`` set: one dict display a node, each
field read from its attribute and worked on only where it needs it
(masking, timestamps), the links encoded already. What to generate comes
from :mod:`.views` (its table of fields, never a request's text); the plain
per-node reference is :func:`.views.node_view`, and a test holds the two
equal on every field at every version. As :mod:`ironic_fsm._node_codec`
generates the node's codecs beside :mod:`ironic_fsm.node`'s plain reading.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple

import orjson

from ironic_fsm._node_fields import _CANONICAL_UUID

#: The page function: ``page(nodes, own, mark, conductor_of, interfaces)``, see :class:`PageCode`.
PageFunction = Callable[..., list[dict[str, Any]]]


class Read(NamedTuple):
    """One field of the view: the attribute it reads, and the helper (by name) that shows it."""

    field: str
    attribute: str
    helper: str | None


def json_text(text: str) -> str:
    """``text`` as it stands inside a JSON string (the base comes from the Host header)."""
    return orjson.dumps(text)[1:-1].decode()


def encoded_links(own: str, mark: str) -> orjson.Fragment:
    """:func:`~.common.link_pair`'s links to ``own`` and ``mark`` (JSON text), encoded."""
    return orjson.Fragment(
        f'[{{"href":"{own}","rel":"self"}},{{"href":"{mark}","rel":"bookmark"}}]'
    )


#: The names the generated code calls besides the helpers it is handed.
_RUNTIME: Final[dict[str, Any]] = {
    "links": encoded_links,
    "json_text": json_text,
    "canonical": _CANONICAL_UUID.fullmatch,
}


class PageCode:
    """How one version and field set shows a page: the fields shown and the page function.

    ``page(nodes, own, mark, conductor_of, interfaces)`` returns a view per
    node: ``own``/``mark`` are the JSON text of the links' bases (``.../v1/nodes/``
    and ``.../nodes/``), ``conductor_of(node)`` the conductor shown,
    ``interfaces(driver)`` the ``(field, default)`` pairs filling interfaces the
    node has not chosen. ``helpers`` are the functions :class:`Read` names, and
    ``older_state_names(view, version)``; ``older_states``: the version to pass it,
    ``None`` when no state name changed since; ``links``: how many link pairs
    (``links``, ``ports``, ``states``) each view carries.
    """

    def __init__(
        self,
        reads: Sequence[Read],
        helpers: Mapping[str, Callable[..., Any]],
        *,
        conductor: bool,
        older_states: tuple[int, int] | None,
        links: int,
    ) -> None:
        self.keys: tuple[str, ...] = tuple(read.field for read in reads)
        self.page: PageFunction = _compile(_source(reads, conductor, older_states, links), helpers)


def _source(
    reads: Sequence[Read], conductor: bool, older_states: tuple[int, int] | None, links: int
) -> str:
    """The page function's text (field and attribute names from the table, never a request)."""
    items = []
    for field, attribute, helper in reads:
        value = f"node.{attribute}"
        items.append(f"{field!r}: {value if helper is None else f'{helper}({value})'}")
    lines = [
        "def page(nodes, own, mark, conductor_of, interfaces):",
        "    out = []",
        "    for node in nodes:",
        f"        view = {{{', '.join(items)}}}",
        "        for field, default in interfaces(node.driver):",
        "            if view[field] is None:",
        "                view[field] = default",
    ]
    if conductor:
        lines.append("        view['conductor'] = conductor_of(node)")
    if older_states is not None:
        lines.append(f"        older_state_names(view, {older_states!r})")
    # link_pair's links, encoded as orjson would encode them (own and mark are JSON
    # text; so is a canonical UUID): a dozen objects fewer a node to make and free
    lines += [
        "        uuid = node.uuid",
        "        if not canonical(uuid):",
        "            uuid = json_text(uuid)",
        "        mine, book = own + uuid, mark + uuid",
    ]
    for key in ("links", "ports", "states")[:links]:
        tail = "" if key == "links" else f" + '/{key}'"
        lines.append(f"        view[{key!r}] = links(mine{tail}, book{tail})")
    lines += ["        out.append(view)", "    return out"]
    return "\n".join(lines)


def _compile(source: str, helpers: Mapping[str, Callable[..., Any]]) -> PageFunction:
    namespace: dict[str, Any] = {**helpers, **_RUNTIME}
    exec(compile(source, "<ironic_fsm node page>", "exec"), namespace)
    page: PageFunction = namespace["page"]
    return page
