"""``ldp serve``: run the collector on uvicorn (docs/collector.md)."""

from __future__ import annotations

import logging

import click

from ldp.cli import run_guarded
from ldp.cli_options import stacked
from ldp.collector.store import DEFAULT_STORE
from ldp.errors import ParameterError
from ldp.redact import redact_url

__all__ = ["serve"]

#: Seconds an idle keep-alive connection stays open.
KEEP_ALIVE_SECONDS = 5


#: The options of ``ldp serve``, in the order of its help.
_SERVE_OPTIONS = (
    click.option(
        "--store",
        default=DEFAULT_STORE,
        show_default=True,
        metavar="URL",
        help="SQLite file (created if missing) or postgresql://user@host:port/db.",
    ),
    click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on."),
    click.option(
        "--port",
        default=8080,
        show_default=True,
        type=click.IntRange(0, 65535),
        help="Port (0: any free one).",
    ),
    click.option(
        "--rate-limit",
        default=100.0,
        show_default=True,
        type=click.FloatRange(min=0),
        help="Upload requests per second per client address (0: no limit). Addresses are kept in memory only.",
    ),
    click.option(
        "--dashboard-public",
        is_flag=True,
        help="Show the dashboard and every task's estimates to anyone who can reach the server, without a "
        "token. Default: a collector token is required, whatever --host is.",
    ),
    click.option("--open-dashboard", is_flag=True, hidden=True, help="Old name of --dashboard-public."),
    click.option("--dashboard-token", is_flag=True, hidden=True, help="The default: a token is required."),
    click.option(
        "--read-timeout",
        default=15.0,
        show_default=True,
        type=click.FloatRange(min=0.1, max=3600),
        metavar="SECONDS",
        help="A request's headers and body must arrive within this; slower ones get 408 and are closed.",
    ),
    click.option(
        "--shutdown-timeout",
        default=10,
        show_default=True,
        type=click.IntRange(min=0, max=3600),
        metavar="SECONDS",
        help="On SIGTERM, SIGINT or SIGHUP, wait this long for requests in flight, then cancel them and stop.",
    ),
    click.option(
        "--max-report-age",
        default="30d",
        show_default=True,
        metavar="DURATION",
        help="Reject reports whose t is older than this (t_out_of_range): bounds the windows kept in memory.",
    ),
    click.option(
        "--max-windows",
        default=1_000,
        show_default=True,
        type=click.IntRange(min=1),
        help="Reject reports more than this many windows before the current one (t_out_of_range).",
    ),
    click.option(
        "--prune-every",
        default="1h",
        show_default=True,
        metavar="DURATION",
        help="How often the tasks with a retention (ldp task create/update --retain) lose their expired "
        "windows' raw reports (their aggregates are kept).",
    ),
    click.option(
        "--trusted-proxy",
        "trusted_proxies",
        multiple=True,
        metavar="CIDR",
        help="A reverse proxy (address or network, repeatable) whose X-Forwarded-For names the client for "
        "--rate-limit. Default: none; the header is never read.",
    ),
    click.option(
        "--log-level",
        default="warning",
        show_default=True,
        type=click.Choice(["critical", "error", "warning", "info"]),
    ),
    click.option(
        "--log-format",
        default="json",
        show_default=True,
        type=click.Choice(["json", "text"]),
        help="json: one object per line with time (UTC), level, logger and message; text: LEVEL:  message.",
    ),
)


@click.command("serve")
@stacked(*_SERVE_OPTIONS)
def serve(
    store: str,
    host: str,
    port: int,
    rate_limit: float,
    dashboard_public: bool,
    open_dashboard: bool,
    dashboard_token: bool,
    read_timeout: float,
    shutdown_timeout: int,
    max_report_age: str,
    max_windows: int,
    prune_every: str,
    trusted_proxies: tuple[str, ...],
    log_level: str,
    log_format: str,
) -> None:
    """Receive reports over HTTP into a durable store and serve live estimates.

    The dashboard and GET /v1/dashboard ask for a collector token unless
    --dashboard-public is given. SIGTERM, SIGINT and SIGHUP stop gracefully.

    \b
    Examples:
      ldp serve                                   # SQLite ldp-collector.db, http://127.0.0.1:8080
      ldp serve --store postgresql://ldp@db/ldp --host 0.0.0.0
      ldp serve --rate-limit 20 --trusted-proxy 127.0.0.1     # behind nginx on this machine
    """
    public = dashboard_public or open_dashboard
    if public and dashboard_token:
        raise click.UsageError("--dashboard-token and --dashboard-public contradict each other")
    run_guarded(
        _serve,
        store,
        host,
        port,
        rate_limit,
        public,
        read_timeout,
        shutdown_timeout,
        log_level,
        max_report_age,
        max_windows,
        trusted_proxies,
        log_format,
        prune_every,
    )


