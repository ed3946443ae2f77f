"""The "best mechanism per ε" recommendation of ``ldp simulate`` counts ``auto`` like any other mechanism."""

from __future__ import annotations

from ldp.simulations import run
from ldp.simulations.numeric import format_numeric_report, run_numeric, summarize_numeric
from ldp.simulations.summary import best_by_epsilon, summarize


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
