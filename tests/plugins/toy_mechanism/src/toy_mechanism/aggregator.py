"""The aggregator: count the reported indices; the shared frequency estimate does the rest."""

from __future__ import annotations

import numpy as np

from ldp.aggregator.accumulators import FrequencyAccumulator, check_int_column
from ldp.batch import ReportBatch
from ldp.report import Report
from ldp.report_check import check_report


class ToyAccumulator(FrequencyAccumulator):
    """A report supports the value whose index it carries (support probabilities p and q, as GRR)."""

    def add(self, report: Report) -> None:
        self._counts[check_report(self.spec, report).field("index")] += 1
        self._n += 1

    def add_batch(self, batch: ReportBatch) -> None:
        self._check_batch(batch)
        index = check_int_column(batch.column("index"), "index", self.spec.domain_size)
        self._counts += np.bincount(index, minlength=self.spec.domain_size)
        self._n += int(index.shape[0])
