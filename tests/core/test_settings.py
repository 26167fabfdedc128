"""Config blocks built by candlebench.core.settings.build, the machinery every layer's settings use:
one-line errors naming the key, the value and what is allowed, nested blocks, frozen values."""

from __future__ import annotations

import dataclasses

import pytest

from candlebench.core.rules import ConfigError
from candlebench.core.settings import build
from candlebench.rendering.render import Chunk, Drawing

pytestmark = pytest.mark.unit

RENDER = {"renderer": "pil", "width": 800, "height": 600, "colors": "green_up", "workers": None,
          "chunk": {"index": 0, "count": 1}}


def test_a_block_is_built_nested_and_frozen():
    drawing = build(Drawing, RENDER, "render")
    assert drawing.chunk == Chunk(index=0, count=1) and drawing.width == 800
    with pytest.raises(dataclasses.FrozenInstanceError):
        drawing.width = 900  # type: ignore[misc]


@pytest.mark.parametrize(("changed", "message"), [
    ({"widht": 800}, "render.widht: not a setting here; nearest: width"),
    ({"width": 100}, "render.width=100: must be an integer >= 200"),
    ({"workers": 0}, "render.workers=0: must be null or an integer >= 1"),
    ({"chunk": {"index": 2, "count": 2}}, "render.chunk.index=2: must be < render.chunk.count=2"),
    ({"chunk": {"index": -1, "count": 2}}, "render.chunk.index=-1: must be an integer >= 0"),
    ({"chunk": 3}, "render.chunk=3: must be a mapping of ['index', 'count']"),
])
def test_a_bad_value_is_one_line_naming_key_value_and_what_is_allowed(changed, message):
    with pytest.raises(ConfigError) as err:
        build(Drawing, {**RENDER, **changed}, "render")
    assert str(err.value) == message


def test_a_missing_key_names_the_config_folder_that_gives_its_default():
    with pytest.raises(ConfigError, match=r"^render.colors: missing; conf/render/ gives every setting a default$"):
        build(Drawing, {k: v for k, v in RENDER.items() if k != "colors"}, "render")
