"""The table ``ldp simulate`` prints: metrics averaged over repeats, and the best mechanism per ε.

Pure pandas on the results of :func:`ldp.simulations.run`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["best_by_epsilon", "format_report", "summarize"]

_GROUP = ["distribution", "domain_size", "users", "mechanism", "epsilon"]


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """One row per distribution × D × users × mechanism × ε: means over repeats and the MSE spread.

    Columns: the group keys, ``resolved`` (what ``auto`` chose), ``repeats``,
    ``mse`` (mean), ``mse_sd`` (standard deviation over repeats, NaN for one
    repeat), ``rmse`` (√mse: the typical error of one frequency),
    ``theory_mse``, ``mse_ratio``, ``lower_bound``, ``mae``, ``max_error``,
    ``tv``, ``top_k_precision``, ``top_k_recall`` and, for RAPPOR,
    ``detected``, ``false_positives``, ``false_negatives``, ``allocated_mass``.
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


def best_by_epsilon(summary: pd.DataFrame) -> pd.DataFrame:
    """The most accurate mechanism at each distribution × D × users × ε.

    Ranked by the expected error (``theory_mse``) where theory exists, else
    by the measured MSE (RAPPOR), so that repeat noise does not pick the
    winner. An ``auto`` row competes like any other, except where the
    mechanism it resolved to is also listed by name (it duplicates that row).
    ``error_95`` is 1.96·√mse·users: the typical half-width of a 95 %
    interval on one value's count, in users.
    """
    keys = ["distribution", "domain_size", "users", "epsilon"]
    listed = set(zip(*(summary[k] for k in keys), summary["mechanism"]))
    duplicate_auto = [
        mechanism == "auto" and (*cell, resolved) in listed
        for *cell, mechanism, resolved in zip(
            *(summary[k] for k in keys), summary["mechanism"], summary["resolved"]
        )
    ]
    ranked = summary[~np.array(duplicate_auto, dtype=bool)]
    score = ranked["theory_mse"].fillna(ranked["mse"])
    index = score.groupby([ranked[k] for k in keys], sort=False).idxmin()
    best = summary.loc[index.to_numpy(), [*keys, "mechanism", "resolved", "rmse", "mse_ratio"]].reset_index(
        drop=True
    )
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
    """Human-readable text: the per-cell table, then the best mechanism per ε."""
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
                "top-k prec": block["top_k_precision"].map(lambda x: f"{x:.2f}"),
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
        "Best mechanism per epsilon (smallest expected MSE; ±95% is the error on one value's count, in users):"
    )
    for _, row in best.iterrows():
        name = row["mechanism"] if row["mechanism"] != "auto" else f"auto={row['resolved']}"
        lines.append(
            f"  {row['distribution']}, D={row['domain_size']}, n={row['users']:,}, epsilon={row['epsilon']:g}: "
            f"{name}  rmse {row['rmse']:.3g}  (±{row['error_95']:,.0f} users)"
        )
    lines.append(
        "mse/theory/bound: per-value mean squared error of the frequency estimates; ratio = mse/theory."
    )
    return "\n".join(lines)
