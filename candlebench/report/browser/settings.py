"""The browser's settings, from the report config (report.embed / bundle / thumb_px / page_size /
split_above)."""

from __future__ import annotations

from dataclasses import dataclass


# Where the browser's images live, each a way for the report to travel or not:
#   thumbnails: WebP thumbnails inside the page (report.embed=true): one file, smaller images;
#   inline: the images themselves inside the page (report.embed=auto under report.embed_max_mb);
#   bundle: copies inside the report folder (report.bundle=true): the folder travels whole;
#   files: the chart files where the study keeps them, referenced from the page: nothing travels.
CHARTS = ("thumbnails", "inline", "bundle", "files")


@dataclass(frozen=True)
class BrowserSettings:
    charts: str = "files"
    thumb_px: int = 360  # longest side of an embedded thumbnail
    page_size: int = 50
    split_above: int = 250_000  # more answers than this: one data file per run instead of one page

    def __post_init__(self) -> None:
        if self.thumb_px < 16 or self.page_size < 1 or self.split_above < 0 or self.charts not in CHARTS:
            raise ValueError(f"report.thumb_px must be >= 16, report.page_size >= 1 and report.split_above >= 0, "
                             f"charts one of {CHARTS}; got {self.thumb_px}, {self.page_size}, {self.split_above}, "
                             f"{self.charts!r}")
