"""Every client encode charges the per-client ledger; a refused encode emits nothing."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.client import BudgetedEncoder, make_encoder
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


def _encode_args(tmp_path, spec, rows: str, *extra: str) -> list[str]:
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(spec.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n" + rows)
    return ["encode", "--spec", str(spec_path), str(users), "--state", str(tmp_path / "states"), *extra]


@pytest.mark.parametrize(("spec", "value"), [(GRR, "a"), (RAPPOR, "v")], ids=["grr", "rappor"])
def test_cli_an_existing_ledger_is_charged_and_enforced_without_budget(tmp_path, spec, value):
    """Issue 24: once a client's ledger exists, runs without --budget are charged and refused by it."""
    cost = GRR.epsilon if spec is GRR else RAPPOR.epsilon_one
    args = _encode_args(tmp_path, spec, f"alice,{value}\n")
    first = CliRunner().invoke(cli, [*args, "--budget", repr(3 * cost), "-o", str(tmp_path / "r0.jsonl")])
    assert first.exit_code == 0, first.output
    ledger = ledger_path(tmp_path / "states", "alice")
    emitted = 1
    for run in (1, 2, 3):
        out = tmp_path / f"r{run}.jsonl"
        result = CliRunner().invoke(cli, [*args, "-o", str(out)])
        emitted += len(out.read_text().splitlines())
        if run < 3:
            assert result.exit_code == 0, result.output
            assert PrivacyLedger.load(ledger).committed == pytest.approx((run + 1) * cost)
        else:
            assert result.exit_code == EXIT_REFUSED, result.output
            assert "1 rows refused" in result.output
    assert emitted == 3
    assert PrivacyLedger.load(ledger).committed == pytest.approx(3 * cost)


def test_cli_another_budget_than_the_stored_one_is_refused(tmp_path):
    args = _encode_args(tmp_path, GRR, "alice,a\n")
    assert CliRunner().invoke(cli, [*args, "--budget", "1", "-o", str(tmp_path / "r0.jsonl")]).exit_code == 0
    ledger = ledger_path(tmp_path / "states", "alice")
    before = ledger.read_bytes()
    out = tmp_path / "r1.jsonl"
    result = CliRunner().invoke(cli, [*args, "--budget", "5", "-o", str(out)])
    assert result.exit_code == 2
    assert "holds the budget epsilon=1.0, not epsilon=5.0: a budget is set once" in result.output
    assert ledger.read_bytes() == before and not out.exists()
    # the stored budget, given again, is fine
    assert CliRunner().invoke(cli, [*args, "--budget", "1", "-o", str(out)]).exit_code == 0


def test_cli_a_ledger_created_by_another_process_during_a_run_is_charged_from_the_next_chunk(
    tmp_path, monkeypatch
):
    import ldp.client.cli as encode_cli

    args = _encode_args(tmp_path, GRR, "alice,a\nalice,b\nalice,c\nalice,a\n")
    ledger = ledger_path(tmp_path / "states", "alice")
    read_rows = encode_cli.read_rows

    def rows_then_a_ledger(*a, **k):
        for item in read_rows(*a, **k):
            if item[0] == 3:  # after the first chunk (rows 1 and 2) was encoded without a ledger
                PrivacyLedger.load_or_create(ledger, Budget(epsilon=0.5))
            yield item

    monkeypatch.setattr(encode_cli, "_CHUNK", 2)
    monkeypatch.setattr(encode_cli, "read_rows", rows_then_a_ledger)
    out = tmp_path / "r.jsonl"
    result = CliRunner().invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == EXIT_REFUSED, result.output
    assert "rows 4" in result.output
    assert len(out.read_text().splitlines()) == 3
    assert PrivacyLedger.load(ledger).committed == pytest.approx(0.5)


