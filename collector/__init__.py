"""The collector: reports over HTTP into a durable store, windowed estimates, a live dashboard.

``ldp serve`` runs :func:`ldp.collector.app.create_app` on uvicorn; tasks
(:mod:`ldp.collector.tasks`) and reports live in a :class:`~ldp.collector.store.Store`
(SQLite by default, PostgreSQL by URL). See docs/collector.md.
"""
