"""The error hierarchy (ldp.errors): each public entry point raises its specific class.

The specific classes were split out of :class:`ParameterError`, so each
check also asserts that the error is still what an ``except ParameterError``
(or ``except LDPError``) caught before.
"""

from __future__ import annotations

import pytest

from ldp.aggregator import make_aggregator
from ldp.aggregator.io import check_paths
from ldp.aggregator.rappor.counts import check_counts
from ldp.client import make_encoder
from ldp.client.upload_envelopes import read_reports
from ldp.collector.accumulate import StoreIntegrityError
from ldp.collector.store import (
    StoreOpenError,
    StoreUnavailable,
    TaskExistsError,
    UnknownTaskError,
    open_store,
)
from ldp.collector.tasks import new_task
from ldp.errors import (
    AccountingError,
    BudgetError,
    BudgetExceededError,
    EstimateError,
    InputError,
    LDPError,
    ParameterError,
    ReportError,
    SpecError,
    StateError,
    StoreError,
    recast,
)
from ldp.privacy import Budget
from ldp.privacy.shuffle import general_reduction
from ldp.report import Report
from ldp.specs import load_spec
from ldp.values_file import read_column

GRR = {"mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"]}


@pytest.mark.parametrize(
    "kind, bases",
    [
        (ParameterError, (LDPError, ValueError)),
        (SpecError, (ParameterError,)),
        (InputError, (ParameterError,)),
        (AccountingError, (ParameterError,)),
        (EstimateError, (ParameterError,)),
        (ReportError, (LDPError, ValueError)),
        (StateError, (LDPError,)),
        (BudgetError, (LDPError,)),
        (BudgetExceededError, (BudgetError,)),
        (StoreError, (LDPError,)),
        (StoreUnavailable, (StoreError,)),
        (StoreIntegrityError, (StoreError,)),
        (UnknownTaskError, (StoreError, ParameterError)),
        (StoreOpenError, (StoreError, ParameterError)),
        (TaskExistsError, (StoreError, ParameterError)),
    ],
)
def test_the_hierarchy(kind, bases):
    assert all(issubclass(kind, base) for base in bases)
    assert issubclass(kind, LDPError)


def test_the_classes_that_were_no_parameter_errors_are_still_none():
    # a caller's `except ParameterError` must not start catching what it did not catch
    for kind in (ReportError, StateError, BudgetError, StoreUnavailable, StoreIntegrityError):
        assert not issubclass(kind, ParameterError)


