"""Issue 22 #16: a stdio line nested 1,000 levels or more still gets its answer, with its id.

The SDK client matches an answer to its request by id: an error answered with `"id": null` leaves
it waiting forever, as no answer at all would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._support import make_project
from .test_stdio_hardening import stdio

pytestmark = pytest.mark.slow


def _call(request_id: object, value: str) -> str:
    arguments = f'{{"category":"c","key":"k","value":{value}}}'
    return (
        f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"tools/call",'
        f'"params":{{"name":"log_custom_data","arguments":{arguments}}}}}'
    )


@pytest.mark.parametrize("depth", [1_000, 5_000, 100_000])
@pytest.mark.parametrize("shape", ["lists", "objects"])
def test_a_call_nested_a_thousand_levels_or_more_is_answered_with_its_own_id(
    tmp_path: Path, depth: int, shape: str
) -> None:
    value = "[" * depth + "]" * depth if shape == "lists" else '{"a":' * depth + "1" + "}" * depth
    with stdio(make_project(tmp_path / "p")) as pipe:
        pipe.send(_call(41, value))
        answer = pipe.receive(within=30)
        pipe.send(_call("next", "[1]"))
        after = pipe.receive(within=30)
    assert answer["id"] == 41, answer
    assert answer["error"]["code"] == -32700
    assert "nest" in answer["error"]["message"] or "recursion" in answer["error"]["message"]
    assert after["id"] == "next" and not after["result"].get("isError"), after


def test_an_id_after_the_params_and_an_id_inside_the_params_are_told_apart(tmp_path: Path) -> None:
    deep = "[" * 2_000 + "]" * 2_000
    line = (
        '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"log_custom_data","arguments":'
        f'{{"id":"inner","category":"c","key":"k","value":{deep}}}}},"id":"outer"}}'
    )
    with stdio(make_project(tmp_path / "p")) as pipe:
        pipe.send(line)
        answer = pipe.receive(within=30)
    assert answer["id"] == "outer", answer
