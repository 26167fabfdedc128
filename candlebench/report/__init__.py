"""The report: what a study's report.html and report.md show, and how they are written.

Modules by concern: :mod:`.model` (the typed objects tasks hand over: :class:`~.model.RunMetrics`,
:class:`~.model.Section`, :class:`~.model.Table`, :class:`~.model.Headline`, ...), :mod:`.tables`
(headline tables, answered counts, ranks), :mod:`.plots` (matplotlib figure helpers, on an Agg
canvas of their own: no global backend), :mod:`.writer` (report.md and report.html),
:mod:`.per_sample` (the default results table, comparisons and browser verdicts of a task that
declares its per-sample scores), :mod:`.failures` (parse failures by reason) and :mod:`.browser`
(the sample browser: its data, images, page, script and style).

It sits under the task API (tasks' ``report`` and ``browse`` build its objects) and over
:mod:`candlebench.scoring`, whose statistics it shows: it imports no task and no stage.
"""
