"""Every client encode charges the per-client ledger; a refused encode emits nothing."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.client import make_encoder
from ldp.client.cli import EXIT_REFUSED, ledger_path
from ldp.errors import BudgetExceededError, ParameterError, StateError
from ldp.privacy.budget import Budget, PrivacyLedger

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=0.5)
RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4")


def test_each_encode_charges_and_the_refused_one_emits_nothing(tmp_path):
    path = tmp_path / "ledger.json"
    encoder = make_encoder(GRR, ledger=path, budget=Budget(epsilon=1.5))
    reports = [encoder.encode("a") for _ in range(3)]
    assert all(r.spec == GRR.fingerprint for r in reports)
    assert encoder.spent == pytest.approx(1.5) and encoder.remaining == 0.0
    before = path.read_bytes()
    with pytest.raises(BudgetExceededError):
        encoder.encode("b")
    assert path.read_bytes() == before


def test_budget_survives_a_restart(tmp_path):
    path = tmp_path / "ledger.json"
    make_encoder(GRR, ledger=path, budget=Budget(epsilon=1.0)).encode("a")
    again = make_encoder(GRR, ledger=path)  # the budget is read from the ledger file
    assert again.spent == pytest.approx(0.5)
    again.encode("c")
    with pytest.raises(BudgetExceededError):
        make_encoder(GRR, ledger=path).encode("a")
    with pytest.raises(StateError):
        make_encoder(GRR, ledger=path, budget=Budget(epsilon=9.0))  # a budget is never changed silently


def test_invalid_value_is_not_charged():
    ledger = PrivacyLedger.in_memory(Budget(epsilon=1.0))
    encoder = make_encoder(GRR, ledger=ledger)
    with pytest.raises(ParameterError):
        encoder.encode("not-in-domain")
    assert ledger.spent == 0.0 and not ledger.streams


def test_memoized_rappor_refusal_does_not_reveal_a_changed_value(tmp_path):
    budget = Budget(epsilon=RAPPOR.epsilon_inf + RAPPOR.epsilon_one / 2)
    sent = {}
    for name, values in {"same": ["same-value"] * 50, "changing": ["a", "b"] * 25}.items():
        encoder = make_encoder(
            RAPPOR, state=tmp_path / f"{name}.json", ledger=tmp_path / f"{name}.ledger.json", budget=budget
        )
        reports = []
        for value in values:
            try:
                reports.append(encoder.encode(value))
            except BudgetExceededError:
                break
        sent[name] = (len(reports), encoder.committed, encoder.spent)
    allowed = int(budget.epsilon // RAPPOR.epsilon_one)
    assert sent["same"][0] == sent["changing"][0] == allowed
    assert (
        sent["same"][1] == pytest.approx(sent["changing"][1]) == pytest.approx(allowed * RAPPOR.epsilon_one)
    )
    assert sent["same"][2] == pytest.approx(min(allowed * RAPPOR.epsilon_one, RAPPOR.epsilon_inf))


def test_budget_without_ledger_is_an_error():
    with pytest.raises(ParameterError, match="ledger"):
        make_encoder(GRR, budget=Budget(epsilon=1.0))


def test_cli_budget_refuses_rows_per_client(tmp_path):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n1,a\n1,b\n1,c\n2,a\n1,a\n")
    out, states = tmp_path / "reports.jsonl", tmp_path / "states"
    args = [
        "encode",
        "--spec",
        str(spec_path),
        str(users),
        "--state",
        str(states),
        "--budget",
        "1",
        "-o",
        str(out),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == EXIT_REFUSED, result.output
    assert "2 rows refused" in result.output and "rows 3, 5" in result.output
    assert len(out.read_text().splitlines()) == 3  # client 1: two reports of ε=0.5; client 2: one
    for client, spent in (("1", 1.0), ("2", 0.5)):
        path = ledger_path(states, client)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert PrivacyLedger.load(path).spent == pytest.approx(spent)
    # Run again: client 1 is out of budget, client 2 has room for one more report.
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == EXIT_REFUSED
    assert len(out.read_text().splitlines()) == 1


def test_cli_budget_needs_state(tmp_path):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    users = tmp_path / "users.txt"
    users.write_text("a\n")
    result = CliRunner().invoke(cli, ["encode", "--spec", str(spec_path), str(users), "--budget", "1"])
    assert result.exit_code == 2 and "--budget needs --state" in result.output
