"""No import cycle in the package: every module can be read, built and tested from below.

A cycle means two modules can only be understood (and loaded) together; the
SQL store's had two, because its mixins named their host. The graph is
grimp's (the one import-linter checks the layer contracts on), built from
the source, so the test needs nothing imported.
"""

from __future__ import annotations

import grimp
import pytest

#: The SQL store's own modules: no cycle may touch them even through a TYPE_CHECKING import.
SQL_STORE = frozenset(
    f"ironic_fsm.stores.{name}"
    for name in (
        "sql", "_statements", "_rows", "_paging", "_scans", "_history", "_registry",
        "_sql_power", "_sql_claims", "_sql_catalog", "_migrate", "_schema", "_connect",
        "_sqlite", "_postgres",
    )
)  # fmt: skip


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One cycle (a list of modules, the first again at the end) per strongly connected group."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm; the package is far from deep
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return [_one_cycle(graph, group) for group in groups]


def _one_cycle(graph: grimp.ImportGraph, group: list[str]) -> list[str]:
    """A shortest way round ``group``: from its first module back to it."""
    first = group[0]
    best: tuple[str, ...] | None = None
    for importer in graph.find_modules_that_directly_import(first):
        if importer in group:
            chain = graph.find_shortest_chain(importer=first, imported=importer)
            if chain is not None and (best is None or len(chain) < len(best)):
                best = chain
    assert best is not None
    return [*best, first]


def _shown(found: list[list[str]]) -> str:
    return "\n".join(" -> ".join(cycle) for cycle in found)


@pytest.fixture(scope="module")
def run_time_graph() -> grimp.ImportGraph:
    """The imports that run: those under ``if TYPE_CHECKING:`` left out, as lint-imports does."""
    return grimp.build_graph("ironic_fsm", exclude_type_checking_imports=True, cache_dir=None)


def test_the_package_has_no_import_cycle(run_time_graph: grimp.ImportGraph) -> None:
    found = cycles(run_time_graph)
    assert not found, f"import cycles:\n{_shown(found)}"


def test_no_cycle_touches_the_sql_store_even_through_type_checking_imports() -> None:
    # A part that names its host for mypy alone is still a part that cannot stand alone.
    graph = grimp.build_graph("ironic_fsm", exclude_type_checking_imports=False, cache_dir=None)
    found = [cycle for cycle in cycles(graph) if SQL_STORE.intersection(cycle)]
    assert not found, f"import cycles through the SQL store:\n{_shown(found)}"


def test_a_cycle_is_found_and_named() -> None:
    # The check itself: a graph with a cycle of three is reported round, from its first module.
    graph = grimp.ImportGraph()
    for importer, imported in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]:
        graph.add_import(importer=importer, imported=imported)
    assert cycles(graph) == [["a", "b", "c", "a"]]
