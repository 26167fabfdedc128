"""What every task builds on: the ``Task`` base class and its seams (base), typed settings
(settings), sample windows (windows), shared answer text (answer_text) and the registry that finds
task folders (registry)."""