def _serve(
    store: str,
    host: str,
    port: int,
    rate_limit: float,
    dashboard_public: bool,
    read_timeout: float,
    shutdown_timeout: int,
    log_level: str,
    max_report_age: str = "30d",
    max_windows: int = 1_000,
    trusted_proxies: tuple[str, ...] = (),
    log_format: str = "json",
    prune_every: str = "1h",
) -> None:
    try:
        import uvicorn

        from ldp.collector.app import CollectorSettings, create_app
        from ldp.collector.serving import CollectorServer, bounded_read_protocol
    except ImportError as exc:
        raise click.UsageError(
            f"ldp serve needs the collector's dependencies ({exc.name} is missing): pip install 'ldp-telemetry[serve]'"
        ) from None
    from ldp.collector.acceptance import Acceptance
    from ldp.collector.forwarded import parse_networks
    from ldp.collector.serving import RedactingFilter, url_secrets
    from ldp.collector.store import open_store
    from ldp.collector.tasks import parse_duration
    from ldp.errors import LDPError

    acceptance = Acceptance(parse_duration(max_report_age, "--max-report-age"), max_windows)
    prune_seconds = parse_duration(prune_every, "--prune-every")
    parse_networks(trusted_proxies)  # a bad --trusted-proxy is a one-line error
    scrubber = RedactingFilter(url_secrets(store))
    try:
        # a bad URL, an unreadable store or one another server holds is a one-line error before serving
        open_store(store, exclusive=True).close()
    except LDPError as exc:
        raise ParameterError(scrubber.scrub(str(exc))) from None
    settings = CollectorSettings(
        store=store,
        dashboard_public=dashboard_public,
        rate_limit=rate_limit,
        acceptance=acceptance,
        trusted_proxies=tuple(trusted_proxies),
        prune_seconds=float(prune_seconds),
    )
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=bounded_read_protocol(read_timeout),
        log_level=log_level,
        access_log=False,  # it would write client addresses
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=shutdown_timeout,
    )
    _set_up_logging(
        log_level, scrubber, log_format
    )  # after uvicorn.Config, which sets up uvicorn's own handlers
    access = "public, no token" if dashboard_public else "collector token required"
    line = f"ldp collector on http://{host}:{port} (store {redact_url(store)}; dashboard: {access})"
    if log_format == "json":  # the start-up line is a log line like the others
        from ldp.collector.logs import JsonFormatter

        line = JsonFormatter().format(
            logging.LogRecord("ldp.collector", logging.INFO, "", 0, line, None, None)
        )
    click.echo(line, err=True)
    CollectorServer(config).run()


def _set_up_logging(level: str, scrubber: logging.Filter, log_format: str = "json") -> None:
    """One line per record of ldp, uvicorn and libraries (JSON or ``LEVEL:  message``), every handler masking
    the store's secrets."""
    from ldp.collector.logs import JsonFormatter  # orjson: a dependency of ldp serve only

    formatter: logging.Formatter
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter("%(levelname)s:  %(message)s")
    ours = logging.getLogger("ldp")
    handler: logging.Handler
    if not ours.handlers:
        handler = logging.StreamHandler()
        ours.addHandler(handler)
        ours.setLevel(level.upper())
        ours.propagate = False
    root = logging.getLogger()
    if not root.handlers:  # records of libraries (psycopg...) would reach logging.lastResort, unfiltered
        root.addHandler(logging.StreamHandler())
    for name in ("", "ldp", "uvicorn", "uvicorn.error", "uvicorn.access"):
        for handler in logging.getLogger(name).handlers:
            handler.setFormatter(formatter)
            if scrubber not in handler.filters:
                handler.addFilter(scrubber)
