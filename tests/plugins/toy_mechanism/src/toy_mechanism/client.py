"""The client: one report from the OS CSPRNG, and a vectorized batch encoder."""

from __future__ import annotations

from typing import Any

from ldp.batch import ReportBatch
from ldp.client.batch import randomized_response_batch, value_indices
from ldp.client.encoders import randomized_response_index, rr_thresholds, stateless_factory
from ldp.client.randomness import as_source
from ldp.report import Report
from toy_mechanism.spec import ToyRR


class ToyEncoder:
    """Encode one value: its index kept with probability p, else a uniform other index (exact, CSPRNG)."""

    def __init__(self, spec: ToyRR):
        self.spec = spec
        self._thresholds = rr_thresholds(spec.p, spec.q)

    def encode(self, value: Any) -> Report:
        index = randomized_response_index(self.spec.index_of(value), *self._thresholds)
        return Report(spec=self.spec.fingerprint, extra={"index": index})


#: ``factory(spec, state)``: toy-rr keeps no client state.
toy_encoder = stateless_factory(ToyEncoder)


def toy_batch(spec: ToyRR, values, rng, *, cohorts=None, indices=False) -> ReportBatch:
    """Many users at once: ``rng`` a NumPy generator (simulation) or a RandomSource."""
    idx = value_indices(spec, values, indices)
    reported = randomized_response_batch(as_source(rng), idx, spec.domain_size, spec.p, spec.q)
    return ReportBatch.from_columns(spec.fingerprint, {"index": reported})
