"""Accuracy versus ε, measured against theory: the harness behind ``ldp simulate``.

- :func:`run` — the grid mechanisms × ε × users × domain sizes × repeats,
  returning one row per cell and repeat (pandas DataFrame).
- :func:`run_numeric` — the same for numeric mechanisms (mean estimation):
  mechanisms × ε × users × repeats, scored against theory and the LDP bound;
  :func:`summarize_numeric` / :func:`format_numeric_report` — its table.
- :func:`summarize` / :func:`best_by_epsilon` — the table ``ldp simulate``
  prints.
- :func:`run_rounds` — longitudinal: T rounds of an evolving (or real)
  panel, per-round error against theory and every user's lifetime ε, each
  mechanism calibrated to one lifetime budget (``ldp simulate --rounds``);
  :func:`format_rounds_report` — its table; :class:`Panel`,
  :func:`evolving_panel`, :func:`read_panel` — the panels.
- ``data=``: both take real data as a file path (CSV, JSON Lines, JSON,
  Parquet), a pandas DataFrame (with ``column``) or a Series.
- :mod:`ldp.simulations.populations` — synthetic and real-data populations.
- :mod:`ldp.simulations.fast` — exact sampling of aggregated counts.
- :mod:`ldp.simulations.faithful` — the real client and aggregator end to end.
- :mod:`ldp.simulations.metrics` — errors, theory, the LDP reference bound.
- :mod:`ldp.simulations.key_value` / :mod:`ldp.simulations.range_sweep` —
  the sweeps of key-value and range mechanisms (``ldp simulate -m pckv-ue``,
  ``-m range-hierarchy,range-haar``).
- :mod:`ldp.simulations.presets` — published setups (``wang2017``,
  ``rappor-regtest``).
- :mod:`ldp.simulations.plot` — error versus ε, and error and lifetime ε
  versus round (matplotlib, imported lazily).
"""

from ldp.simulations.mechanisms import RapporSettings, rappor_for_epsilon
from ldp.simulations.numeric import (
    NumericPopulation,
    format_numeric_report,
    numeric_population,
    numeric_population_from_data,
    run_numeric,
    summarize_numeric,
)
from ldp.simulations.panels import Panel, evolving_panel, read_panel
from ldp.simulations.populations import Population, from_data, make_population
from ldp.simulations.rounds import ROUND_COLUMNS, format_rounds_report, run_rounds
from ldp.simulations.runner import DEFAULTS, RESULT_COLUMNS, run
from ldp.simulations.summary import best_by_epsilon, format_report, summarize

__all__ = [
    "DEFAULTS",
    "RESULT_COLUMNS",
    "ROUND_COLUMNS",
    "NumericPopulation",
    "Panel",
    "Population",
    "RapporSettings",
    "best_by_epsilon",
    "evolving_panel",
    "format_numeric_report",
    "format_report",
    "format_rounds_report",
    "from_data",
    "make_population",
    "numeric_population",
    "numeric_population_from_data",
    "rappor_for_epsilon",
    "read_panel",
    "run",
    "run_numeric",
    "run_rounds",
    "summarize",
    "summarize_numeric",
]
