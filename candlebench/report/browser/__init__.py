"""The report's sample browser: every answered sample of every run, inspectable from report.html.

What it holds per run and sample: the generic columns of ``parsed.parquet`` (the raw text, the
parsed answer, its tier or failure reason, the prompt as sent and which charts went with it), the
task's view (:meth:`candlebench.task_api.base.Task.browse`: group, label, right / wrong, detail such as E2A's
claims) and the per-sample ``score_*`` columns.

Two layouts, by the study's size (``report.split_above`` answers):

* small: the data travel as one gzip-compressed JSON document inside the page, which the page's
  script (``browser.js``) unpacks with the browser's own ``DecompressionStream``; no server, no
  network, it opens from disk. Prompts are stored once per distinct text (a sample's prompt is the
  same in every first-pass run), which together with gzip keeps 10,000 samples x 3 runs mailable.
* large (the paper's 1.6 M answers): the page holds only an index (runs, their failure counts);
  each run's rows are a gzip'd JSON file under ``report/browser/runs/`` that the page fetches
  when that run is chosen, and the prompts, shared by every run, are files of
  :data:`PROMPTS_PER_FILE` under ``report/browser/prompts/`` fetched when a sample's detail opens.
  The writer holds one run's rows at a time, so its memory and the page's first load stay those
  of one run however many runs there are. Browsers refuse ``fetch`` from ``file://``:
  ``candlebench view OUT_DIR`` serves the folder on localhost.

Images are the exact ones the model received: the run's :class:`ImagePolicy` (run.json) applied to
the sample's chart files. Under the identity policy (the default) those are the chart files
themselves, referenced relative to the report; any other policy writes each preprocessed image
once under ``report/inputs/<policy>/<chart sha256>.png`` (content-addressed, so a rebuilt report
reuses them). Where the page must travel (:data:`CHARTS`): the images themselves inside it
(``report.embed=auto``, a small study), WebP thumbnails inside it (``report.embed=true``), or
copies inside the report folder (``report.bundle=true``, any size).

Modules: :mod:`.settings` (what the report config sets), :mod:`.data` (the rows of each run and
the two layouts of their document), :mod:`.images` (each image prepared once, and where it goes),
:mod:`.page` (the block of report.html).
"""

from __future__ import annotations

from candlebench.report.browser.data import FILES, BrowserRun, write_run_files
from candlebench.report.browser.page import browser_block
from candlebench.report.browser.settings import BrowserSettings

__all__ = ["FILES", "BrowserRun", "BrowserSettings", "browser_block", "write_run_files"]
