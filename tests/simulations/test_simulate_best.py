"""The "best mechanism per ε" of ``ldp simulate``: ``auto`` competes like any other mechanism; heavy hitters only among themselves."""

from __future__ import annotations

import pytest

from ldp.simulations import run
from ldp.simulations.numeric import format_numeric_report, run_numeric, summarize_numeric
from ldp.simulations.summary import best_by_epsilon, format_report, summarize


def _best(mechanisms, epsilons):
    results = run(mechanisms, epsilons, 10_000, 64, repeats=1, seed=1)
    best = best_by_epsilon(summarize(results))
    return {row.epsilon: (row.mechanism, row.resolved) for row in best.itertuples()}


def test_auto_wins_when_its_choice_is_not_listed():
    # at ε = 1 over 64 values subset selection's variance is ~6x below GRR's: auto resolves to ss and must be named best
    assert _best("grr,auto", [1.0]) == {1.0: ("auto", "ss")}


def test_auto_does_not_duplicate_a_listed_mechanism():
    assert _best("grr,ss,auto", [1.0, 8.0]) == {1.0: ("ss", "ss"), 8.0: ("grr", "grr")}


def test_numeric_auto_competes():
    results = run_numeric(
        "duchi,auto", [1.0], 10_000, distribution="uniform", low=0, high=100, repeats=1, seed=1
    )
    report = format_numeric_report(summarize_numeric(results))
    assert "epsilon=1: hybrid" in report


# -- heavy hitters are ranked only against heavy hitters, and one that found nothing is not ranked ---------


def _summary(rows):
    """A summary table (the columns format_report reads) of one cell: zipf over 1,000 values, 20,000 users, ε = 1."""
    import math

    import numpy as np
    import pandas as pd

    frame = pd.DataFrame(
        rows, columns=["mechanism", "mse", "theory_mse", "top_k_recall", "top_k_precision", "detected"]
    )
    frame.insert(0, "distribution", "zipf(1.1)")
    frame.insert(1, "domain_size", 1000)
    frame.insert(2, "users", 20_000)
    frame.insert(4, "epsilon", 1.0)
    frame.insert(5, "resolved", frame["mechanism"])
    frame.insert(6, "repeats", 1)
    frame["mse_sd"] = math.nan
    frame["rmse"] = np.sqrt(frame["mse"])
    frame["mse_ratio"] = frame["mse"] / frame["theory_mse"]
    for name in ("lower_bound", "tv", "false_positives", "false_negatives", "allocated_mass"):
        frame[name] = math.nan
    return frame


NAN = float("nan")


def test_a_heavy_hitter_that_found_nothing_is_not_recommended():
    """Issue 24: an empty output's small MSE (undiscovered values estimate 0) does not make it the best."""
    summary = _summary(
        [
            ("olh", 1.71e-4, 1.85e-4, 0.3, 0.3, NAN),
            ("treehist", 4.91e-5, NAN, 0.0, NAN, 0.0),  # found nothing: precision undefined, recall 0
        ]
    )
    best = best_by_epsilon(summary)
    assert best[["task", "mechanism"]].values.tolist() == [["estimation", "olh"]]
    report = format_report(summary)
    assert "treehist found nothing in 1 repeat: not ranked" in report
    assert "none found" in report  # its precision in the table


def test_heavy_hitters_compete_on_recall_among_themselves():
    summary = _summary(
        [
            ("olh", 1.71e-4, 1.85e-4, 0.3, 0.3, NAN),
            ("pem", 2.0e-5, NAN, 0.4, 0.4, 10.0),  # the smallest MSE of all, but not comparable with olh's
            ("treehist", 3.0e-5, NAN, 0.6, 1.0, 6.0),  # the better discovery
        ]
    )
    best = best_by_epsilon(summary)
    assert best[["task", "mechanism"]].values.tolist() == [["estimation", "olh"], ["discovery", "treehist"]]
    assert "epsilon=1: treehist  heavy hitters: top-k recall 0.60, precision 1.00" in format_report(summary)


def test_a_heavy_hitter_that_found_only_false_values_is_not_recommended():
    summary = _summary([("olh", 1.71e-4, 1.85e-4, 0.3, 0.3, NAN), ("pem", 1.0e-5, NAN, 0.0, 0.0, 4.0)])
    assert best_by_epsilon(summary)["mechanism"].tolist() == ["olh"]
    report = format_report(summary)
    assert (
        "pem found none of the true top k in 1 repeat (4 false discoveries on average): not ranked" in report
    )


@pytest.mark.slow
def test_treehist_finding_nothing_on_a_simulated_population_is_not_recommended():
    """The simulated case: TreeHist at ε = 1 on Zipf(1.1) over 1,000 values outputs nothing (seed 1)."""
    summary = summarize(run("olh,treehist", [1.0], 20_000, 1000, repeats=1, seed=1))
    treehist = summary[summary["mechanism"] == "treehist"].iloc[0]
    assert treehist["detected"] == 0 and treehist["mse"] < summary["theory_mse"].min()  # the old trap
    assert best_by_epsilon(summary)["mechanism"].tolist() == ["olh"]


# -- the results table both runners build --------------------------------------------------------------


def test_results_frame_has_exactly_the_columns_in_order_and_nan_for_what_no_record_has():
    """run and run_rounds build their tables with one helper: the declared columns, in order, NaN if absent."""
    import math

    from ldp.simulations import RESULT_COLUMNS, ROUND_COLUMNS, run, run_rounds
    from ldp.simulations.summary import results_frame

    frame = results_frame(
        [{"mse": 0.5, "mechanism": "grr", "extra": 1}, {"mechanism": "oue"}], ["mechanism", "mse", "tv"]
    )
    assert frame.columns.tolist() == ["mechanism", "mse", "tv"]
    assert (
        frame["mechanism"].tolist() == ["grr", "oue"]
        and frame["tv"].isna().all()
        and math.isnan(frame["mse"][1])
    )
    assert results_frame([], ["mse"]).columns.tolist() == ["mse"]
    assert run("grr", [1.0], 500, 4, repeats=1, seed=1).columns.tolist() == list(RESULT_COLUMNS)
    rounds = run_rounds("grr", rounds=2, users=300, domain_size=4, budget=2.0, seed=1)
    assert rounds.columns.tolist() == list(ROUND_COLUMNS)
