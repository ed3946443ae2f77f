"""Longitudinal simulation: T rounds of one panel, per-round error against theory and every user's lifetime ε.

:func:`run_rounds` is the Python API behind ``ldp simulate --rounds T``
(docs/longitudinal/simulate.md). Every user reports once per round (a panel
user with no row in a round sends nothing). Each round is one collection,
scored exactly as one cell of :func:`ldp.simulations.run`
(:func:`ldp.simulations.runner.collection_row`: the registry's fast
simulator when the mechanism has one, else the real client and aggregator;
``theory_mse`` the mechanism's exact fixed-data variance). The lifetime ε of
each user after each round is the ledger's (:mod:`ldp.simulations.lifetime`).

A memoizing mechanism's per-round estimate has the law of one collection:
the memo of a (user, key) is drawn independently of every other user's, so
in one round the reports are independent across users with the one-report
channel, whether the memo is new or re-used. The per-round error and its
theory are therefore those of one collection; what memoization changes is
the correlation of one user's reports across rounds (not simulated: no
per-round quantity depends on it) and the lifetime ε (accounted exactly from
the panel).

Equal lifetime budget (:func:`budget_spec`), generic on spec attributes
(``memoized``, ``epsilon``/``epsilon_one``, ``epsilon_inf``, the ledger's
per-report charge):

- a spec with fresh randomness per report (not ``memoized``): ε = B/R, R the
  most reports any user sends (T for a synthetic panel), so r·ε ≤ B;
- a memoizing spec whose ε∞ can be set (its constructor takes
  ``epsilon_inf``; RAPPOR through its f): ε∞ = ε₁/ρ with ρ =
  ``epsilon_ratio``, and the largest ε₁ for which the worst user of the
  panel, accounted by the ledger, stays within B. When the ledger charges
  ε₁ per report that is ε₁ = B / max_u S_u, S_u = Σ_k min(r_uk, 1/ρ) over
  the user's memo keys; a spec charged more per report (a chain whose r
  reports of one memo cost more than r·ε₁) gets the largest ε₁ that fits,
  by bisection;
- any other memoizing spec: the largest ε (bisection) whose worst user of
  the panel, accounted with the spec's own ε₁ and ε∞, stays within B.

The budget is met on the panel simulated (the *spent* ε). The ledger of a
deployed client refuses reports by the *committed*, value-independent bound
instead (``lifetime_committed``), which can be larger: docs/longitudinal/simulate.md.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ldp.errors import ParameterError, SpecError
from ldp.simulations.lifetime import (
    EXACT,
    UPPER_BOUND,
    Accounting,
    accounting_of,
    lifetime_epsilon,
    memo_key_of_value,
    report_ranks,
    worst_grouping,
)
from ldp.simulations.mechanisms import (
    RapporSettings,
    accepts_epsilon_inf,
    build_spec,
    check_mechanisms,
    mechanism_kind,
)
from ldp.simulations.panels import Panel, evolving_panel, read_panel
from ldp.simulations.populations import Population, make_population
from ldp.simulations.runner import MODES, collection_row, grid_options
from ldp.simulations.summary import results_frame
from ldp.specs.numeric import NUMERIC_MECHANISMS

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_EPSILON_RATIO",
    "ROUND_COLUMNS",
    "budget_spec",
    "default_round_mechanisms",
    "format_rounds_report",
    "run_rounds",
]

#: Lifetime budget B when neither ``budget`` nor ``epsilon`` is given.
DEFAULT_BUDGET = 4.0
#: ρ = ε₁/ε∞ of memoizing specs whose ε∞ is set (the L- chains' default ε∞ = 2·ε₁).
DEFAULT_EPSILON_RATIO = 0.5
_SLACK = 1e-9

#: Columns of the per-round results, in order.
ROUND_COLUMNS = (
    "mechanism",
    "resolved",
    "round",
    "users",
    "domain_size",
    "distribution",
    "change_prob",
    "budget",
    "epsilon",
    "epsilon_inf",
    "mode",
    "seed",
    "mse",
    "mae",
    "max_error",
    "tv",
    "theory_mse",
    "mse_ratio",
    "lower_bound",
    "lifetime_median",
    "lifetime_max",
    "lifetime_committed",
    "lifetime_rule",
    "seconds",
)


def default_round_mechanisms() -> list[str]:
    """GRR, OUE, OLH and RAPPOR, then every registered memoizing frequency oracle (the L- chains, LOLOHA, ...)."""
    from ldp.specs import FREQUENCY_MECHANISMS

    memoizing = [name for name, cls in FREQUENCY_MECHANISMS.items() if getattr(cls, "memoized", False)]
    return ["grr", "oue", "olh", "rappor", *memoizing]


def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=tuple(key))))


def _name_key(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def _positive(value: Any, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number <= 0:
        raise ParameterError.naming(f"{{{name}=}} must be a finite number > 0", **{name: value})
    return number


def _check_ratio(epsilon_ratio: Any) -> float:
    rho = _positive(epsilon_ratio, "epsilon_ratio")
    if not rho < 1:
        raise ParameterError.naming(
            "{epsilon_ratio=} must be in (0, 1) (epsilon_one < epsilon_inf)", epsilon_ratio=epsilon_ratio
        )
    return rho


class _Ledger:
    """Lifetime ε of a panel's users under one spec after another, re-using the report ranks of each key mapping."""

    def __init__(self, panel: Panel):
        self.panel = panel
        self._ranks: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def _keys(self, spec: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(keys, report ranks, and per (user, key): its user and its number of reports) under ``spec``'s memo keys."""
        of_value = memo_key_of_value(spec, self.panel.domain)
        signature = of_value.tobytes()
        if signature not in self._ranks:
            values = self.panel.values
            keys = np.where(values >= 0, of_value[np.clip(values, 0, None)], -1)
            ranks = report_ranks(keys)
            width = int(keys.max()) + 1
            users = np.broadcast_to(np.arange(keys.shape[1]), keys.shape)
            groups, totals = np.unique((users * width + keys)[keys >= 0], return_counts=True)
            self._ranks[signature] = (keys, ranks, groups // width, totals)
        return self._ranks[signature]

    def spent(self, spec: Any, accounting: Accounting | None = None) -> np.ndarray:
        """(T, n) lifetime ε under ``spec`` (:func:`~ldp.simulations.lifetime.lifetime_epsilon`)."""
        accounting = accounting_of(spec) if accounting is None else accounting
        if not accounting.memoized:
            return lifetime_epsilon(self.panel.values, accounting)
        keys, ranks, _, _ = self._keys(spec)
        return lifetime_epsilon(keys, accounting, ranks=ranks)

    def worst(self, spec: Any, accounting: Accounting | None = None) -> float:
        """The largest lifetime ε of any user after the last round (the same sum as :meth:`spent`, per user)."""
        accounting = accounting_of(spec) if accounting is None else accounting
        if not accounting.memoized:
            return float((self.panel.values >= 0).sum(axis=0).max()) * accounting.epsilon
        _, _, users, totals = self._keys(spec)
        cap = math.inf if accounting.epsilon_inf is None else accounting.epsilon_inf
        if not accounting.linear:  # the ledger's ε₁ for a key's first report, ε∞ from its second
            if accounting.rule == UPPER_BOUND:  # the worst grouping of each user's values onto its keys
                distinct = np.bincount(users)
                repeated = np.bincount(users, weights=totals >= 2).astype(np.int64)
                grouped = worst_grouping(
                    distinct, repeated, accounting.epsilon, cap, accounting.memo_domain_size
                )
                return float(grouped.max())
            costs = np.where(totals >= 2, cap, accounting.epsilon)
            return float(np.bincount(users, weights=costs).max())
        costs = np.minimum(totals * accounting.epsilon, cap)
        if accounting.first is not None and accounting.rule == EXACT:  # a key reported once: ε₁
            costs = np.where(totals == 1, min(accounting.first, cap), costs)
        per_user = np.bincount(users, weights=costs)
        worst = float(per_user.max())
        if accounting.rule == UPPER_BOUND and accounting.memo_domain_size is not None and math.isfinite(cap):
            worst = min(worst, accounting.memo_domain_size * cap)
        return worst


def budget_spec(
    name: str,
    panel: Panel,
    budget: float,
    *,
    epsilon_ratio: float = DEFAULT_EPSILON_RATIO,
    rappor: RapporSettings = RapporSettings(),
    ledger: _Ledger | None = None,
) -> Any:
    """The spec of mechanism ``name`` whose worst user of ``panel`` spends at most ``budget`` (rule: module docstring).

    Parameters
    ----------
    name : str
        A frequency oracle, ``rappor``, or a memoizing oracle.
    panel : Panel
    budget : float
        B, the lifetime ε every user must stay within.
    epsilon_ratio : float
        ρ = ε₁/ε∞ in (0, 1) for memoizing specs whose ε∞ can be set.
    rappor : RapporSettings
    ledger : optional
        Re-used accounting of ``panel`` (internal: :func:`run_rounds` passes one).

    Examples
    --------
    >>> import numpy as np
    >>> panel = Panel("toy", ("a", "b", "c"), np.array([[0, 1], [0, 1], [2, 1], [2, 1]]))
    >>> budget_spec("grr", panel, 4.0).epsilon  # fresh: B / 4 reports
    1.0
    >>> spec = budget_spec("l-grr", panel, 4.0)  # user 0: keys a, c twice each: S = 2 + 2
    >>> spec.epsilon, spec.epsilon_inf
    (1.0, 2.0)
    """
    b = _positive(budget, "budget")
    rho = _check_ratio(epsilon_ratio)
    ledger = _Ledger(panel) if ledger is None else ledger
    domain = panel.domain
    most_reports = int((panel.values >= 0).sum(axis=0).max())
    provisional = build_spec(name, b / most_reports, domain, rappor=rappor)
    accounting = accounting_of(provisional)
    if not accounting.memoized:
        return provisional
    if accepts_epsilon_inf(name):
        # charged ε₁ per report, the worst user would spend ε₁·max_u S_u: the largest ε₁ is B / max_u S_u
        unit = Accounting(
            1.0, 1.0 / rho, True, accounting.memo_domain_size, accounting.rule, accounting.linear
        )
        high = b / ledger.worst(provisional, unit)

        def build(x: float) -> Any:
            return build_spec(name, x, domain, rappor=rappor, epsilon_inf=x / rho)

    else:
        high = b

        def build(x: float) -> Any:
            return build_spec(name, x, domain, rappor=rappor)

    spec = _largest_fitting(build, ledger, b, high)
    if spec is None:
        raise ParameterError(f"{name}: no parameters keep the lifetime epsilon within {b:g} on this panel")
    return spec


def _largest_fitting(build: Callable[[float], Any], ledger: _Ledger, budget: float, high: float) -> Any:
    """The spec ``build(x)`` at the largest x <= ``high`` whose worst user of the panel stays within ``budget``.

    ``high`` itself first (the answer whenever each report is charged ε₁);
    otherwise 40 halvings of [low, high], low the first of high/2, high/4, ...
    that fits (a spec whose r reports of one memo cost more than r·ε₁ is
    charged more per report, :func:`~ldp.privacy.spending.stream_parameters`).
    """

    def fitting(x: float) -> Any:
        try:
            spec = build(x)
        except (SpecError, ParameterError):
            return None
        return spec if ledger.worst(spec) <= budget * (1 + _SLACK) else None

    best = fitting(high)
    if best is not None:
        return best
    low = high
    for _ in range(60):
        low /= 2
        best = fitting(low)
        if best is not None:
            break
    else:
        return None
    for _ in range(40):
        middle = (low + high) / 2
        spec = fitting(middle)
        if spec is None:
            high = middle
        else:
            low, best = middle, spec
    return best


def _panel(
    panel: Panel | str | Path | None,
    panel_columns: Sequence[str] | None,
    rejects: Any,
    rounds: int | None,
    users: int | None,
    distribution: str | Population,
    domain_size: int | None,
    change_prob: float,
    distribution_parameter: float | None,
    seed: int,
) -> Panel:
    if panel is not None:
        clash = [
            n
            for n, v in (("rounds", rounds), ("users", users), ("domain_size", domain_size))
            if v is not None
        ]
        if clash:
            raise ParameterError.naming(
                "{panel} fixes the rounds, users and domain; drop " + ", ".join("{" + n + "}" for n in clash),
                panel=None,
                **dict.fromkeys(clash),
            )
        if isinstance(panel, Panel):
            return panel
        from ldp.simulations.panels import PANEL_COLUMNS

        columns = tuple(str(c) for c in (panel_columns or PANEL_COLUMNS))
        if len(columns) != 3 or len(set(columns)) != 3 or "" in columns:
            raise ParameterError.naming(
                "{panel_columns} must be three distinct column names (user, round, value), got "
                + ",".join(columns),
                panel_columns=panel_columns,
            )
        return read_panel(panel, columns, rejects=rejects)
    if rounds is None:
        raise ParameterError.naming("give {rounds} (or a {panel})", rounds=None, panel=None)
    if isinstance(distribution, Population):
        if domain_size is not None:
            raise ParameterError("give a Population or domain_size, not both")
        population = distribution
    else:
        population = make_population(
            distribution, 64 if domain_size is None else domain_size, distribution_parameter
        )
    n = 100_000 if users is None else users
    return evolving_panel(population, n, rounds, change_prob, _stream(seed, 10, population.domain_size, n))


def run_rounds(
    mechanisms: Sequence[str] | str | None = None,
    rounds: int | None = None,
    users: int | None = None,
    domain_size: int | None = None,
    distribution: str | Population = "zipf",
    *,
    change_prob: float = 0.1,
    budget: float | None = None,
    epsilon: float | None = None,
    epsilon_ratio: float = DEFAULT_EPSILON_RATIO,
    panel: Panel | str | Path | None = None,
    panel_columns: Sequence[str] | None = None,
    rejects: Any = None,
    distribution_parameter: float | None = None,
    seed: int | None = None,
    mode: str = "fast",
    top_k: int = 10,
    rappor: RapporSettings = RapporSettings(),
    client_sample: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate T rounds of an evolving panel: per-round error against theory and lifetime ε per user.

    Parameters
    ----------
    mechanisms : list of str or comma-separated str, optional
        Frequency oracles, ``rappor`` and memoizing oracles; default
        :func:`default_round_mechanisms`.
    rounds : int, optional
        T, rounds of a synthetic panel (required without ``panel``).
    users : int, optional
        n, users of a synthetic panel; default 100,000.
    domain_size : int, optional
        D of a synthetic population; default 64.
    distribution : str or Population
        The population values are drawn (and redrawn) from; default zipf.
    change_prob : float
        c: before each round after the first, each user redraws its value
        from the population with probability c (:func:`~ldp.simulations.panels.evolving_panel`).
    budget : float, optional
        B: every mechanism gets the parameters that keep the worst user of
        the panel within lifetime ε B (:func:`budget_spec`). Default 4 when
        ``epsilon`` is not given either.
    epsilon : float, optional
        Instead of ``budget``: ε per report for every mechanism (memoizing
        ones: ε₁ = ε and ε∞ = ε/ρ where it can be set).
    epsilon_ratio : float
        ρ = ε₁/ε∞ of memoizing specs whose ε∞ is set; default 1/2.
    panel : Panel or path, optional
        A real panel instead: a :class:`~ldp.simulations.panels.Panel`, or a
        CSV/JSON Lines/JSON/Parquet file read by
        :func:`~ldp.simulations.panels.read_panel` (bad rows to ``rejects``).
    panel_columns : (str, str, str), optional
        The file's user, round and value columns; default user, round, value.
    rejects : ldp.aggregator.rejects.RejectsWriter, optional
    seed : int, optional
        Root seed (drawn at random when omitted; recorded in ``seed``).
    mode : {"fast", "faithful"}
        ``fast`` uses the mechanism's fast simulator when the registry has
        one (else the real client: the row's ``mode`` says which ran).
    top_k, rappor, client_sample, progress
        As for :func:`ldp.simulations.run`.

    Returns
    -------
    pandas.DataFrame
        One row per mechanism and round, columns :data:`ROUND_COLUMNS`:
        ``epsilon``/``epsilon_inf`` the spec's ε₁ and ε∞ (NaN for fresh
        specs), ``mse`` and ``theory_mse`` of the round, and the lifetime ε
        after the round: ``lifetime_median`` and ``lifetime_max`` over the
        users who have reported so far, ``lifetime_committed`` the ledger's
        value-independent bound for the most reports any user has sent
        (:func:`~ldp.privacy.spending.worst_case_memoized_cost`), and
        ``lifetime_rule`` (``fresh``, ``memo keys`` or ``per-value bound``).

    Examples
    --------
    >>> from ldp.simulations import run_rounds
    >>> results = run_rounds("grr,l-grr", rounds=5, users=2_000, domain_size=8, change_prob=0.2, budget=2.0, seed=1)
    >>> len(results), bool(results["lifetime_max"].max() <= 2.0 * (1 + 1e-9))
    (10, True)
    >>> float(results.query("mechanism == 'grr'")["epsilon"].iloc[0])  # fresh: B / T
    0.4
    """
    if mode not in MODES:
        raise ParameterError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if budget is not None and epsilon is not None:
        raise ParameterError.naming("give {budget} or {epsilon}, not both", budget=budget, epsilon=epsilon)
    _, _, seed = grid_options(None, 1, seed, [1])
    if epsilon is None:
        budget = DEFAULT_BUDGET if budget is None else _positive(budget, "budget")
    else:
        epsilon = _positive(epsilon, "epsilon")
    requested = default_round_mechanisms() if mechanisms is None else mechanisms
    numeric = [
        n
        for n in (requested.split(",") if isinstance(requested, str) else requested)
        if str(n).strip().lower() in NUMERIC_MECHANISMS
    ]
    if numeric:
        raise ParameterError.naming(
            f"{{mechanisms}}: {', '.join(numeric)} estimate means; rounds are simulated for frequency oracles",
            mechanisms=mechanisms,
        )
    the_panel = _panel(
        panel,
        panel_columns,
        rejects,
        rounds,
        users,
        distribution,
        domain_size,
        change_prob,
        distribution_parameter,
        seed,
    )
    domain = the_panel.domain
    names = check_mechanisms(requested, len(domain))
    for name in names:
        if mechanism_kind(name) == "heavy-hitter":
            raise ParameterError(f"{name} is a heavy-hitter protocol; simulate rounds of frequency oracles")
    ledger = _Ledger(the_panel)
    specs = {name: _spec(name, ledger, budget, epsilon, epsilon_ratio, rappor) for name in names}
    population = the_panel.population()
    total = len(names) * the_panel.num_rounds
    records: list[dict[str, Any]] = []
    sent = np.cumsum(the_panel.values >= 0, axis=0)
    for name, spec in specs.items():
        accounting = accounting_of(spec)
        spent = ledger.spent(spec, accounting)
        committed = _committed(accounting, sent.max(axis=1))
        cell_mode = _cell_mode(name, spec, mode)
        for t in range(the_panel.num_rounds):
            started = time.perf_counter()
            counts = the_panel.round_counts(t)
            reporting = sent[t] > 0
            if counts.sum() == 0:
                continue
            rng = _stream(seed, 11, t, _name_key(name))
            row = collection_row(
                name, spec, population, counts, rng, mode=cell_mode, top_k=top_k, client_sample=client_sample
            )
            row.update(
                mechanism=name,
                round=the_panel.rounds[t],
                users=int(counts.sum()),
                domain_size=len(domain),
                distribution=the_panel.name,
                change_prob=the_panel.change_prob,
                budget=math.nan if budget is None else budget,
                epsilon=accounting.epsilon,
                epsilon_inf=math.nan if accounting.epsilon_inf is None else accounting.epsilon_inf,
                mode=cell_mode,
                seed=seed,
                lifetime_median=float(np.median(spent[t][reporting])),
                lifetime_max=float(spent[t][reporting].max()),
                lifetime_committed=committed[t],
                lifetime_rule=accounting.rule,
                seconds=time.perf_counter() - started,
            )
            records.append(row)
            if progress is not None:
                progress(len(records), total)
    return results_frame(records, ROUND_COLUMNS)


def _spec(
    name: str,
    ledger: _Ledger,
    budget: float | None,
    epsilon: float | None,
    rho: float,
    rappor: RapporSettings,
) -> Any:
    panel = ledger.panel
    if budget is not None:
        return budget_spec(name, panel, budget, epsilon_ratio=rho, rappor=rappor, ledger=ledger)
    assert epsilon is not None
    rho = _check_ratio(rho)
    probe = build_spec(name, epsilon, panel.domain, rappor=rappor)
    if probe.memoized and accepts_epsilon_inf(name):
        return build_spec(name, epsilon, panel.domain, rappor=rappor, epsilon_inf=epsilon / rho)
    return probe


def _cell_mode(name: str, spec: Any, mode: str) -> str:
    """``fast`` when asked and the mechanism has a fast simulator (RAPPOR's is built in), else ``faithful``."""
    from ldp.plugins import has_implementation

    if (
        mode == "fast"
        and mechanism_kind(name) == "frequency"
        and not has_implementation(spec, "fast_simulator")
    ):
        return "faithful"
    return mode


def _committed(accounting: Any, most_reports: np.ndarray) -> list[float]:
    """The ledger's value-independent bound after each round, for the user with the most reports."""
    from ldp.privacy.spending import worst_case_memoized_cost

    if not accounting.memoized:
        return [float(r) * accounting.epsilon for r in most_reports]
    return [
        worst_case_memoized_cost(
            int(r),
            accounting.epsilon,
            accounting.epsilon_inf,
            accounting.memo_domain_size,
            linear=accounting.linear,
            first=accounting.first,
        )
        for r in most_reports
    ]


def format_rounds_report(results: pd.DataFrame) -> str:
    """The table ``ldp simulate --rounds`` prints: one line per mechanism.

    Per mechanism: ε₁ and ε∞ per report, the MSE and its theory averaged
    over the rounds (and their ratio), and the lifetime ε after the last
    round (median and maximum over users, and the committed bound).

    Examples
    --------
    >>> results = run_rounds("oue", rounds=3, users=1_000, domain_size=4, budget=3.0, seed=2)
    >>> print(format_rounds_report(results).splitlines()[3].split()[:3])  # ε = B/T = 1 per report
    ['oue', '1', '-']
    """
    if results.empty:
        raise ParameterError("no results to report")
    lines = []
    first = results.iloc[0]
    budget = first["budget"]
    heading = (
        f"{first['distribution']}, D={int(first['domain_size'])}, rounds={results['round'].nunique()}, "
        f"users/round={int(results['users'].max()):,}"
    )
    if not math.isnan(first["change_prob"]):
        heading += f", change prob={first['change_prob']:g}"
    if not math.isnan(budget):
        heading += f", lifetime budget={budget:g} (equal for every mechanism)"
    lines.append(heading)
    header = (
        f"{'mechanism':<10} {'eps_1':>8} {'eps_inf':>8} {'mean MSE':>11} {'theory':>11} {'ratio':>6} "
        f"{'life med':>9} {'life max':>9} {'committed':>9}  rule"
    )
    lines.append(header)
    lines.append("-" * len(header))
    for name, block in results.groupby("mechanism", sort=False):
        last = block.iloc[-1]
        mse, theory = block["mse"].mean(), block["theory_mse"].mean()
        ratio = mse / theory if theory > 0 else math.nan
        eps_inf = "-" if math.isnan(last["epsilon_inf"]) else f"{last['epsilon_inf']:.4g}"
        lines.append(
            f"{name:<10} {last['epsilon']:>8.4g} {eps_inf:>8} {mse:>11.4e} {theory:>11.4e} {ratio:>6.3f} "
            f"{last['lifetime_median']:>9.4g} {last['lifetime_max']:>9.4g} {last['lifetime_committed']:>9.4g}  "
            f"{last['lifetime_rule']}"
        )
    lines.append(
        "MSE per value on the frequency scale, averaged over rounds; theory: the exact variance; "
        "lifetime epsilon after the last round (ledger accounting, basic composition)."
    )
    return "\n".join(lines)
