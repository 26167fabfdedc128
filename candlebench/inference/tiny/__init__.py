"""Tiny random-weight checkpoints of the supported model families, for pipeline checks and tests."""
