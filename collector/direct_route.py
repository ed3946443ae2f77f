"""One hot route served by a plain ASGI handler, outside FastAPI's middleware and routing (docs/performance.md#collector-direct-route).

FastAPI hands every request through about a dozen layers (two middlewares
of its own, Starlette's error and exception middlewares, an exit stack,
the router, the included router, the route, the request-response wrapper,
the endpoint runner): on the collector's upload route, whose endpoint reads
the raw body itself and has no dependency or body model, they were ~38 % of
the event loop's CPU. A :class:`DirectRoute` serves such a route in one call
with the same outcome: the route's own path match (:meth:`APIRoute.matches`:
the same pattern, ``root_path`` and path parameters), the application's
exception handlers looked up as Starlette does (by the exception's class;
an exception no handler takes is answered by the ``Exception`` handler and
then raised to the server, which logs it), and the request timed as the
application's timing middleware does. Every other request, and every other
method on the same path, takes the whole FastAPI stack.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

__all__ = ["DirectRoute", "Observe"]

#: What a served request is reported to: the route's path, the status sent and the seconds it took.
Observe = Callable[[str, int, float], None]
#: An exception handler as Starlette takes it: a coroutine function, or a plain one (run in a worker thread).
Handler = Callable[[Request, Any], Response | Awaitable[Response]]


class StatusRecorder:
    """An ASGI send that notes the status of the response it passes on (500 until one starts)."""

    def __init__(self, send: Send):
        self.send = send
        self.status = 500

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self.send(message)


class DirectRoute:
    """Serves the requests of ``route`` (one method) by calling ``endpoint(request)`` directly.

    Parameters
    ----------
    route : APIRoute
        The FastAPI route (kept in the application for its schema and as
        the fallback): its pattern decides what is served here.
    method : str
        The one method served here (``"POST"``).
    endpoint : callable
        ``endpoint(request)`` giving the response; it reads its path
        parameters from ``request.path_params``.
    handlers : mapping
        The application's exception handlers by exception class (``app.exception_handlers``).
    observe : callable
        Called once per request with its status and duration (the request metrics).
    """

    def __init__(
        self,
        route: APIRoute,
        method: str,
        endpoint: Callable[[Request], Awaitable[Response]],
        handlers: Mapping[Any, Handler],
        observe: Observe,
    ) -> None:
        self.route = route
        self.method = method
        self.endpoint = endpoint
        self.handlers = handlers
        self.observe = observe

    def claim(self, scope: Scope) -> bool:
        """Whether this request is served here; if so its scope gets the route's path parameters."""
        if scope["type"] != "http" or scope["method"] != self.method:
            return False
        match, child = self.route.matches(scope)
        if match is not Match.FULL:
            return False
        scope.update(child)
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        sender = StatusRecorder(send)
        request = Request(scope, receive, sender)
        try:
            try:
                response = await self.endpoint(request)
            except Exception as exc:
                await self._answer(request, exc, sender)
                return
            await response(scope, receive, sender)
        finally:
            self.observe(self.route.path, sender.status, time.perf_counter() - started)

    async def _answer(self, request: Request, exc: Exception, send: Send) -> None:
        """Answer ``exc`` as Starlette's middlewares do: by the handler of its class (the exception
        middleware), else by the ``Exception`` handler and then raised to the server (the server-error
        middleware, whose exception the server logs), else raised."""
        handler = next(
            (
                self.handlers[cls]
                for cls in type(exc).__mro__
                if cls is not Exception and cls in self.handlers
            ),
            None,
        )
        fault = handler is None
        handler = handler or self.handlers.get(500) or self.handlers.get(Exception)
        if handler is None:
            raise exc
        if inspect.iscoroutinefunction(handler):
            response = await handler(request, exc)
        else:
            response = await run_in_threadpool(handler, request, exc)
        await response(request.scope, request.receive, send)
        if fault:
            raise exc
