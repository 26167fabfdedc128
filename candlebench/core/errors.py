"""Errors that are the user's to fix (a bad value, a damaged file, a stale input): the CLI prints
their message — which names the key, file, line or stage to re-run — without a traceback."""


class UserError(Exception):
    pass


class CorruptFile(UserError, ValueError):
    """An intermediate file that cannot be read; the message names it and the stage that writes it."""


class OutdatedFile(UserError, ValueError):
    """An intermediate file written before the code of now needed more of it; the message names it and
    the stage that writes it again."""
