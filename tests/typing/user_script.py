"""A user's script, type-checked against the installed ``ldp`` (tests/core/test_typing.py).

It is never run by pytest: mypy checks it, once against the source layout
(``.ci/typecheck``, and tests/core/test_typing.py's slow set) and once against the
built wheel installed on its own (slow), so a missing ``py.typed`` or a lost
overload fails CI the way it would fail a user.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import assert_type

import ldp
from ldp.aggregator import Accumulator, make_aggregator
from ldp.client import BudgetedEncoder, ClientStateStore, Encoder, make_encoder, secure_encode_batch
from ldp.privacy import Budget
from ldp.report import Report
from ldp.simulations import run

spec = ldp.load_spec({"mechanism": "oue", "epsilon": 1.0, "domain": ["a", "b", "c"]})
assert_type(spec, ldp.Spec)

plain = make_encoder(spec)
assert_type(plain, Encoder)
report = plain.encode("a")
assert_type(report, Report)

with tempfile.TemporaryDirectory() as folder:
    budgeted = make_encoder(spec, ledger=Path(folder) / "ledger.json", budget=Budget(epsilon=3.0))
    assert_type(budgeted, BudgetedEncoder)
    left: float = budgeted.remaining
    budgeted.encode("b")

    store = ClientStateStore(folder)
    client = store.open("user/../42", spec)
    client.encoder.encode("c")
    ledger_file: Path = client.ledger_path

aggregator = make_aggregator(spec)
assert_type(aggregator, Accumulator)
aggregator.add(report)
aggregator.add_batch(secure_encode_batch(spec, ["a", "b"]))
table = aggregator.estimate(0.95)
estimates = table["estimate"]

results = run(mechanisms=["grr"], epsilons=[1.0], users=[1000], repeats=1, seed=1)
