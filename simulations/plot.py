"""Error versus ε on log scales (one line per mechanism, dashed theory, dotted lower bound); error and lifetime ε versus round.

matplotlib is imported only when a plot is drawn (``pip install 'ldp-telemetry[plot]'``),
through its object API (no global pyplot state).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ldp.errors import ParameterError

__all__ = ["plot_results", "plot_rounds"]


def _figure(panels: int):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ParameterError("plotting needs matplotlib: pip install 'ldp-telemetry[plot]'") from None
    columns = min(panels, 3)
    rows = -(-panels // columns)
    figure = Figure(figsize=(5.2 * columns, 4.2 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes


def plot_results(results: pd.DataFrame, path: str | Path, *, metric: str = "mse") -> Path:
    """Draw ``metric`` (mean over repeats) against ε, one panel per distribution × D × users.

    Parameters
    ----------
    results : pandas.DataFrame
        The output of :func:`ldp.simulations.run`.
    path : str or Path
        Image file; the format follows the extension (``.png``, ``.svg``, ``.pdf``).
    metric : str
        A numeric results column; ``mse`` also draws ``theory_mse`` (dashed)
        and ``lower_bound`` (dotted).

    Returns
    -------
    Path
    """
    if metric not in results.columns:
        raise ParameterError(f"cannot plot {metric!r}: not a results column")
    if results.empty:
        raise ParameterError("no results to plot")
    keys = ["distribution", "domain_size", "users"]
    groups = list(results.groupby(keys, sort=False))
    figure, axes = _figure(len(groups))
    for ax, ((distribution, d, n), block) in zip(axes, groups):
        means = block.groupby(["mechanism", "epsilon"], sort=False)[
            [metric, "theory_mse", "lower_bound"]
        ].mean()
        for i, mechanism in enumerate(dict.fromkeys(block["mechanism"])):
            line = means.loc[mechanism].sort_index()
            color = f"C{i % 10}"
            ax.plot(line.index, line[metric], marker="o", color=color, label=mechanism)
            if metric == "mse" and line["theory_mse"].notna().any():
                ax.plot(line.index, line["theory_mse"], linestyle="--", color=color, alpha=0.7)
        if metric == "mse":
            bound = means["lower_bound"].groupby(level="epsilon").mean().sort_index()
            ax.plot(bound.index, bound.to_numpy(), linestyle=":", color="black", label="LDP lower bound")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted(block["epsilon"].unique())
        ax.set_xticks(ticks, [f"{e:g}" for e in ticks])
        ax.set_xticks([], minor=True)
        ax.set_xlabel("ε")
        ax.set_ylabel(f"{metric} per value (frequency scale)")
        ax.set_title(f"{distribution}, D={d}, n={n:,}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(
            fontsize="small", title="dashed: theory" if metric == "mse" else None, title_fontsize="small"
        )
    path = Path(path)
    try:
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot write plot {str(path)!r}: {exc}") from None
    return path


def plot_rounds(results: pd.DataFrame, path: str | Path) -> Path:
    """Two panels against the round: the MSE (solid; dashed: theory), and the lifetime ε (solid: median; dotted: max).

    Parameters
    ----------
    results : pandas.DataFrame
        The output of :func:`ldp.simulations.run_rounds`.
    path : str or Path
        Image file; the format follows the extension.

    Returns
    -------
    Path
    """
    needed = {"mechanism", "round", "mse", "theory_mse", "lifetime_median", "lifetime_max", "budget"}
    missing = sorted(needed - set(results.columns))
    if missing:
        raise ParameterError(f"cannot plot rounds: no column {', '.join(missing)} (give run_rounds' output)")
    if results.empty:
        raise ParameterError("no results to plot")
    figure, (error_ax, life_ax) = _figure(2)
    for i, (mechanism, block) in enumerate(results.groupby("mechanism", sort=False)):
        block = block.sort_values("round")
        color = f"C{i % 10}"
        error_ax.plot(block["round"], block["mse"], marker=".", color=color, label=mechanism)
        if block["theory_mse"].notna().any():
            error_ax.plot(block["round"], block["theory_mse"], linestyle="--", color=color, alpha=0.7)
        life_ax.plot(block["round"], block["lifetime_median"], color=color, label=mechanism)
        life_ax.plot(block["round"], block["lifetime_max"], linestyle=":", color=color)
    budget = results["budget"].dropna()
    if not budget.empty:
        life_ax.axhline(float(budget.iloc[0]), color="black", linewidth=0.8, label="budget")
    error_ax.set_yscale("log")
    error_ax.set_xlabel("round")
    error_ax.set_ylabel("mse per value (frequency scale)")
    error_ax.set_title("error per round (dashed: theory)")
    life_ax.set_xlabel("round")
    life_ax.set_ylabel("lifetime ε per user")
    life_ax.set_title("lifetime ε (solid: median, dotted: max)")
    for ax in (error_ax, life_ax):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    path = Path(path)
    try:
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot write plot {str(path)!r}: {exc}") from None
    return path
