"""The one stable split of work over array tasks: by a hash of a key, not by position, so a key
stays in its part when others are added or removed. Render chunks split stocks by code and
inference shards split samples by sample_id with it."""

from __future__ import annotations

import hashlib


def in_part(key: str, index: int, count: int) -> bool:
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) % count == index
