"""Reading a fleet file: parse, substitute ``${VAR}``, check it all, then build the specs."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm import states as s
from ironic_fsm.fleetfile._checks import Checker
from ironic_fsm.fleetfile._model import FleetFile, FleetFileError, NodeSpec
from ironic_fsm.fleetfile._schema import path_text, schema_errors
from ironic_fsm.masking import scrub, secret_values

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

#: ``${NAME}``: an environment variable; ``$${`` writes a literal ``${``.
_ENV_REF: Final = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Where yaml-rs says a problem is.
_YAML_PLACE: Final = re.compile(r"line \d+, column \d+")


def parse_fleet(text: str, source: str = "<fleet file>") -> Any:
    """The data of a YAML or JSON fleet file.

    JSON (a ``.json`` file, or text that starts with ``{``) is read with
    orjson. YAML is read with yaml-rs (YAML 1.2, its core schema, in Rust):
    it builds a 10,000-node file in a tenth of a second where PyYAML's C
    loader, which still constructs every value in Python, takes seconds
    (``benchmarks/bench_apply.py``). YAML 1.2 reads ``yes``/``on`` as text,
    not booleans, and refuses duplicate keys and unknown tags.
    """
    is_json = source.endswith(".json")
    if is_json or text.lstrip().startswith("{"):
        orjson: Any = importlib.import_module("orjson")
        try:
            return orjson.loads(text)
        except ValueError as exc:
            if is_json:
                raise FleetFileError(
                    f"{source}: not valid JSON: {exc}", errors=[f"(file): not valid JSON: {exc}"]
                ) from None
            # A YAML flow mapping such as {nodes: [...]} is not JSON: read it as YAML.
    yaml_rs: Any = importlib.import_module("yaml_rs")
    try:
        return yaml_rs.loads(text, parse_datetime=False)
    except yaml_rs.YAMLDecodeError as exc:
        problem = _yaml_problem(str(exc))
        raise FleetFileError(
            f"{source}: not valid YAML: {problem}", errors=[f"(file): not valid YAML: {problem}"]
        ) from None


def _yaml_problem(message: str) -> str:
    """yaml-rs's message as ``problem (line L, column C)``, without the quoted line.

    Its message names the place, quotes the line of the file (which may
    hold a password) and ends with what is wrong: keep the first and last.
    """
    lines = message.strip().splitlines() or [message]
    place = _YAML_PLACE.search(lines[0])
    if place is None or len(lines) == 1:
        return lines[-1]
    return f"{lines[-1]} ({place.group(0)})"


def _substitute(data: Any, env: Mapping[str, str], errors: list[str]) -> tuple[Any, set[str]]:
    """``data`` with ``${VAR}`` replaced in every string value, and the values put in."""
    used: set[str] = set()

    def text(value: str, where: list[Any]) -> str:
        if "${" not in value:
            return value

        def one(match: re.Match[str]) -> str:
            if match.group(1):
                return match.group(0)[1:]  # $${X} is a literal ${X}
            name = match.group(2)
            found = env.get(name)
            if found is None:
                errors.append(f"{path_text(where)}: environment variable {name} is not set")
                return ""
            if found:
                used.add(found)
            return found

        return _ENV_REF.sub(one, value)

    def walk(value: Any, where: list[Any]) -> Any:
        if isinstance(value, str):
            return text(value, where)
        if isinstance(value, dict):
            return {k: walk(v, [*where, k]) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, [*where, i]) for i, v in enumerate(value)]
        return value

    return walk(data, []), used


def load_fleet(
    text: str,
    *,
    source: str = "<fleet file>",
    env: Mapping[str, str] | None = None,
    conductor: Conductor | None = None,
) -> FleetFile:
    """Parse and check a whole fleet file; nothing is written anywhere.

    ``env`` supplies ``${VAR}`` values (default: ``os.environ``);
    ``conductor`` supplies the drivers and the lifecycle for the semantic
    checks (without one, drivers are not checked).

    Raises:
        FleetFileError: with ``errors``, every problem as ``path: message``,
            in file order; no substituted value appears in them.
    """
    import os

    data = parse_fleet(text, source)
    errors: list[str] = []
    data, used = _substitute(data, os.environ if env is None else env, errors)
    found, bad = schema_errors(data)
    errors += found
    specs: list[NodeSpec] = []
    if bad is not None:
        # Semantic checks for every node the schema found nothing wrong with.
        checker = Checker(conductor, errors)
        lifecycle = conductor.lifecycle if conductor is not None else None
        if lifecycle is None:
            from ironic_fsm.machine import LIFECYCLE

            lifecycle = LIFECYCLE
        wanted_states = frozenset(lifecycle.stable_states - {s.ERROR})
        seen: dict[str, int] = {}
        for index, item in enumerate(data["nodes"]):
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str):
                first = seen.setdefault(name, index)
                if first != index:
                    errors.append(f"nodes[{index}].name: {name!r} is also nodes[{first}]")
                    continue
            if index not in bad:
                specs.append(checker.spec(index, item, wanted_states))
    if errors:
        # Only now, with errors to show: the file's secrets, to keep out of them.
        secrets = used | secret_values(data)
        errors = [scrub(error, secrets) for error in _in_file_order(errors)]
        raise FleetFileError(
            f"{source}: {len(errors)} problem(s); nothing was changed", errors=errors
        )
    return FleetFile(source=source, nodes=tuple(specs), secrets=frozenset(used))


def _in_file_order(errors: list[str]) -> list[str]:
    """Errors sorted by node (schema and semantic ones mixed), stable within a node."""

    def key(error: str) -> int:
        match = re.match(r"nodes\[(\d+)\]", error)
        return int(match.group(1)) if match else -1

    return sorted(errors, key=key)
