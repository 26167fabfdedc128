"""``candlebench view``: the report folder's parent served on 127.0.0.1, so the page reaches its
per-run files and the charts in the task folders beside it; an out_dir or the report folder named."""

from __future__ import annotations

import urllib.request

import pytest

from candlebench.commands.view import NoReport, serve

pytestmark = pytest.mark.unit


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


@pytest.mark.parametrize("named", ["out_dir", "report folder"])
def test_the_page_its_files_and_the_charts_beside_it_are_served(tmp_path, named):
    (tmp_path / "report" / "browser" / "runs").mkdir(parents=True)
    (tmp_path / "report" / "report.html").write_text("<p>page</p>")
    (tmp_path / "report" / "browser" / "runs" / "0-a.json.gz").write_bytes(b"\x1f\x8bdata")
    (tmp_path / "forecast" / "images").mkdir(parents=True)
    (tmp_path / "forecast" / "images" / "c.png").write_bytes(b"png")
    served = serve(tmp_path if named == "out_dir" else tmp_path / "report")
    try:
        assert served.url.startswith("http://127.0.0.1:") and served.url.endswith("/report/report.html")
        assert _get(served.url) == (200, b"<p>page</p>")
        base = served.url.rsplit("/", 2)[0]
        assert _get(f"{base}/report/browser/runs/0-a.json.gz") == (200, b"\x1f\x8bdata")  # bytes as written
        assert _get(f"{base}/forecast/images/c.png") == (200, b"png")  # the page's ../forecast/... link
        assert _get(f"{base}/favicon.ico")[0] == 204
    finally:
        served.close()


def test_a_folder_without_a_report_says_where_it_looked(tmp_path):
    with pytest.raises(NoReport, match="no report.html"):
        serve(tmp_path)


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_one_line(tmp_path, port):
    from candlebench.commands.view import view_command

    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.html").write_text("<p>page</p>")
    with pytest.raises(SystemExit, match=f"^error: --port {port}: must be 0-65535"):
        view_command([str(tmp_path), "--port", port])
