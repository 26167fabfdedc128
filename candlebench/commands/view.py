"""``candlebench view OUT_DIR [--port N]``: serve a report on 127.0.0.1 and print its address.

A large study's sample browser reads each run's rows from a file next to report.html when the run
is chosen (report/browser/), and browsers refuse such reads from a page opened from disk; a
small server of the standard library's is all it takes. It serves the folder that holds the report
folder (OUT_DIR for report.dir's default, OUT_DIR/report), so the page's relative links to the
charts in the task folders beside it resolve; nothing above that folder is served.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import threading
from urllib.parse import quote
from dataclasses import dataclass
from pathlib import Path

from candlebench.core.errors import UserError

PAGE = "report.html"


class NoReport(UserError, FileNotFoundError):
    """No report.html where `view` looks."""


@dataclass(frozen=True)
class Served:
    server: http.server.ThreadingHTTPServer
    url: str

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass  # one line per file fetched would bury the address printed

    def do_GET(self) -> None:
        if self.path == "/favicon.ico":  # asked for by every browser; a 404 would be a console error
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()


def report_folder(path: Path) -> Path:
    """The report folder ``path`` names: itself, or an out_dir's report/ (report.dir's default)."""
    for folder in (path, path / "report"):
        if (folder / PAGE).is_file():
            return folder.resolve()
    raise NoReport(f"{path}: no {PAGE} in it or in {path / 'report'}; run `candlebench report` first")


def serve(path: Path, port: int = 0) -> Served:
    """The server of the report in ``path`` (an out_dir or a report folder), started in a thread
    (port 0: a free one); ``url`` opens the report."""
    folder = report_folder(path)
    handler = functools.partial(_Quiet, directory=str(folder.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return Served(server, f"http://127.0.0.1:{server.server_address[1]}/{quote(folder.name)}/{PAGE}")


def view_command(args: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="candlebench view", description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="the study's out_dir (its report in report/) or a report folder")
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free one; default 8000)")
    ns = parser.parse_args(args)
    if not 0 <= ns.port <= 65535:  # bind() raises OverflowError for these: a traceback, not an OSError
        raise SystemExit(f"error: --port {ns.port}: must be 0-65535 (0: any free one)")
    try:
        served = serve(ns.out_dir, ns.port)
    except (NoReport, OSError) as err:
        raise SystemExit(f"error: {err}") from None
    print(f"the report: {served.url} (Ctrl-C stops the server)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        served.close()