@pytest.mark.parametrize(
    "spec, match",
    [
        ({**GRR, "epsilon": -1}, "epsilon must be"),
        ({**GRR, "domain": ["a"]}, "at least 2 values"),
        ({**GRR, "domain": ["a", "a"]}, "duplicate"),
        ({"mechanism": "oue", "epsilon": 1, "domain": ["a", "b"], "p": 0.5}, "give both p and q"),
        ({"mechanism": "duchi", "epsilon": 1, "low": 2, "high": 1}, "low < high"),
        ({"mechanism": "laplace", "epsilon": 1, "low": 0, "high": 1, "grid": 0}, "grid must be"),
        ({"mechanism": "rappor", "f": 0.5, "p": 0.75, "q": 0.25, "num_bits": 8, "num_hashes": 2}, "p < q"),
        ({"mechanism": "pem", "epsilon": 2, "max_length": 0}, "max_length"),
        ({**GRR, "colour": "red"}, "unknown fields"),
        ({"mechanism": "nope"}, "unknown mechanism"),
        ({"epsilon": 1}, "no 'mechanism'"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_bad_spec_is_a_spec_error(spec, match):
    with pytest.raises(SpecError, match=match):
        load_spec(spec)


def test_a_spec_error_from_a_shared_check_keeps_its_message():
    # check_epsilon raises the general class; building a spec recasts it, nothing else changes
    with pytest.raises(SpecError) as caught:
        load_spec({**GRR, "epsilon": float("inf")})
    assert str(caught.value) == "epsilon must be a finite number > 0, got inf"


@pytest.mark.parametrize("field", ["epsilon", "epsilon_inf"])
def test_a_boolean_epsilon_is_refused_not_read_as_one(field):
    # check_epsilon read JSON true as ε = 1.0 (bool is an int); the TypeScript client refuses it
    data = {"mechanism": "loloha", "domain": ["a", "b", "c"], "epsilon": 0.5, "epsilon_inf": 2.0, field: True}
    with pytest.raises(SpecError) as caught:
        load_spec(data)
    assert str(caught.value) == f"{field} must be a number, got the boolean True"


def test_recast_keeps_the_template_and_parameters():
    error = ParameterError.naming("{workers=} is too many", workers=9)
    spec_error = recast(error, SpecError)
    assert type(spec_error) is SpecError and str(spec_error) == str(error)
    assert spec_error.render(lambda name, value: f"--{name} {value}") == "--workers 9 is too many"


@pytest.mark.parametrize(
    "spec, value, match",
    [
        (GRR, "zz", "not in the domain"),
        (GRR, True, "is a boolean"),
        ({"mechanism": "oue", "epsilon": 1, "domain": [1, 2]}, 3, "not in the domain"),
        ({"mechanism": "duchi", "epsilon": 1, "low": 0, "high": 1}, "12", "must be a number"),
        ({"mechanism": "piecewise", "epsilon": 1, "low": 0, "high": 1}, float("nan"), "finite"),
        (
            {
                "mechanism": "rappor",
                "encoding": "basic",
                "domain": ["a", "b"],
                "f": 0.5,
                "p": 0.25,
                "q": 0.75,
            },
            "c",
            "domain",
        ),
        ({"mechanism": "pem", "epsilon": 2, "max_length": 2}, 1.5, "values are strings"),
        ({"mechanism": "pem", "epsilon": 2, "max_length": 2}, "abc", "above max_length"),
        ({"mechanism": "cms", "epsilon": 1, "domain": ["a", "b"]}, None, "must not be None"),
    ],
)
def test_a_value_the_encoder_cannot_encode_is_an_input_error(spec, value, match):
    encoder = make_encoder(load_spec(spec))
    with pytest.raises(InputError, match=match):
        encoder.encode(value)


def test_an_unreadable_values_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_column(tmp_path / "missing.csv", "value")
    table = tmp_path / "values.csv"
    table.write_text("value\na\n", encoding="utf-8")
    with pytest.raises(InputError, match="no column 'browser'"):
        read_column(table, "browser")


def test_a_malformed_report_is_a_report_error_as_before():
    with pytest.raises(ReportError):
        Report.from_dict({"v": 1, "spec": "0" * 16, "value": 1.0, "group": "a"})


def test_an_estimate_without_reports_is_an_estimate_error():
    for spec in (GRR, {"mechanism": "hr", "epsilon": 1, "domain": ["a", "b"]}):
        with pytest.raises(EstimateError, match="zero reports"):
            make_aggregator(load_spec(spec)).estimate()


def test_counts_that_do_not_fit_the_spec_are_an_input_error():
    spec = load_spec(GRR)
    with pytest.raises(InputError, match="shape"):
        type(make_aggregator(spec)).from_counts(spec, [1, 2], 3)


def test_an_exceeded_budget_is_a_budget_error(tmp_path):
    encoder = make_encoder(load_spec(GRR), ledger=tmp_path / "ledger.json", budget=Budget(epsilon=1.0))
    encoder.encode("a")
    with pytest.raises(BudgetError) as caught:
        encoder.encode("a")
    assert isinstance(caught.value, BudgetExceededError)


@pytest.mark.parametrize(
    "ask, match",
    [
        (lambda: Budget(epsilon=-1.0), "budget epsilon"),
        (lambda: Budget(epsilon=1.0, delta=1.0), "budget delta"),
        (lambda: general_reduction(1.0, 1), "users must be"),
    ],
)
def test_a_refused_accounting_question_is_an_accounting_error(ask, match):
    with pytest.raises(AccountingError, match=match):
        ask()


def test_store_errors(tmp_path):
    with pytest.raises(StoreOpenError, match="not supported"):
        open_store("ftp://example.org/store")
    with pytest.raises(StoreOpenError, match="no such file"):
        open_store(tmp_path / "missing.db", read_only=True)
    task, _token = new_task(load_spec(GRR))
    with open_store(tmp_path / "store.db") as store:
        store.create_task(task)
        with pytest.raises(TaskExistsError, match="already exists"):
            store.create_task(task)


def test_a_missing_report_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        check_paths([tmp_path / "reports.jsonl"])


def test_rappor_counts_that_do_not_fit_the_spec_are_an_input_error():
    spec = load_spec({"mechanism": "rappor", "f": 0.5, "p": 0.25, "q": 0.75, "num_bits": 8, "num_hashes": 2})
    with pytest.raises(InputError, match="cohort_counts must have shape"):
        check_counts(spec, [1, 2, 3], [[0] * 8])
    with pytest.raises(SpecError, match="needs a Rappor spec"):
        check_counts(load_spec(GRR), [1], [[0]])


def test_a_missing_reports_file_to_upload_is_an_input_error_that_names_its_parameter(tmp_path):
    missing = str(tmp_path / "reports.jsonl")
    with pytest.raises(InputError, match="does not exist") as caught:
        read_reports(missing)
    assert caught.value.parameters == {"reports_path": missing}  # the CLI still spells it its own way
