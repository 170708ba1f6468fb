"""A stdio server with the semantic extra loads the embedding model on the first search by meaning, never
at start-up nor for calls that do not need it: its first calls cost what they cost without the extra.

Checked on a real `homeport serve` process through /proc/<pid>/maps (the onnxruntime library is mapped
once the model is loaded), over plain JSON-RPC lines on its pipes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from homeport.embedding.model import unavailable_reason
from homeport.store import Store

pytestmark = [
    pytest.mark.skipif(unavailable_reason(None) is not None, reason="needs the semantic extra and its model"),
    pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/<pid>/maps"),
]


class StdioServer:
    def __init__(self, root: Path, home: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_")}
        env.update(HOME=str(home), HOMEPORT_STATE_DIR=str(home / "state"))
        env.pop("CLAUDE_PROJECT_DIR", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "homeport", "serve", "--workspace", str(root)],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while line := self.process.stdout.readline():
            message = json.loads(line)
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError("the server closed its output")

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not result.get("isError"), result
        return result

    def model_loaded(self) -> bool:
        return "onnxruntime" in Path(f"/proc/{self.process.pid}/maps").read_text()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        finally:
            assert self.process.stdout is not None
            self.process.stdout.close()


def test_the_model_loads_on_the_first_search_by_meaning_and_not_before(tmp_path):
    root = tmp_path / "app"
    (root / ".git").mkdir(parents=True)
    store = Store.open(root, create=True)  # a store with nothing in it: nothing for the indexer to embed
    assert store is not None
    store.close()
    server = StdioServer(root, tmp_path)
    try:
        server.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
        )
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.call("get_product_context")
        server.call("search", query="deploys", mode="words")
        # Longer than the indexer waits for a quiet moment (embedding.indexer.MAX_WAIT_S): nothing is pending,
        # so nothing is loaded however long the server idles.
        time.sleep(1.5)
        server.call("get_product_context")
        assert not server.model_loaded()
        found = server.call("search", query="how do we ship without an outage", mode="auto")
        assert found["structuredContent"]["mode_used"] == "auto"
        assert server.model_loaded()
    finally:
        server.close()
