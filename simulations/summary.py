"""The table ``ldp simulate`` prints: metrics averaged over repeats, and the best mechanism per ε.

Pure pandas on the results of :func:`ldp.simulations.run`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "best_by_epsilon",
    "format_report",
    "found_nothing",
    "missed_the_top",
    "results_frame",
    "summarize",
]

_GROUP = ["distribution", "domain_size", "users", "mechanism", "epsilon"]


def results_frame(records: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """The results of a simulation as a frame with exactly ``columns``, in order; what no record has is NaN.

    :func:`ldp.simulations.run` and :func:`ldp.simulations.run_rounds` build their tables with it, one
    record (a row's metrics and settings) per cell.

    Examples
    --------
    >>> frame = results_frame([{"mse": 0.5, "mechanism": "grr", "extra": 1}], ["mechanism", "mse", "tv"])
    >>> frame.columns.tolist(), frame["tv"].isna().all()
    (['mechanism', 'mse', 'tv'], np.True_)
    """
    frame = pd.DataFrame.from_records(records)
    for column in columns:
        if column not in frame.columns:
            frame[column] = math.nan
    return frame.loc[:, list(columns)]


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """One row per distribution × D × users × mechanism × ε: means over repeats and the MSE spread.

    Columns: the group keys, ``resolved`` (what ``auto`` chose), ``repeats``,
    ``mse`` (mean), ``mse_sd`` (standard deviation over repeats, NaN for one
    repeat), ``rmse`` (√mse: the typical error of one frequency),
    ``theory_mse``, ``mse_ratio``, ``lower_bound``, ``mae``, ``max_error``,
    ``tv``, ``top_k_precision``, ``top_k_recall`` and, for RAPPOR,
    ``detected``, ``false_positives``, ``false_negatives``, ``allocated_mass``.

    Examples
    --------
    >>> from ldp.simulations import run, summarize
    >>> summary = summarize(run(mechanisms="grr,oue", epsilons=[1.0], users=[5_000], domain_size=8, repeats=2, seed=1))
    >>> summary["mechanism"].tolist()
    ['grr', 'oue']
    """
    grouped = results.groupby(_GROUP, sort=False)
    means = grouped[
        [
            "mse",
            "theory_mse",
            "mse_ratio",
            "lower_bound",
            "mae",
            "max_error",
            "tv",
            "top_k_precision",
            "top_k_recall",
            "detected",
            "false_positives",
            "false_negatives",
            "allocated_mass",
        ]
    ].mean()
    table = means.reset_index()
    table.insert(
        len(_GROUP), "resolved", grouped["resolved"].agg(lambda s: ",".join(dict.fromkeys(s))).to_numpy()
    )
    table.insert(len(_GROUP) + 1, "repeats", grouped.size().to_numpy())
    table.insert(table.columns.get_loc("mse") + 1, "mse_sd", grouped["mse"].std(ddof=1).to_numpy())
    table.insert(table.columns.get_loc("mse_sd") + 1, "rmse", np.sqrt(table["mse"].to_numpy()))
    return table


def _task(mechanism: str, resolved: str) -> str:
    """``discovery`` for a heavy-hitter mechanism (it estimates only what it finds), else ``estimation``."""
    from ldp.simulations.mechanisms import MECHANISM_KINDS

    name = mechanism if mechanism != "auto" else str(resolved).split(",")[0]
    return "discovery" if MECHANISM_KINDS.get(name) == "heavy-hitter" else "estimation"


def _discovery(summary: pd.DataFrame) -> np.ndarray:
    return np.array(
        [_task(m, r) == "discovery" for m, r in zip(summary["mechanism"], summary["resolved"], strict=True)],
        dtype=bool,
    )


def found_nothing(summary: pd.DataFrame) -> pd.Series:
    """True for a heavy-hitter row that discovered no value in any repeat (its mean ``detected`` is 0)."""
    return pd.Series(_discovery(summary) & (summary["detected"].to_numpy() == 0), index=summary.index)


def missed_the_top(summary: pd.DataFrame) -> pd.Series:
    """True for a heavy-hitter row that discovered none of the true top k in any repeat (recall 0)."""
    return pd.Series(_discovery(summary) & (summary["top_k_recall"].to_numpy() == 0), index=summary.index)


def best_by_epsilon(summary: pd.DataFrame) -> pd.DataFrame:
    """The most accurate mechanism at each distribution × D × users × ε, per task.

    Only comparable rows are ranked against each other (the ``task``
    column):

    - ``estimation`` (the frequency oracles, and RAPPOR given candidates:
      every value of the domain is estimated) by the expected error
      (``theory_mse``) where theory exists, else by the measured MSE
      (RAPPOR), so that repeat noise does not pick the winner;
    - ``discovery`` (the heavy-hitter mechanisms, which estimate only the
      values they discover, so their MSE over the domain measures mostly
      what they missed, and is smallest for an empty output) by the recall
      of the true top k, then the precision, then the MSE. A row that found
      none of the true top k in any repeat (:func:`missed_the_top`; among
      them those that found nothing at all, :func:`found_nothing`) is not
      ranked: a cell where every heavy hitter missed has no discovery winner.

    An ``auto`` row competes like any other, except where the mechanism it
    resolved to is also listed by name (it duplicates that row).
    ``error_95`` is 1.96·√mse·users: the typical half-width of a 95 %
    interval on one value's count, in users.

    Examples
    --------
    >>> from ldp.simulations import best_by_epsilon, run, summarize
    >>> results = run(mechanisms="grr,oue", epsilons=[1.0, 8.0], users=[5_000], domain_size=32, repeats=2, seed=1)
    >>> best_by_epsilon(summarize(results))["epsilon"].tolist()
    [1.0, 8.0]
    """
    keys = ["distribution", "domain_size", "users", "epsilon"]
    listed = set(zip(*(summary[k] for k in keys), summary["mechanism"]))
    duplicate_auto = np.array(
        [
            mechanism == "auto" and (*cell, resolved) in listed
            for *cell, mechanism, resolved in zip(
                *(summary[k] for k in keys), summary["mechanism"], summary["resolved"]
            )
        ],
        dtype=bool,
    )
    tasks = pd.Series(
        [_task(m, r) for m, r in zip(summary["mechanism"], summary["resolved"], strict=True)],
        index=summary.index,
    )
    ranked = summary[~duplicate_auto & ~missed_the_top(summary).to_numpy()].assign(task=tasks)
    estimation = ranked[ranked["task"] == "estimation"]
    discovery = ranked[ranked["task"] == "discovery"]
    score = estimation["theory_mse"].fillna(estimation["mse"])
    winners = list(score.groupby([estimation[k] for k in keys], sort=False).idxmin().to_numpy())
    if len(discovery):  # best recall, then precision (NaN last), then the smallest MSE
        order = discovery.assign(_precision=discovery["top_k_precision"].fillna(-1.0)).sort_values(
            ["top_k_recall", "_precision", "mse"], ascending=[False, False, True], kind="stable"
        )
        winners += list(order.groupby(keys, sort=False).head(1).index)
    columns = [*keys, "task", "mechanism", "resolved", "rmse", "mse_ratio", "top_k_recall", "top_k_precision"]
    best = ranked.loc[winners, columns]
    cells = summary[keys].drop_duplicates().reset_index(drop=True).reset_index()  # the cells in summary order
    best = best.merge(cells, on=keys).sort_values(["index", "task"], ascending=[True, False], kind="stable")
    best = best.drop(columns="index").reset_index(drop=True)
    best["error_95"] = 1.96 * best["rmse"] * best["users"]
    return best


def with_central_epsilon(summary: pd.DataFrame, delta: float) -> pd.DataFrame:
    """``summary`` with a ``central_epsilon`` column: the central ε of each row's ``users`` shuffled reports at ``delta``.

    The smallest bound of :func:`ldp.privacy.shuffle.shuffle_bounds` for the
    row's mechanism at its ε (with the spec's own clone split where it has one,
    GRR; RAPPOR rows use the general bound at their per-report ε).
    """
    from ldp.privacy.shuffle import shuffle_bounds
    from ldp.simulations.mechanisms import mechanism_kind
    from ldp.specs import frequency_spec

    values = []
    for row in summary.itertuples(index=False):
        users, epsilon = int(row.users), float(row.epsilon)
        resolved = str(row.resolved).split(",")[0]
        spec = None
        if mechanism_kind(resolved) != "rappor":
            spec = frequency_spec(resolved, tuple(range(int(row.domain_size))), epsilon)
            epsilon = float(spec.epsilon)
        values.append(shuffle_bounds(epsilon, users, delta, spec=spec)[-1].epsilon)
    return summary.assign(central_epsilon=values)


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3g}"


def format_report(summary: pd.DataFrame) -> str:
    """Human-readable text: the per-cell table, then the best mechanism per ε.

    Examples
    --------
    >>> from ldp.simulations import format_report, run, summarize
    >>> results = run(mechanisms="grr", epsilons=[1.0], users=[5_000], domain_size=8, repeats=2, seed=1)
    >>> print(format_report(summarize(results)).splitlines()[0])
    zipf(1.1) over 8 values, 5,000 users (2 repeats)
    """
    has_rappor = summary["detected"].notna().any()
    lines = []
    for (distribution, d, n), block in summary.groupby(["distribution", "domain_size", "users"], sort=False):
        lines.append(f"{distribution} over {d} values, {n:,} users ({int(block['repeats'].iloc[0])} repeats)")
        shown = pd.DataFrame(
            {
                "mechanism": [
                    m if r == m or m != "auto" else f"auto={r}"
                    for m, r in zip(block["mechanism"], block["resolved"])
                ],
                "epsilon": block["epsilon"].map(lambda e: f"{e:g}"),
                "rmse": block["rmse"].map(_fmt),
                "mse": block["mse"].map(_fmt),
                "±sd": block["mse_sd"].map(_fmt),
                "theory": block["theory_mse"].map(_fmt),
                "ratio": block["mse_ratio"].map(lambda x: "-" if math.isnan(x) else f"{x:.2f}"),
                "bound": block["lower_bound"].map(_fmt),
                "tv": block["tv"].map(_fmt),
                "top-k prec": [
                    "none found" if nothing else f"{x:.2f}"
                    for x, nothing in zip(block["top_k_precision"], found_nothing(block), strict=True)
                ],
            }
        )
        if "central_epsilon" in block:
            shown["central eps"] = block["central_epsilon"].map(_fmt)
        if has_rappor:  # detection (RAPPOR, heavy hitters): the recall of the top k too
            shown["top-k rec"] = block["top_k_recall"].map(lambda x: f"{x:.2f}")
            shown["detected"] = block["detected"].map(_fmt)
            shown["fp"] = block["false_positives"].map(_fmt)
            shown["fn"] = block["false_negatives"].map(_fmt)
        lines.append(shown.to_string(index=False))
        lines.append("")
    best = best_by_epsilon(summary)
    lines.append(
        "Best mechanism per epsilon (estimation: smallest expected MSE, ±95% is the error on one value's "
        "count, in users; heavy hitters: best top-k recall, then precision):"
    )
    for _, row in best.iterrows():
        name = row["mechanism"] if row["mechanism"] != "auto" else f"auto={row['resolved']}"
        cell = f"  {row['distribution']}, D={row['domain_size']}, n={row['users']:,}, epsilon={row['epsilon']:g}: "
        if row["task"] == "discovery":
            lines.append(
                f"{cell}{name}  heavy hitters: top-k recall {row['top_k_recall']:.2f}, "
                f"precision {row['top_k_precision']:.2f}"
            )
        else:
            lines.append(f"{cell}{name}  rmse {row['rmse']:.3g}  (±{row['error_95']:,.0f} users)")
    nothing = found_nothing(summary)
    for index, row in summary[missed_the_top(summary)].iterrows():
        repeats = int(row["repeats"])
        where = f"in {repeats} repeat" if repeats == 1 else f"in any of {repeats} repeats"
        what = (
            f"nothing {where}"
            if nothing[index]
            else f"none of the true top k {where} ({row['detected']:.3g} false discoveries on average)"
        )
        lines.append(
            f"  {row['distribution']}, D={row['domain_size']}, n={row['users']:,}, epsilon={row['epsilon']:g}: "
            f"{row['mechanism']} found {what}: not ranked"
        )
    lines.append(
        "mse/theory/bound: per-value mean squared error of the frequency estimates; ratio = mse/theory."
    )
    return "\n".join(lines)
