"""RAPPOR decoding: from per-cohort bit counts to candidate frequencies with error bars.

The entry points are in :mod:`ldp.aggregator.rappor.decode` (:func:`~ldp.aggregator.rappor.decode.decode`,
:func:`~ldp.aggregator.rappor.decode.decode_result`); one module per step:

- :mod:`ldp.aggregator.rappor.counts` — count checks and unbiased bit counts;
- :mod:`ldp.aggregator.rappor.fit` — regression rows, LASSO screen, refit;
- :mod:`ldp.aggregator.rappor.significance` — Wald and score tests;
- :mod:`ldp.aggregator.rappor.bloom`, :mod:`ldp.aggregator.rappor.direct` — the
  Bloom-filter and the basic/boolean decodes;
- :mod:`ldp.aggregator.rappor.result` — the result and its table;
- :mod:`ldp.aggregator.rappor.detection` — the detection frequency of a value.

The package imports none of them, so ``import ldp.aggregator`` stays free of
the decoding code until a decode runs (docs/mechanisms.md#rappor-decoding).
"""
