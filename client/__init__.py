"""Client encoders that run inside apps (light: imports only ``ldp`` and NumPy).

- :func:`make_encoder` — the on-device encoder (CSPRNG, exact probabilities).
- :class:`ClientState` — persistent secret and cohort for RAPPOR.
- :class:`ClientStateStore` — a directory of persistent clients keyed by any
  client id (named by a hash, as ``ldp encode --state`` names them), for a
  server encoding on behalf of its users.
- :class:`BudgetedEncoder` — charges a per-client privacy ledger on every encode
  (``make_encoder(spec, ledger=..., budget=...)``).
- :func:`encode_batch` — vectorized encoding of many users from a random source:
  :class:`SystemRandomSource` (the OS CSPRNG; :func:`secure_encode_batch`) or a
  seeded, *insecure* NumPy generator for simulations.

Encoders are safe to share between threads: they hold only immutable data
after construction and draw every coin from the OS CSPRNG; a budgeted
encoder's ledger locks across threads and processes
(:mod:`ldp.client.store` says exactly how).
"""

from ldp.client.batch import encode_batch, secure_encode_batch
from ldp.client.budgeted import BudgetedEncoder
from ldp.client.encoders import (
    Encoder,
    GRREncoder,
    LocalHashingEncoder,
    RapporEncoder,
    UnaryEncoder,
    make_encoder,
)
from ldp.client.randomness import CountingSource, GeneratorSource, RandomSource, SystemRandomSource
from ldp.client.state import ClientState
from ldp.client.store import ClientStateStore, StoredClient

__all__ = [
    "BudgetedEncoder",
    "ClientState",
    "ClientStateStore",
    "CountingSource",
    "Encoder",
    "GRREncoder",
    "GeneratorSource",
    "LocalHashingEncoder",
    "RandomSource",
    "RapporEncoder",
    "StoredClient",
    "SystemRandomSource",
    "UnaryEncoder",
    "encode_batch",
    "make_encoder",
    "secure_encode_batch",
]
