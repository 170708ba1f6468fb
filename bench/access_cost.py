"""What the access rules and the record of writers cost per call, in this process.

Two figures, each the median of several rounds of CPU time (`time.process_time`):

- the access step under `--access-rules`: a principal's tool allowlist, then its workspace among
  N rules (the file is stat-ed on every call, as the server does, and parsed once);
- a decision written with and without a writer named, i.e. the `item_writers` row every write
  through the pipeline now adds in its transaction.

    python3 bench/access_cost.py              # 50 rules, 5 rounds
    python3 bench/access_cost.py --rules 500 --rounds 9

Prints a Markdown table; writes nothing outside a temporary directory.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from homeport.core.access import AccessRulesFile, WorkspaceAccess
from homeport.store import decisions, provenance
from homeport.store.database import Store


def access_step(rules: int, calls: int) -> float:
    """µs of CPU per call for the tool check and the workspace check together."""
    tmp = Path(tempfile.mkdtemp(prefix="homeport-access-"))
    path = tmp / "rules.toml"
    body = [
        f'[[workspaces]]\nwho = ["agent{i}", "group:g{i}"]\npaths = ["/srv/team{i}/**"]\naccess = "write"\n'
        for i in range(rules)
    ]
    body.append('[[tools]]\nwho = "group:g3"\nallow = ["memory", "workspace"]\n')
    path.write_text("\n".join(body))
    access = WorkspaceAccess(auth=True, rules=AccessRulesFile(path))
    claims = {"sub": "agent3", "groups": ["g3"]}
    root = Path("/srv/team3/app")
    access.check_tool("agent3", claims, "log_decision", "memory")
    started = time.process_time()
    for _ in range(calls):
        access.check_tool("agent3", claims, "log_decision", "memory")
        access.check("agent3", root, write=True, claims=claims)
    return (time.process_time() - started) / calls * 1e6


def decision_writes(writer: bool, writes: int) -> float:
    """µs of CPU per `log_decision`, with or without a writer named."""
    root = Path(tempfile.mkdtemp(prefix="homeport-writers-"))
    store = Store.open(root, create=True)
    assert store is not None
    try:
        decisions.log_decision(store, "warm up")
        named = provenance.Writer("ada", "claude-code", "2.1", "log_decision")
        started = time.process_time()
        if writer:
            with provenance.writing_as(named):
                for i in range(writes):
                    decisions.log_decision(store, f"decision {i}", rationale="why")
        else:
            for i in range(writes):
                decisions.log_decision(store, f"decision {i}", rationale="why")
        return (time.process_time() - started) / writes * 1e6
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench/access_cost.py", description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=50, help="workspace rules in the file (default 50)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-n", type=int, default=2000, help="calls or writes per round")
    args = parser.parse_args()
    step = [access_step(args.rules, args.n * 5) for _ in range(args.rounds)]
    plain, named = [], []
    for _ in range(args.rounds):  # alternated, so a busy moment hits both
        plain.append(decision_writes(False, args.n))
        named.append(decision_writes(True, args.n))
    print("| measure | µs CPU per call (median of rounds) |")
    print("|---|---|")
    print(f"| access step, {args.rules} workspace rules + a tool allowlist | {statistics.median(step):.1f} |")
    print(f"| log_decision, no writer named | {statistics.median(plain):.1f} |")
    print(f"| log_decision, writer recorded | {statistics.median(named):.1f} |")


if __name__ == "__main__":
    main()
