"""The checks of the command line itself (candlebench.core.rules.check_early), before Hydra writes anything."""

from __future__ import annotations

import pytest

from candlebench.core.rules import ConfigError, check_early

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("pasted", ["a1B2c3D4e5F6g7H8i9J0", "Bearer_abc123", "sk-PASTED-secret-999", "my key"])
def test_a_pasted_key_without_a_known_prefix_is_refused_and_never_echoed(pasted):
    """Most providers' keys start with no prefix the rules know: a mixed-case one read as a variable
    name was written into the job's saved configs and echoed by the "not set" error."""
    with pytest.raises(ConfigError, match="backend.api_key_env: must be the NAME of an environment variable") as err:
        check_early([f"backend.api_key_env={pasted}"])
    assert pasted not in str(err.value)


@pytest.mark.parametrize("name", ["MY_KEY", "OPENAI_API_KEY", "_K2", "null"])
def test_a_variable_name_is_taken(name):
    given = {"null": None}.get(name, name)
    check_early([], lambda key: (key == "backend.api_key_env", given))


def test_null_on_the_command_line_asks_for_no_key():
    """`backend.api_key_env=null` (a server without keys) is Hydra's None, not a variable named null."""
    check_early(["backend.api_key_env=null"])
