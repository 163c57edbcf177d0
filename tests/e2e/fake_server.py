"""What the fakes of the agents' model APIs share: a threaded HTTP server on 127.0.0.1 that
keeps every JSON body POSTed to it and answers the paths ``reply`` knows."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FakeServer"]


class FakeServer:
    """``with Fake() as api:`` serves until the block ends; ``requests`` is every body received."""

    def __init__(self, reply: Callable[[str, dict[str, Any]], bytes | None]) -> None:
        """``reply(path, body)``: the server-sent events answering a POST to ``path``; None: not found."""
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                payload = reply(self.path, body)
                if payload is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
