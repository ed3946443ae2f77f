"""``ldp.client.ClientStateStore``: any client id to its state and ledger, as ``ldp encode --state`` does.

A server embedding the client must not build paths from ids (``f"{user}.json"``
with the id ``../x`` writes anywhere); the store names files by the CLI's hash,
so a directory is shared by the CLI and the server, and it is as thread-safe.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import cli
from ldp.client import BudgetedEncoder, ClientState, ClientStateStore
from ldp.errors import BudgetExceededError, ParameterError
from ldp.privacy.budget import Budget

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=0.5)
RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=64, f="1/2", p="1/2", q="3/4")


@pytest.mark.parametrize("client_id", ["../../escape", "/etc/passwd", "a/b", "..", "naïve ✓", "x" * 500, 7])
def test_any_id_maps_to_a_safe_file_name_inside_the_directory(tmp_path, client_id):
    store = ClientStateStore(tmp_path / "clients")
    client = store.open(client_id, RAPPOR)
    assert client.state_path.parent == tmp_path / "clients"
    assert client.ledger_path.parent == tmp_path / "clients"
    assert client.state_path.is_file()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [client.state_path.name]


def test_the_store_names_clients_as_the_cli_does(tmp_path):
    values = tmp_path / "values.jsonl"
    values.write_text(json.dumps({"client_id": "alice", "value": "a"}) + "\n")
    spec = tmp_path / "spec.json"
    spec.write_text(RAPPOR.to_json())
    encoded = CliRunner().invoke(  # the real CLI, in this process
        cli,
        ["encode", "--spec", str(spec), "--state", str(tmp_path / "s"),
         "--column", "value", str(values), "-o", str(tmp_path / "out.jsonl")],
    )  # fmt: skip
    assert encoded.exit_code == 0, encoded.output
    written = ClientState.load(ClientStateStore(tmp_path / "s").state_path("alice"), RAPPOR)
    opened = ClientStateStore(tmp_path / "s").open("alice", RAPPOR)
    assert opened.encoder.state == written  # type: ignore[attr-defined]


def test_ids_spelled_two_ways_are_one_client(tmp_path):
    store = ClientStateStore(tmp_path)
    assert store.state_path(12) == store.state_path("12") == store.state_path("12.0")
    with pytest.raises(ParameterError, match="client id"):
        store.open("", GRR)


def test_a_budgeted_store_charges_each_client_its_own_ledger(tmp_path):
    store = ClientStateStore(tmp_path, budget=Budget(epsilon=1.0))
    alice = store.open("alice", GRR).encoder
    assert isinstance(alice, BudgetedEncoder)
    alice.encode("a")
    alice.encode("b")
    with pytest.raises(BudgetExceededError):
        alice.encode("c")
    bob = ClientStateStore(tmp_path).open("bob", GRR)  # no budget given: bob has no ledger
    assert not isinstance(bob.encoder, BudgetedEncoder)
    again = ClientStateStore(tmp_path).open("alice", GRR).encoder  # alice's ledger holds without a budget
    assert isinstance(again, BudgetedEncoder) and again.remaining == 0.0


def test_threads_opening_one_new_client_share_one_secret_and_one_budget(tmp_path):
    store = ClientStateStore(tmp_path, budget=Budget(epsilon=RAPPOR.epsilon * 3))
    with ThreadPoolExecutor(8) as pool:
        clients = list(pool.map(lambda _: store.open("carol", RAPPOR), range(16)))
    assert len({c.encoder.encoder.state.secret for c in clients}) == 1  # type: ignore[attr-defined]

    def send(i: int) -> bool:
        try:
            clients[i].encoder.encode(f"v{i}")
        except BudgetExceededError:
            return False
        return True

    with ThreadPoolExecutor(8) as pool:
        sent = sum(pool.map(send, range(16)))
    assert sent == 3


@pytest.mark.slow
def test_processes_opening_one_new_client_share_one_secret(tmp_path):
    code = (
        "import sys, ldp\n"
        "from ldp.client import ClientStateStore\n"
        "spec = ldp.load_spec(sys.argv[2])\n"
        "print(ClientStateStore(sys.argv[1]).open('dave', spec).encoder.state.secret.hex())\n"
    )
    spec = tmp_path / "spec.json"
    spec.write_text(RAPPOR.to_json())
    runs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "s"), str(spec)], stdout=subprocess.PIPE)
        for _ in range(4)
    ]
    secrets = {run.communicate()[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert len(secrets) == 1
