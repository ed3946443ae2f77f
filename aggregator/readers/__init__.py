"""Report file readers, one module per format, over what they share.

- :mod:`ldp.aggregator.readers.jsonl` — JSON Lines (also gzip and standard input);
- :mod:`ldp.aggregator.readers.csv` — CSV (also gzip);
- :mod:`ldp.aggregator.readers.parquet` — Parquet, by row groups;
- :mod:`ldp.aggregator.readers.common` — the chunk record, the column-wise
  check and the row-by-row re-check every reader ends with.

:mod:`ldp.aggregator.io` picks a reader by file extension and holds the public
names (``read_reports``, ``read_batches``, ...); the modules here are imported by it.
"""