def test_the_api_charges_the_ledger_beside_a_state_without_a_budget(tmp_path):
    state = tmp_path / "client.json"
    make_encoder(RAPPOR, state=state, budget=Budget(epsilon=2 * RAPPOR.epsilon_one)).encode("v")
    assert (tmp_path / "client.ledger.json").exists()
    again = make_encoder(RAPPOR, state=state)  # no budget, no ledger: the one beside the state is charged
    again.encode("v")
    with pytest.raises(BudgetExceededError):
        again.encode("v")
    opened = ldp.client.ClientState.open(state, RAPPOR)  # a state object read from the file: the same
    with pytest.raises(BudgetExceededError):
        make_encoder(RAPPOR, state=opened).encode("v")
    with pytest.raises(BudgetExceededError):
        make_encoder(GRR, state=state).encode("a")  # the ledger is the client's, whatever the spec
    with pytest.raises(StateError, match="a budget is set once"):
        make_encoder(RAPPOR, state=state, budget=Budget(epsilon=9.0))
    with pytest.raises(ParameterError, match="has its privacy ledger"):
        make_encoder(RAPPOR, state=state, ledger=PrivacyLedger.in_memory(Budget(epsilon=9.0)))
    same = make_encoder(RAPPOR, state=state, ledger=tmp_path / "client.ledger.json")
    assert same.committed == pytest.approx(2 * RAPPOR.epsilon_one)
    # a state without a ledger and no budget: not budgeted
    assert not hasattr(make_encoder(RAPPOR, state=tmp_path / "other.json"), "ledger")


class _BucketEncoder:
    """A memoized mechanism's encoder whose memo key depends on the client: a keyed hash of the value to 2 buckets."""

    def __init__(self, spec, seed: bytes):
        self.inner = make_encoder(spec)
        self.spec, self.seed = spec, seed

    def encode(self, value):
        return self.inner.encode(value)

    def memo_key(self, value) -> bytes:
        import hashlib

        return bytes([hashlib.sha256(self.seed + str(value).encode()).digest()[0] % 2])


def test_the_ledger_names_memo_keys_by_the_encoder_when_it_has_them():
    """LOLOHA-like: values that share the client's hash bucket share one permanent response, so one stream."""
    budget = Budget(epsilon=100.0)
    encoder = BudgetedEncoder(_BucketEncoder(RAPPOR, b"seed"), PrivacyLedger.in_memory(budget))
    values = [f"v{i}" for i in range(12)]
    for value in values:
        encoder.encode(value)
    buckets = {encoder.encoder.memo_key(v) for v in values}
    assert len(encoder.ledger.streams) == len(buckets) == 2  # by the spec's key it would be 12 streams
    assert encoder.memo_key("v0") == encoder.encoder.memo_key("v0")
    encoder.refund(values[:3])
    assert sum(s.reports for s in encoder.ledger.streams.values()) == 9
    plain = BudgetedEncoder(make_encoder(RAPPOR), PrivacyLedger.in_memory(budget))
    assert plain.memo_key("v0") is None  # no encoder key: the ledger uses spec.memo_key
    plain.encode("v0")
    plain.encode("v1")
    assert len(plain.ledger.streams) == 2


@pytest.mark.parametrize(
    "budget_args, sent",
    [
        (["--budget", "20", "--budget-delta", "1e-6", "--composition", "optimal"], 20),  # each report as 1-RR
        (["--budget", "20", "--budget-delta", "1e-6", "--composition", "exact"], 25),  # OUE's own curve
        (["--budget-mu", "2"], 8),
    ],
)
def test_cli_budgets_composed_by_the_exact_curves(tmp_path, budget_args, sent):
    oue = ldp.OUE(domain=("a", "b", "c", "d"), epsilon=1.0)
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(oue.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n" + "alice,a\n" * 30)
    out = tmp_path / "r.jsonl"
    args = ["encode", "--spec", str(spec_path), str(users), "--state", str(tmp_path / "s"), *budget_args]
    result = CliRunner().invoke(cli, [*args, "-o", str(out)])
    assert result.exit_code == EXIT_REFUSED, result.output
    assert len(out.read_text().splitlines()) == sent
    assert f"{30 - sent} rows refused" in result.output


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--budget", "1", "--budget-mu", "1"], "not both"),
        (["--budget-mu", "1", "--budget-delta", "1e-6"], "has no delta"),
        (["--budget-mu", "1", "--composition", "basic"], "has no delta"),
    ],
)
def test_cli_bad_gdp_budget_is_one_line(tmp_path, extra, needle):
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n1,a\n")
    args = ["encode", "--spec", str(spec_path), str(users), "--state", str(tmp_path / "s"), *extra]
    result = CliRunner().invoke(cli, [*args, "-o", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 2 and needle in result.output and "Traceback" not in result.output
