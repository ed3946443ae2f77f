"""The RAPPOR decode's result: the per-candidate table and the fit's summary.

Estimates are on the count scale (number of reports); ``detected`` is a
significant adjusted p-value (:mod:`ldp.aggregator.multiple_testing`) and a
positive estimate (docs/mechanisms.md#rappor-decoding).

References
----------
.. [1] google/rappor, analysis/R/decode.R (Decode: the result table and the
   allocated mass).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ldp.aggregator.multiple_testing import adjust_p_values, check_options

__all__ = ["DECODE_COLUMNS", "DecodeOptions", "FitSummary", "RapporDecodeResult", "decode_table", "finish"]

#: Columns of the decoded table, in order.
DECODE_COLUMNS = ("value", "estimate", "std_error", "ci_low", "ci_high", "proportion", "p_value", "detected")


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """How a decode tests and reports: checked by :meth:`checked`.

    Attributes
    ----------
    alpha : float
        Family-wise (Bonferroni) or false-discovery (BH) level, or the level
        of each test (``"none"``).
    correction : str
        Canonical name, one of :data:`ldp.aggregator.multiple_testing.CORRECTIONS`.
    confidence : float
        Level of the ``ci_low``/``ci_high`` intervals.
    """

    alpha: float
    correction: str
    confidence: float

    @classmethod
    def checked(cls, alpha: float, correction: str, confidence: float) -> DecodeOptions:
        """The options, validated, with the correction's canonical name (raises ParameterError)."""
        return cls(alpha, check_options(alpha, correction, confidence), confidence)


@dataclasses.dataclass(frozen=True)
class RapporDecodeResult:
    """Everything a decode produces.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per candidate (columns :data:`DECODE_COLUMNS`).
    num_reports : int
        N, the total number of reports.
    allocated_mass : float
        Sum of the proportions of the detected candidates (google/rappor's
        "allocated mass").
    explained_mass : float
        Sum of the proportions of all candidates (detected or not).
    unexplained_mass, unexplained_mass_se : float
        Estimated proportion of reports whose value is not among the
        candidates (from the background term; NaN when not modelled) and its
        standard error.
    residual : numpy.ndarray
        (m, k) unexplained residual ``t_ij − fitted_ij`` on the count scale
        (0 for cohorts without reports).
    residual_chi2, residual_dof : float, int
        Weighted residual sum of squares of the unconstrained WLS fit used
        for the tests, and its degrees of freedom; about ``dof`` when the
        model explains the counts.
    dispersion : float
        ``max(1, χ²/dof)``, the factor applied to variances.
    screened : bool
        Whether the LASSO selection ran.
    num_selected : int
        Columns kept for the refit.
    alpha : float
        Family-wise (Bonferroni) or false-discovery (BH) level.
    correction : str
    """

    table: pd.DataFrame
    num_reports: int
    allocated_mass: float
    explained_mass: float
    unexplained_mass: float
    unexplained_mass_se: float
    residual: np.ndarray
    residual_chi2: float
    residual_dof: int
    dispersion: float
    screened: bool
    num_selected: int
    alpha: float
    correction: str

    def summary(self) -> dict[str, Any]:
        """Scalar summary (also stored in ``table.attrs``)."""
        return {
            "num_reports": self.num_reports,
            "num_candidates": len(self.table),
            "num_detected": int(self.table["detected"].sum()),
            "allocated_mass": self.allocated_mass,
            "explained_mass": self.explained_mass,
            "unexplained_mass": self.unexplained_mass,
            "unexplained_mass_se": self.unexplained_mass_se,
            "residual_chi2": self.residual_chi2,
            "residual_dof": self.residual_dof,
            "dispersion": self.dispersion,
            "screened": self.screened,
            "num_selected": self.num_selected,
            "alpha": self.alpha,
            "correction": self.correction,
        }


@dataclasses.dataclass(frozen=True)
class FitSummary:
    """The fit's part of a :class:`RapporDecodeResult` (same attributes)."""

    num_reports: int
    residual: np.ndarray
    num_selected: int
    unexplained_mass: float = math.nan
    unexplained_mass_se: float = math.nan
    residual_chi2: float = 0.0
    residual_dof: int = 0
    dispersion: float = 1.0
    screened: bool = False


def decode_table(
    values: Sequence[Any],
    estimate: np.ndarray,
    se: np.ndarray,
    p_values: np.ndarray,
    options: DecodeOptions,
    total: int,
) -> pd.DataFrame:
    """One row per candidate (columns :data:`DECODE_COLUMNS`), from count-scale estimates.

    ``detected`` is an adjusted p-value below α and a positive estimate; the
    interval is ``estimate ± z·se`` at ``options.confidence``; ``proportion``
    is ``estimate / total`` (NaN without reports).
    """
    adjusted = adjust_p_values(p_values, options.correction)
    detected = (adjusted < options.alpha) & (estimate > 0)
    import scipy.stats  # here: importing this module (collector/openapi.py reads DECODE_COLUMNS) costs no scipy.stats

    z = scipy.stats.norm.ppf(0.5 + options.confidence / 2)
    table = pd.DataFrame(
        {
            "value": list(values),
            "estimate": estimate,
            "std_error": se,
            "ci_low": estimate - z * se,
            "ci_high": estimate + z * se,
            "proportion": estimate / total if total > 0 else np.full(len(values), np.nan),
            "p_value": p_values,
            "detected": detected,
        },
        columns=list(DECODE_COLUMNS),
    )
    return table


def finish(table: pd.DataFrame, options: DecodeOptions, fit: FitSummary) -> RapporDecodeResult:
    """The result of ``table`` and ``fit``, with its summary copied into ``table.attrs``."""
    detected = table["detected"].to_numpy()
    result = RapporDecodeResult(
        table=table,
        allocated_mass=float(table["proportion"].to_numpy()[detected].sum()),
        explained_mass=float(table["proportion"].sum()),
        num_reports=fit.num_reports,
        unexplained_mass=fit.unexplained_mass,
        unexplained_mass_se=fit.unexplained_mass_se,
        residual=fit.residual,
        residual_chi2=fit.residual_chi2,
        residual_dof=fit.residual_dof,
        dispersion=fit.dispersion,
        screened=fit.screened,
        num_selected=fit.num_selected,
        alpha=options.alpha,
        correction=options.correction,
    )
    table.attrs.update(result.summary())
    return result
