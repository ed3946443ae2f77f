"""Panels: every user's value in every round, synthetic (evolving) or read from a file (docs/longitudinal/simulate.md).

A :class:`Panel` holds, for T rounds and n users, the domain index of each
user's value in each round (``-1``: the user sent no report that round).
It is the input of :func:`ldp.simulations.run_rounds`.

- :func:`evolving_panel`: round 1 draws every user's value from a
  population; in each later round each user, independently with probability
  ``change_prob``, draws a new value from the same population (which may be
  the value it held: the probability that a user's value *differs* from the
  previous round's is ``change_prob``·(1 − Σ_v p_v²)).
- :func:`read_panel`: a CSV, JSON Lines, JSON or Parquet file (read by
  :mod:`ldp.values_file`, with its rules) with one row per user and round:
  a user column, a round column (integers; the rounds are the file's
  distinct round numbers, in order) and a value column. A row that cannot
  be used is rejected with its reason (:class:`ldp.aggregator.rejects.Reject`:
  ``missing_field`` for an empty user, round or value, ``invalid`` for a
  round that is not an integer or a second value of one user in one round)
  and the others are used, as ``ldp aggregate`` does with reports.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ldp.domain import normalize_domain
from ldp.errors import ParameterError
from ldp.simulations.populations import Population, domain_value

__all__ = ["PANEL_COLUMNS", "Panel", "evolving_panel", "read_panel"]

#: Default names of a panel file's user, round and value columns.
PANEL_COLUMNS = ("user", "round", "value")


@dataclasses.dataclass(frozen=True, eq=False)
class Panel:
    """Users' values over rounds.

    Parameters
    ----------
    name : str
        Label used in results (``"zipf(1.1)"``, ``"panel:visits.csv"``).
    domain : tuple
        The values.
    values : numpy.ndarray of int, shape (T, n)
        Domain index of user u's value in round t; −1 when the user sent no
        report in that round.
    rounds : tuple of int
        The label of each of the T rounds (1..T for synthetic panels).
    change_prob : float
        The per-round change probability of a synthetic panel; NaN for a file.

    Examples
    --------
    >>> import numpy as np
    >>> panel = Panel("toy", ("a", "b"), np.array([[0, 1], [0, -1]]))
    >>> panel.num_rounds, panel.num_users, panel.round_counts(1).tolist()
    (2, 2, [1, 0])
    """

    name: str
    domain: tuple
    values: np.ndarray
    rounds: tuple[int, ...] = ()
    change_prob: float = math.nan

    def __post_init__(self) -> None:
        domain = normalize_domain(self.domain)
        values = np.asarray(self.values)
        if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 1:
            raise ParameterError(
                f"panel {self.name!r}: values must be a (rounds, users) array, got {values.shape}"
            )
        if not np.issubdtype(values.dtype, np.integer):
            raise ParameterError(f"panel {self.name!r}: values must be integer domain indices")
        if values.size and (values.min() < -1 or values.max() >= len(domain)):
            raise ParameterError(f"panel {self.name!r}: values must be domain indices (or -1 for no report)")
        rounds = tuple(int(r) for r in self.rounds) or tuple(range(1, values.shape[0] + 1))
        if len(rounds) != values.shape[0]:
            raise ParameterError(
                f"panel {self.name!r}: {len(rounds)} round labels for {values.shape[0]} rounds"
            )
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "values", values.astype(np.int32, copy=False))
        object.__setattr__(self, "rounds", rounds)

    @property
    def num_rounds(self) -> int:
        return int(self.values.shape[0])

    @property
    def num_users(self) -> int:
        return int(self.values.shape[1])

    def round_counts(self, t: int) -> np.ndarray:
        """Users holding each domain value in round index ``t`` (0-based), in domain order."""
        row = self.values[t]
        return np.bincount(row[row >= 0], minlength=len(self.domain)).astype(np.int64)

    def population(self) -> Population:
        """The pooled distribution of every reported value (all rounds): the population of the scoring functions."""
        reported = self.values[self.values >= 0]
        counts = np.bincount(reported, minlength=len(self.domain)).astype(float)
        return Population(self.name, self.domain, counts + (counts.sum() == 0))


def evolving_panel(
    population: Population, users: int, rounds: int, change_prob: float, rng: np.random.Generator
) -> Panel:
    """A synthetic panel: values drawn from ``population``, each redrawn with ``change_prob`` per round.

    Parameters
    ----------
    population : Population
    users, rounds : int
        n ≥ 1 and T ≥ 1.
    change_prob : float
        c in [0, 1]: each user independently redraws its value from
        ``population`` before each round after the first, with probability c.
    rng : numpy.random.Generator

    Examples
    --------
    >>> import numpy as np
    >>> from ldp.simulations import make_population
    >>> panel = evolving_panel(make_population("uniform", 4), 1000, 5, 0.0, np.random.default_rng(1))
    >>> bool((panel.values == panel.values[0]).all())  # c = 0: nobody changes
    True
    """
    if isinstance(users, bool) or not isinstance(users, (int, np.integer)) or users < 1:
        raise ParameterError(f"users must be an integer >= 1, got {users!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ParameterError(f"rounds must be an integer >= 1, got {rounds!r}")
    c = float(change_prob)
    if not 0 <= c <= 1:
        raise ParameterError(f"change_prob must be in [0, 1], got {change_prob!r}")
    d = population.domain_size
    probabilities = population.probabilities
    values = np.empty((int(rounds), int(users)), dtype=np.int32)
    values[0] = rng.choice(d, size=int(users), p=probabilities)
    for t in range(1, int(rounds)):
        values[t] = values[t - 1]
        changed = np.flatnonzero(rng.random(int(users)) < c)
        values[t, changed] = rng.choice(d, size=changed.size, p=probabilities)
    return Panel(population.name, population.domain, values, change_prob=c)


def _missing(cell: Any) -> bool:
    return cell is None or (isinstance(cell, float) and math.isnan(cell)) or str(cell) == ""


def _round_number(cell: Any) -> int | None:
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, np.integer)):
        return int(cell)
    if isinstance(cell, float):
        return int(cell) if cell.is_integer() else None
    text = str(cell).strip()
    try:
        return int(text)
    except ValueError:
        return None


def _raw(columns: Sequence[str], cells: tuple[Any, ...]) -> str:
    from ldp.jsonlines import json_line

    return json_line({name: (None if cell is None else str(cell)) for name, cell in zip(columns, cells)})


def read_panel(
    path: str | Path,
    columns: Sequence[str] = PANEL_COLUMNS,
    *,
    rejects: Any = None,
) -> Panel:
    """A panel from a table file with user, round and value columns; bad rows rejected with their reason.

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.jsonl``/``.ndjson``, ``.json`` or ``.parquet`` (the text
        kinds optionally ``.gz``), read by :func:`ldp.values_file.read_table`.
    columns : (str, str, str)
        Names of the user, round and value columns.
    rejects : ldp.aggregator.rejects.RejectsWriter, optional
        Receives one :class:`~ldp.aggregator.rejects.Reject` per unusable
        row (``line`` is the 1-based data row, header excluded); without it
        rejected rows are only skipped.

    Returns
    -------
    Panel
        Users in order of first appearance; the domain is the distinct
        values, most frequent first (ties by value); the rounds are the
        distinct round numbers, ascending.

    Raises
    ------
    ParameterError
        When no row is usable or the values have a single distinct value.
    InputError
        An unreadable file or a missing column (:mod:`ldp.values_file`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from ldp.aggregator.rejects import RejectsWriter
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "panel.csv"
    >>> _ = path.write_text("user,round,value\\na,1,x\\nb,1,y\\na,2,y\\na,2,x\\nb,two,x\\n")
    >>> with RejectsWriter() as rejects:
    ...     panel = read_panel(path, rejects=rejects)
    >>> panel.domain, panel.values.tolist(), dict(rejects.counts)  # y is the most frequent; b has no round 2
    (('y', 'x'), [[1, 0], [0, -1]], {'invalid': 2})
    """
    from ldp.aggregator.rejects import Reject
    from ldp.values_file import check_column, read_table

    names = tuple(str(c) for c in columns)
    if len(names) != 3 or len(set(names)) != 3:
        raise ParameterError(
            f"panel columns must be three distinct names (user, round, value), got {columns!r}"
        )

    def select(header: list[str]) -> tuple[str, ...]:
        for name in names:
            check_column(path, name, header)
        return names

    users: dict[str, int] = {}
    seen: set[tuple[int, int]] = set()
    rows: list[tuple[int, int, str | int]] = []
    bad: list[Any] = []
    source = str(path)

    def reject(number: int, reason: str, detail: str, cells: tuple[Any, ...]) -> None:
        bad.append(Reject(source, number, reason, detail, _raw(names, cells)))
        if rejects is not None and len(bad) >= 1024:
            rejects.write(bad)
            bad.clear()

    for number, cells in enumerate(read_table(path, select, strict=False), start=1):
        empty = [name for name, cell in zip(names, cells) if _missing(cell)]
        if empty:
            reject(number, "missing_field", f"row {number} has no {' or '.join(empty)}", cells)
            continue
        round_number = _round_number(cells[1])
        if round_number is None:
            reject(number, "invalid", f"row {number}: round {cells[1]!r} is not an integer", cells)
            continue
        user = users.setdefault(str(cells[0]), len(users))
        if (user, round_number) in seen:
            reject(
                number,
                "invalid",
                f"row {number}: user {str(cells[0])!r} already has a value in round {round_number}",
                cells,
            )
            continue
        seen.add((user, round_number))
        rows.append((user, round_number, domain_value(cells[2])))
    if rejects is not None:
        rejects.write(bad)
    if not rows:
        raise ParameterError(
            f"panel {source!r} has no usable row (every row was rejected or the file is empty)"
        )
    counts: dict[str | int, int] = {}
    for _, _, value in rows:
        counts[value] = counts.get(value, 0) + 1
    domain = sorted(counts, key=lambda v: (-counts[v], str(v)))
    if len({str(v) for v in domain}) != len(domain):
        raise ParameterError(f"panel {source!r}: the values mix numbers and text that print the same")
    if len(domain) < 2:
        raise ParameterError(f"panel {source!r} has a single distinct value; need at least 2")
    index = {v: i for i, v in enumerate(domain)}
    labels = sorted({r for _, r, _ in rows})
    position = {r: i for i, r in enumerate(labels)}
    values = np.full((len(labels), len(users)), -1, dtype=np.int32)
    for user, round_number, value in rows:
        values[position[round_number], user] = index[value]
    return Panel(f"panel:{Path(source).name}", tuple(domain), values, tuple(labels))
