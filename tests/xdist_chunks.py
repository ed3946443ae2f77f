"""pytest-xdist's ``loadgroup`` scheduling, handing a worker a few tests of one module at a time.

``--dist loadgroup`` (pyproject's addopts) keeps each ``xdist_group`` on one worker and makes every other
test its own work unit: the controller then sends, receives and reschedules one test at a time, and its
bookkeeping grows with the square of the number of tests (``LoadScopeScheduling._pending_of`` sums every
unit a worker was ever given, once per finished test): over 4,400 trivial tests, 2–3 s of CPU more
than here (docs/development.md#tests). Here the tests outside a group are grouped instead into
:data:`CHUNK` consecutive tests of one module: the groups stay whole, each test still runs once, and the
last eighth of the tests are units of one test each, which xdist hands out last (it hands out the
largest units first), so the two workers still finish together.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdist.scheduler import LoadGroupScheduling

#: Tests of one module per work unit.
CHUNK = 8
#: The share of the tests, the last ones collected, that are units of one test each: xdist hands out the
#: largest units first, so these come last and the two workers finish together, as with loadgroup.
SINGLE_TAIL = 1 / 8


def chunk_scopes(
    nodeids: Sequence[str], grouped: set[str], size: int = CHUNK, single_tail: float = SINGLE_TAIL
) -> dict[str, str]:
    """The work unit of each test outside ``grouped``: ``<module>::<n>``, ``size`` consecutive tests a unit,
    and the last ``single_tail`` of them a unit each (their node id).

    >>> chunk_scopes(["a.py::t[0]", "a.py::t[1]", "a.py::u", "b.py::t"], set(), size=2, single_tail=0.25)
    {'a.py::t[0]': 'a.py::0', 'a.py::t[1]': 'a.py::0', 'a.py::u': 'a.py::1', 'b.py::t': 'b.py::t'}
    """
    ungrouped = [nodeid for nodeid in nodeids if nodeid not in grouped]
    chunked = len(ungrouped) - int(len(ungrouped) * single_tail)
    scopes: dict[str, str] = {}
    seen: dict[str, int] = {}
    for position, nodeid in enumerate(ungrouped):
        if position >= chunked:
            scopes[nodeid] = nodeid
            continue
        module = nodeid.split("::", 1)[0]
        index = seen.get(module, 0)
        seen[module] = index + 1
        scopes[nodeid] = f"{module}::{index // size}"
    return scopes


class ChunkedLoadGroupScheduling(LoadGroupScheduling):
    """``loadgroup``: one unit per ``xdist_group``, :data:`CHUNK` tests of one module per other unit, and
    one test per unit for the last :data:`SINGLE_TAIL` of the tests."""

    _scopes: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        group = LoadGroupScheduling._split_scope(self, nodeid)
        if group != nodeid:  # an xdist_group: the whole group is one unit, as in loadgroup
            return group
        if self._scopes is None:  # every worker collected the same tests (the scheduler checks it)
            collection = next(iter(self.registered_collections.values()))
            grouped = {n for n in collection if LoadGroupScheduling._split_scope(self, n) != n}
            self._scopes = chunk_scopes(collection, grouped)
        return self._scopes[nodeid]
