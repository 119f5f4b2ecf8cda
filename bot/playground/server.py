"""Run an ASGI app on a loopback port in a background thread.

Tests need a real HTTP endpoint, so slack_sdk, bolt and the workers run their actual transport
code. Fixed ports would collide when suites run in parallel. ``LoopbackServer`` binds
127.0.0.1:0 itself and hands the socket to uvicorn. It then waits until uvicorn reports it is
serving.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp

from bot.playground.webapi import create_webapi
from bot.playground.workspace import Workspace


def make_webapi_app(workspace: Workspace) -> Starlette:
    """The Web API stand-in mounted at ``/api/``.

    Point ``SLACK_API_URL`` at ``<server url>/api/``.
    """
    return Starlette(routes=[Mount("/api", app=create_webapi(workspace))])


class LoopbackServer:
    """Serve ``app`` on 127.0.0.1 with an OS-chosen port until ``stop()``.

    Usage::

        with LoopbackServer(make_webapi_app(ws)) as server:
            client = WebClient(token="xoxb-test", base_url=server.url + "/api/")
    """

    def __init__(self, app: ASGIApp, startup_timeout: float = 10.0, *, lifespan: bool = False) -> None:
        self.app = app
        self.startup_timeout = startup_timeout
        self.lifespan = lifespan  # run the app's startup and shutdown (e.g. a pub/sub subscription)
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL without a trailing slash, e.g. ``http://127.0.0.1:53117``."""
        if not self.port:
            raise RuntimeError("server is not running")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackServer:
        """Bind a free port, start uvicorn in a daemon thread, wait until it serves."""
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="on" if self.lifespan else "off", access_log=False
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"loopback-{self.port}", daemon=True
        )
        self._server, self._thread = server, thread
        thread.start()
        deadline = time.monotonic() + self.startup_timeout
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not server.started:
            self.stop()
            sock.close()
            raise RuntimeError(f"uvicorn did not start on port {self.port}")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask uvicorn to exit and wait for the thread, safely callable twice."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)
        self.port = 0

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
