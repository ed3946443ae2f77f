"""``ldp serve``: run the collector on uvicorn (docs/collector.md)."""

from __future__ import annotations

import click

from ldp.cli import run_guarded
from ldp.collector.store import DEFAULT_STORE

__all__ = ["serve"]


@click.command("serve")
@click.option(
    "--store",
    default=DEFAULT_STORE,
    show_default=True,
    metavar="URL",
    help="SQLite file (created if missing) or postgresql://user@host:port/db.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free one)."
)
@click.option(
    "--rate-limit",
    default=100.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Upload requests per second per client address (0: no limit). Addresses are kept in memory only.",
)
@click.option(
    "--dashboard-token/--open-dashboard",
    "dashboard_token",
    default=None,
    help="Whether the dashboard asks for a collector token. Default: open on a loopback --host only.",
)
@click.option(
    "--max-report-age",
    default="30d",
    show_default=True,
    metavar="DURATION",
    help="Reject reports whose t is older than this (t_out_of_range): bounds the windows kept in memory.",
)
@click.option(
    "--max-windows",
    default=1_000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Reject reports more than this many windows before the current one (t_out_of_range).",
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info"]),
)
def serve(
    store: str,
    host: str,
    port: int,
    rate_limit: float,
    dashboard_token: bool | None,
    max_report_age: str,
    max_windows: int,
    log_level: str,
) -> None:
    """Receive reports over HTTP into a durable store and serve live estimates.

    \b
    Examples:
      ldp serve                                   # SQLite ldp-collector.db, http://127.0.0.1:8080
      ldp serve --store postgresql://ldp@db/ldp --host 0.0.0.0
    """
    run_guarded(
        _serve, store, host, port, rate_limit, dashboard_token, log_level, max_report_age, max_windows
    )


def _serve(
    store: str,
    host: str,
    port: int,
    rate_limit: float,
    dashboard_token: bool | None,
    log_level: str,
    max_report_age: str = "30d",
    max_windows: int = 1_000,
) -> None:
    try:
        import uvicorn

        from ldp.collector.app import CollectorSettings, create_app, is_loopback
    except ImportError as exc:
        raise click.UsageError(
            f"ldp serve needs the collector's dependencies ({exc.name} is missing): pip install 'ldp-telemetry[serve]'"
        ) from None
    from ldp.collector.acceptance import Acceptance
    from ldp.collector.store import open_store
    from ldp.collector.tasks import parse_duration

    acceptance = Acceptance(parse_duration(max_report_age, "--max-report-age"), max_windows)
    # a bad URL, an unreadable store or one another server holds is a one-line error before serving
    open_store(store, exclusive=True).close()
    open_dashboard = is_loopback(host) if dashboard_token is None else not dashboard_token
    settings = CollectorSettings(
        store=store, open_dashboard=open_dashboard, rate_limit=rate_limit, acceptance=acceptance
    )
    app = create_app(settings)
    click.echo(f"ldp collector on http://{host}:{port} (store {store})", err=True)
    # no access log: it would write client addresses
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        server_header=False,
        proxy_headers=False,
    )
