"""The one-writer lock (candlebench.core.lock) where its path is not a file it can hold."""

from __future__ import annotations

import pytest

from candlebench.core.errors import UserError
from candlebench.core.lock import held

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("blocker", ["a folder at the lock", "a file at its folder"])
def test_a_lock_path_that_cannot_be_a_file_is_one_line(tmp_path, blocker):
    lock = tmp_path / "locks" / "infer.run.shard0of1.lock"
    if blocker == "a folder at the lock":
        lock.mkdir(parents=True)
    else:
        (tmp_path / "locks").write_text("")
    with pytest.raises(UserError, match=f"{lock}: the lock file of run r cannot be written there") as err:
        with held(lock, "run r", "use another run"):
            pass
    assert "\n" not in str(err.value)
    with held(tmp_path / "free.lock", "run r", "use another run"):  # a path that can be a file is held
        assert (tmp_path / "free.lock").is_file()
    assert not (tmp_path / "free.lock").exists()
