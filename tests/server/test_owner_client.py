"""The forwarding client's reading of an owner's answer: JSON or an event stream, result or refusal."""

from __future__ import annotations

import json

import httpx2
import pytest

from homeport.mesh.owner_client import OwnerRefusedError, _request, _result

RESULT = {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": 1}, "isError": False}


def response(status: int, body: str, kind: str) -> httpx2.Response:
    return httpx2.Response(status, content=body.encode(), headers={"content-type": kind})


def test_a_json_answer_is_the_owners_result_unchanged():
    got = _result(response(200, json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULT}), "application/json"))
    assert got == RESULT


def test_an_event_stream_answer_skips_notifications_and_takes_the_response():
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
    stream = (
        f"event: message\r\ndata: {json.dumps(note)}\r\n\r\n"
        f"event: message\ndata: {json.dumps({'jsonrpc': '2.0', 'id': 1, 'result': RESULT})}\n\n"
    )
    assert _result(response(200, stream, "text/event-stream")) == RESULT


def test_a_tool_error_is_a_result_not_a_refusal():
    error = {**RESULT, "isError": True}
    assert _result(response(200, json.dumps({"jsonrpc": "2.0", "id": 1, "result": error}), "application/json"))[
        "isError"
    ]


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (
            400,
            json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad envelope"}}),
            "application/json",
        ),
        (401, "", "text/plain"),
        (200, "not json", "application/json"),
        (200, "event: message\ndata: {}\n\n", "text/event-stream"),
        (500, json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULT}), "application/json"),
    ],
)
def test_anything_else_is_a_refusal_naming_the_status(status, body, kind):
    with pytest.raises(OwnerRefusedError) as refused:
        _result(response(status, body, kind))
    assert f"HTTP {status}" in str(refused.value)


def test_the_request_is_one_stateless_call_with_the_eras_headers_and_envelope():
    body, headers = _request("get_decisions", {"limit": 10, "text": "é"})
    message = json.loads(body)
    assert headers == {"Mcp-Method": "tools/call", "Mcp-Name": "get_decisions"}
    assert message["method"] == "tools/call" and message["params"]["arguments"] == {"limit": 10, "text": "é"}
    meta = message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {}  # so the owner never asks anything back


def test_the_envelope_names_the_callers_own_client_so_the_owner_records_it_as_the_writers():
    def client_of(body: bytes) -> dict:
        return json.loads(body)["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]

    assert client_of(_request("log_decision", {}, ("homeport-dashboard", "1.2"))[0]) == {
        "name": "homeport-dashboard",
        "version": "1.2",
    }
    # A caller whose client sent no name: the forwarder names itself rather than nobody.
    assert client_of(_request("log_decision", {}, (None, None))[0])["name"] == "homeport-forwarder"
    assert client_of(_request("log_decision", {})[0])["name"] == "homeport-forwarder"
