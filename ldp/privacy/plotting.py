"""Plots of trade-off curves (matplotlib is imported only when a plot is drawn)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = ["plot_tradeoffs"]


def plot_tradeoffs(
    curves: Mapping[str, Callable[[np.ndarray], Any]],
    *,
    ax=None,
    path=None,
    points: int = 1001,
    title: str | None = None,
):
    """Draw trade-off functions β = f(α) on one axes, with the diagonal 1 − α.

    Parameters
    ----------
    curves : mapping of label -> TradeoffFunction
    ax : matplotlib Axes, optional
        Drawn on a new figure when omitted.
    path : str or Path, optional
        Save the figure there (format from the extension).
    points : int
        α grid size (piecewise-linear curves also get their vertices).
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy".
       JRSS-B 84(1), 2022, Figure 1 (the same axes).
    """
    import matplotlib

    if ax is None and path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(5.5, 5.5))
    grid = np.linspace(0.0, 1.0, points)
    ax.plot(grid, 1 - grid, color="0.7", linestyle=":", label="perfect privacy (1 - alpha)")
    for label, curve in curves.items():
        alpha = grid
        vertices = getattr(curve, "alpha", None)
        if vertices is not None and np.size(vertices) <= 20 * points:
            alpha = np.union1d(grid, vertices)
        ax.plot(alpha, curve(alpha), label=label)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("type I error alpha")
    ax.set_ylabel("type II error beta")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small", loc="upper right")
    if path is not None:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax
