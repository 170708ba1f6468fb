#!/usr/bin/env python3
"""Homeport side by side with the echo floor and its peers, over stdio, through the official client.

For every server (Homeport, the echo floor, ConPort and basic-memory; peers are installed into
bench/.venvs/ on first use and skipped with a message when they cannot be installed) and every
repetition, in an order that rotates each repetition:

  1. start the server over stdio with `mcp.Client` and time the first successful call (start-up);
  2. warm up (W calls of each operation, not measured);
  3. run N writes, N reads of the latest 10, N searches, N sets and N gets, timing every call;
  4. read the server process's peak RSS (VmHWM in /proc/<pid>/status; the pid is the client's child).

Afterwards a soak (default 10,000 mixed calls) in one warm process per soak server gives the peak
RSS after that many calls. The report (medians over the repetitions, every figure also as a ratio
to the floor and to each peer, the targets of issue 6) is printed and written to
bench/results/<date>-stdio[-quick].md with the raw latencies in a .json beside it, and a PNG of
the latency distributions when matplotlib can be installed into bench/.venvs/plot.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    RESULTS,
    OtherLoad,
    child_pids,
    cmdline,
    descendants,
    describe_exception,
    fmt,
    machine_description,
    machine_markdown,
    md_table,
    median,
    percentile,
    proc_status_kb,
    ratio,
    wait_until_quiet,
)
from adapters import OPS, Adapter, OpError, all_adapters, ensure_venv

OP_TITLES = {
    "write": "write a decision",
    "read": "read latest 10",
    "search": "full-text search",
    "set": "set custom data",
    "get": "get custom data",
}


# ---------------------------------------------------------------------------------------------
# One server session: start, warm up, measure, read peak RSS.


async def _timed(adapter: Adapter, client: Any, op: str, i: int, timeout: float) -> float:
    t = time.perf_counter()
    with anyio.fail_after(timeout):
        await adapter.op(client, op, i)
    return (time.perf_counter() - t) * 1000


async def run_session(
    adapter: Adapter,
    work: Path,
    *,
    n: int,
    warmup: int,
    soak: int,
    op_timeout: float,
    startup_timeout: float,
    block_budget: float,
) -> dict[str, Any]:
    """Start `adapter`'s server in `work`, measure, stop it. Raises on failure."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "home").mkdir(exist_ok=True)
    params = adapter.params(work)
    before = child_pids(os.getpid())
    out: dict[str, Any] = {"server": adapter.name}
    with open(work / "server-stderr.log", "w") as errlog:
        t0 = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=startup_timeout) as client:
            last_error: Exception | None = None
            while True:
                try:
                    with anyio.fail_after(max(0.1, startup_timeout - (time.perf_counter() - t0))):
                        await adapter.first_call(client)
                    break
                except OpError as exc:  # not ready yet: retry until the start-up timeout
                    last_error = exc
                    if time.perf_counter() - t0 > startup_timeout:
                        raise OpError(f"no successful call within {startup_timeout} s: {last_error}") from exc
                    await anyio.sleep(0.05)
            out["startup_s"] = time.perf_counter() - t0
            new = sorted(child_pids(os.getpid()) - before)
            if not new:
                raise RuntimeError("could not find the server process among the client's children")
            pid = new[-1]
            out["pid_cmd"] = cmdline(pid)[:160]
            others = OtherLoad()
            others.start([pid])
            await adapter.check(client)

            for op in OPS:  # warm-up; writes first so reads and searches find data
                for i in range(warmup):
                    with anyio.fail_after(op_timeout):
                        await adapter.op(client, op, i)
            with anyio.fail_after(op_timeout):
                out["search_hits"] = adapter.hits(await adapter.op(client, "search", 0))

            out["lat_ms"], out["wall_s"] = {}, {}
            for op in OPS if n else ():
                lats: list[float] = []
                start = time.perf_counter()
                for k in range(n):
                    lats.append(await _timed(adapter, client, op, warmup + k, op_timeout))
                    if time.perf_counter() - start > block_budget:
                        print(
                            f"    {adapter.name}.{op}: stopped after {k + 1} calls (--block-budget {block_budget} s)",
                            flush=True,
                        )
                        break
                out["wall_s"][op] = time.perf_counter() - start
                out["lat_ms"][op] = lats
            out["calls"] = warmup * len(OPS) + 1 + sum(len(v) for v in out["lat_ms"].values()) + 1

            if soak:
                start = time.perf_counter()
                soak_lat: list[float] = []
                for k in range(soak):
                    op = OPS[k % len(OPS)]
                    soak_lat.append(await _timed(adapter, client, op, warmup + n + k // len(OPS), op_timeout))
                out["soak_s"] = time.perf_counter() - start
                out["soak_p50_ms"] = percentile(soak_lat, 50)
                out["soak_p95_ms"] = percentile(soak_lat, 95)
                out["calls"] += soak

            out["other_load"] = others.stop()
            out["hwm_kb"] = proc_status_kb(pid, "VmHWM")
            out["rss_kb"] = proc_status_kb(pid, "VmRSS")
            kids = descendants(pid)
            out["descendants"] = len(kids)
            out["descendants_hwm_kb"] = sum(proc_status_kb(k, "VmHWM") or 0 for k in kids)
    out["stderr_embedding_failures"] = _count(work / "server-stderr.log", "Failed to generate")
    return out


def _count(path: Path, needle: str) -> int:
    try:
        return path.read_text(errors="replace").count(needle)
    except OSError:
        return 0


def _stderr_tail(path: Path, lines: int = 8) -> str:
    try:
        text = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return "\n      ".join(text[-lines:])


# ---------------------------------------------------------------------------------------------
# Summaries.


def summarize(session: dict[str, Any]) -> dict[str, float]:
    s: dict[str, float] = {"startup_s": session["startup_s"], "rss_mb": (session.get("hwm_kb") or 0) / 1024}
    for op, lats in session.get("lat_ms", {}).items():
        s[f"{op}.p50"] = percentile(lats, 50)
        s[f"{op}.p95"] = percentile(lats, 95)
        wall = session["wall_s"][op]
        s[f"{op}.cps"] = len(lats) / wall if wall > 0 else float("nan")
    return s


METRICS: list[tuple[str, str, str]] = [  # key, label, better ("lower" | "higher")
    ("startup_s", "start-up to first successful call (s)", "lower"),
    ("rss_mb", "peak RSS after the workload (MB)", "lower"),
]
for _op in OPS:
    METRICS += [
        (f"{_op}.p50", f"{OP_TITLES[_op]}: p50 (ms)", "lower"),
        (f"{_op}.p95", f"{OP_TITLES[_op]}: p95 (ms)", "lower"),
        (f"{_op}.cps", f"{OP_TITLES[_op]}: calls/s", "higher"),
    ]


def build_report(
    args: argparse.Namespace,
    adapters: dict[str, Adapter],
    sessions: list[dict[str, Any]],
    soaks: dict[str, dict[str, Any]],
    skipped: dict[str, str],
    failures: list[str],
    machine: dict[str, str],
    started: str,
    elapsed: float,
) -> tuple[str, dict[str, dict[str, float]]]:
    names = [n for n in adapters if any(s["server"] == n for s in sessions)]
    per: dict[str, list[dict[str, float]]] = {n: [summarize(s) for s in sessions if s["server"] == n] for n in names}
    med: dict[str, dict[str, float]] = {
        n: {k: median(r.get(k, float("nan")) for r in per[n]) for k, _, _ in METRICS} for n in names
    }
    labels = {n: adapters[n].label for n in names}
    floor = next((n for n in names if adapters[n].role == "floor"), None)
    peers = [n for n in names if adapters[n].role == "peer"]

    out: list[str] = []
    out.append(f"# Homeport over stdio, side by side ({started})\n")
    out.append(f"Command: `python3 bench/run.py {' '.join(args.argv)}`".rstrip() + "  ")
    out.append(
        f"N = {args.ops} calls per operation per repetition, {args.warmup} warm-up calls per operation, "
        f"{args.reps} repetitions (server order rotated each repetition), medians over the repetitions. "
        f"Each call is one `Client.call_tool` over stdio (official `mcp` client, one warm server process "
        f"per server per repetition). Run took {elapsed / 60:.1f} min.\n"
    )
    out.append("## Machine\n")
    out.append(machine_markdown(machine) + "\n")
    out.append("## Servers\n")
    rows = []
    for n, a in adapters.items():
        state = "measured" if n in names else f"skipped: {skipped.get(n, 'not selected')}"
        rows.append([a.label, a.role, a.version, state])
    out.append(md_table(["server", "role", "version", "state"], rows, "llll") + "\n")
    for n in names:
        for note in adapters[n].notes:
            out.append(f"- {adapters[n].label}: {note}")
    if any(adapters[n].notes for n in names):
        out.append("")
    if failures:
        out.append("Failures:\n")
        out += [f"- {f}" for f in failures]
        out.append("")

    out.append("## Results (medians over the repetitions)\n")
    rows = []
    for key, label, _ in METRICS:
        rows.append([label] + [fmt(med[n][key]) for n in names])
    out.append(md_table(["metric"] + [labels[n] for n in names], rows) + "\n")
    loads = [s.get("other_load", 0.0) for s in sessions]
    if loads:
        out.append(
            f"CPU used by other processes during the sessions: median {median(loads):.2f} cores, max "
            f"{max(loads):.2f} cores (see the per-repetition table).\n"
        )

    if soaks:
        out.append(
            f"Peak RSS after a soak of {args.soak:,} mixed calls in one warm process "
            "(writes, reads, searches, sets, gets in turn; one run):\n"
        )
        rows = [
            [
                adapters[n].label,
                f"{s['calls']:,}",
                fmt((s.get("hwm_kb") or 0) / 1024),
                fmt((s.get("rss_kb") or 0) / 1024),
                fmt(s.get("soak_p50_ms")),
                fmt(s.get("soak_p95_ms")),
            ]
            for n, s in soaks.items()
        ]
        out.append(
            md_table(
                ["server", "calls served", "peak RSS (MB)", "RSS at end (MB)", "soak p50 (ms)", "soak p95 (ms)"], rows
            )
            + "\n"
        )

    refs = ([floor] if floor else []) + peers
    for ref in refs:
        others = [n for n in names if n != ref]
        out.append(f"## Every figure as a ratio to {labels[ref]}\n")
        out.append(
            "Value ÷ the same figure of " + labels[ref] + " (latency, start-up, RSS: below 1× is better; "
            "calls/s: above 1× is better).\n"
        )
        rows = [[label] + [ratio(med[n][key], med[ref][key]) for n in others] for key, label, _ in METRICS]
        out.append(md_table(["metric"] + [labels[n] for n in others], rows) + "\n")

    out.append("## Targets (issue 6)\n")
    out.append(md_table(["target", "measured", "verdict"], targets(med, soaks, floor, peers, adapters), "lll") + "\n")

    out.append("## Per repetition\n")
    rows = []
    for s in sessions:
        sm = summarize(s)
        rows.append(
            [
                s["rep"] + 1,
                adapters[s["server"]].label,
                fmt(s.get("other_load")),
                fmt(sm["startup_s"]),
                fmt(sm["rss_mb"]),
            ]
            + [f"{fmt(sm.get(op + '.p50'))} / {fmt(sm.get(op + '.p95'))}" for op in OPS]
        )
    out.append(
        "Other load = CPU used by every process except this client and the server under test while "
        "the session ran, in cores (the machine has " + str(os.cpu_count()) + "); high values mean "
        "another job competed for the CPU.\n"
    )
    out.append(
        md_table(
            ["rep", "server", "other load (cores)", "start-up (s)", "peak RSS (MB)"]
            + [f"{op} p50 / p95 (ms)" for op in OPS],
            rows,
            "rlrrr" + "r" * len(OPS),
        )
        + "\n"
    )
    return "\n".join(out), med


def targets(
    med: dict[str, dict[str, float]],
    soaks: dict[str, dict[str, Any]],
    floor: str | None,
    peers: list[str],
    adapters: dict[str, Adapter],
) -> list[list[str]]:
    rows: list[list[str]] = []
    hp = med.get("homeport")
    if hp is None:
        return [["Homeport was not measured", "–", "–"]]

    def verdict(ok: bool) -> str:
        return "meets" if ok else "**misses**"

    if floor:
        for op in OPS:
            r = hp[f"{op}.p50"] / med[floor][f"{op}.p50"]
            rows.append(
                [
                    f"{op} p50 within 1.25× of the floor",
                    f"{r:.2f}× ({fmt(hp[f'{op}.p50'])} vs {fmt(med[floor][f'{op}.p50'])} ms)",
                    verdict(r <= 1.25),
                ]
            )
    fl = med.get(floor) if floor else None
    noemb, installed = med.get("conport-noemb"), med.get("conport")
    for cp, label, factor in ((noemb, "ConPort without embeddings", 3), (installed, "ConPort as installed", 20)):
        if cp is None:
            rows.append([f"writes ≥ {factor}× {label} calls/s", "not measured", "–"])
            continue
        r = hp["write.cps"] / cp["write.cps"]
        bound = f"; the floor itself reaches {fl['write.cps'] / cp['write.cps']:.2f}×" if fl else ""
        rows.append(
            [
                f"writes ≥ {factor}× {label} calls/s",
                f"{r:.2f}× ({fmt(hp['write.cps'])} vs {fmt(cp['write.cps'])} calls/s{bound})",
                verdict(r >= factor),
            ]
        )
    for name in ("conport-noemb", "conport"):
        cp = med.get(name)
        if cp is None:
            continue
        for op in ("read", "search", "get"):
            r = hp[f"{op}.p50"] / cp[f"{op}.p50"]
            rows.append(
                [
                    f"{op} no slower than {adapters[name].label} (p50)",
                    f"{r:.2f}× ({fmt(hp[f'{op}.p50'])} vs {fmt(cp[f'{op}.p50'])} ms)",
                    verdict(r <= 1.0),
                ]
            )
    rows.append(["start-up < 1.2 s", f"{hp['startup_s']:.2f} s", verdict(hp["startup_s"] < 1.2)])
    s = soaks.get("homeport")
    if s:
        mb = (s.get("hwm_kb") or 0) / 1024
        rows.append([f"peak RSS < 150 MB after {s['calls']:,} calls", f"{mb:.0f} MB", verdict(mb < 150)])
    else:
        rows.append(
            [
                "peak RSS < 150 MB after 10,000 calls",
                f"{hp['rss_mb']:.0f} MB after the workload (no soak)",
                verdict(hp["rss_mb"] < 150),
            ]
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Plot (in the plot venv: matplotlib never enters the project's environment).

PLOT_SCRIPT = r"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
data = json.load(open(sys.argv[1]))
ops = data["ops"]; servers = data["servers"]; labels = data["labels"]
fig, axes = plt.subplots(1, len(ops), figsize=(3.2 * len(ops), 4.2), sharey=True)
for ax, op in zip(axes, ops):
    series = [data["latencies"][s].get(op, []) for s in servers]
    keep = [(labels[s], v) for s, v in zip(servers, series) if v]
    if not keep:
        continue
    ax.boxplot([v for _, v in keep], whis=(5, 95), showfliers=False)
    ax.set_xticks(range(1, len(keep) + 1), [k for k, _ in keep], rotation=30, ha="right")
    ax.set_yscale("log"); ax.set_title(op); ax.grid(True, axis="y", alpha=0.3)
axes[0].set_ylabel("ms per call (log scale)")
fig.suptitle(data["title"] + "; box p25-p75, line p50, whiskers p5-p95")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
"""


def make_plot(raw_path: Path, png: Path) -> str:
    venv, message = ensure_venv("plot", ["matplotlib"])
    if venv is None:
        return f"plot skipped: matplotlib could not be installed into bench/.venvs/plot ({message})"
    script = raw_path.with_suffix(".plot.py")
    script.write_text(PLOT_SCRIPT)
    try:
        done = subprocess.run(
            [str(venv / "bin" / "python"), str(script), str(raw_path), str(png)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        script.unlink(missing_ok=True)
    if done.returncode != 0:
        return f"plot skipped: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'failed'}"
    return f"plot: {png}"


# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  python3 bench/run.py --quick            # N=50, 3 reps, soak 2,000: a few minutes\n"
        "  python3 bench/run.py                    # N=300, 3 reps, soak 10,000: the full comparison\n"
        "  python3 bench/run.py --servers echo,homeport --reps 5\n",
    )
    p.add_argument("--quick", action="store_true", help="N=50 per operation, 10 warm-up calls, soak of 2,000 calls")
    p.add_argument(
        "-n", "--ops", type=int, default=None, help="calls per operation per repetition (default 300; --quick 50)"
    )
    p.add_argument("--reps", type=int, default=3, help="repetitions, at least 3 (default 3)")
    p.add_argument(
        "--warmup", type=int, default=None, help="unmeasured calls per operation first (default 20; --quick 10)"
    )
    p.add_argument(
        "--servers",
        default="echo,homeport,conport,conport-noemb,basic-memory",
        help="comma-separated: echo, homeport, conport, conport-noemb, basic-memory (default: all)",
    )
    p.add_argument(
        "--soak",
        type=int,
        default=None,
        help="mixed calls in one warm process for the peak-RSS target (default 10000; --quick 2000; 0: none)",
    )
    p.add_argument(
        "--soak-servers",
        default="homeport,echo,conport",
        help="servers that get the soak (default homeport,echo,conport: basic-memory's ~100 ms "
        "writes would make 10,000 calls take about 20 minutes)",
    )
    p.add_argument("--op-timeout", type=float, default=60.0, help="seconds one call may take (default 60)")
    p.add_argument(
        "--startup-timeout", type=float, default=180.0, help="seconds to the first successful call (default 180)"
    )
    p.add_argument(
        "--block-budget",
        type=float,
        default=600.0,
        help="seconds one block of N calls may take before it stops early (default 600)",
    )
    p.add_argument(
        "--quiet-wait",
        type=float,
        default=120.0,
        help="before each server session, wait up to this many seconds for other processes to use "
        "less than --quiet-threshold cores (default 120; 0: do not wait)",
    )
    p.add_argument(
        "--quiet-threshold",
        type=float,
        default=0.3,
        help="cores other processes may use for the machine to count as quiet (default 0.3)",
    )
    p.add_argument(
        "--no-install", action="store_true", help="skip peers that are not installed yet instead of installing them"
    )
    p.add_argument("--reinstall", action="store_true", help="recreate the peers' virtual environments")
    p.add_argument("--no-plot", action="store_true", help="do not draw the PNG")
    p.add_argument("--out", type=Path, default=RESULTS, help="results directory (default bench/results)")
    args = p.parse_args(argv)
    args.argv = argv
    if args.ops is None:
        args.ops = 50 if args.quick else 300
    if args.warmup is None:
        args.warmup = 10 if args.quick else 20
    if args.soak is None:
        args.soak = 2000 if args.quick else 10_000
    if args.reps < 3:
        p.error("--reps must be at least 3 (the report gives medians over repetitions)")
    return args


async def main_async(args: argparse.Namespace) -> int:
    started = time.strftime("%Y-%m-%d %H:%M")
    t_start = time.monotonic()
    known = all_adapters()
    wanted = [s.strip() for s in args.servers.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in known]
    if unknown:
        print(f"unknown server(s): {', '.join(unknown)}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    adapters = {n: known[n] for n in known if n in wanted}
    skipped: dict[str, str] = {}
    for name, adapter in list(adapters.items()):
        venv = Path(__file__).parent / ".venvs" / name.split("-noemb")[0]
        if args.no_install and adapter.role == "peer" and not venv.exists():
            skipped[name] = "not installed (--no-install)"
        else:
            why = adapter.ensure_installed(reinstall=args.reinstall)
            if why:
                skipped[name] = why
        if name in skipped:
            print(f"[skip] {name}: {skipped[name]}", flush=True)
            del adapters[name]
    if "homeport" not in adapters:
        print("Homeport is not among the servers; nothing to compare", file=sys.stderr)
        return 2

    machine = machine_description()
    root = Path(tempfile.mkdtemp(prefix="homeport-bench-"))
    sessions: list[dict[str, Any]] = []
    failures: list[str] = []
    order = list(adapters)
    try:
        for rep in range(args.reps):
            turn = order[rep % len(order) :] + order[: rep % len(order)]
            print(f"repetition {rep + 1}/{args.reps}: {' → '.join(turn)}", flush=True)
            for name in turn:
                work = root / f"{name}-r{rep}"
                if args.quiet_wait:
                    wait_until_quiet(args.quiet_threshold, args.quiet_wait)
                try:
                    s = await run_session(
                        adapters[name],
                        work,
                        n=args.ops,
                        warmup=args.warmup,
                        soak=0,
                        op_timeout=args.op_timeout,
                        startup_timeout=args.startup_timeout,
                        block_budget=args.block_budget,
                    )
                except Exception as exc:
                    msg = f"{name} rep {rep + 1}: {describe_exception(exc)}"
                    failures.append(msg)
                    print(f"  [fail] {msg}\n      {_stderr_tail(work / 'server-stderr.log')}", flush=True)
                    continue
                s["rep"] = rep
                sessions.append(s)
                sm = summarize(s)
                print(
                    f"  {name:13s} start-up {sm['startup_s']:.2f} s, peak RSS {sm['rss_mb']:.0f} MB, "
                    f"other load {s['other_load']:.2f} cores, p50 ms: "
                    + ", ".join(f"{op} {sm.get(op + '.p50', float('nan')):.2f}" for op in OPS),
                    flush=True,
                )
                shutil.rmtree(work, ignore_errors=True)
                await anyio.sleep(0.5)

        soaks: dict[str, dict[str, Any]] = {}
        if args.soak:
            for name in [s.strip() for s in args.soak_servers.split(",") if s.strip() in adapters]:
                print(f"soak: {name}, {args.soak:,} calls", flush=True)
                work = root / f"{name}-soak"
                if args.quiet_wait:
                    wait_until_quiet(args.quiet_threshold, args.quiet_wait)
                try:
                    soaks[name] = await run_session(
                        adapters[name],
                        work,
                        n=0,
                        warmup=args.warmup,
                        soak=args.soak,
                        op_timeout=args.op_timeout,
                        startup_timeout=args.startup_timeout,
                        block_budget=args.block_budget,
                    )
                    print(
                        f"  peak RSS {(soaks[name]['hwm_kb'] or 0) / 1024:.0f} MB after {soaks[name]['calls']:,} "
                        f"calls ({soaks[name]['soak_s']:.0f} s)",
                        flush=True,
                    )
                except Exception as exc:
                    failures.append(f"{name} soak: {describe_exception(exc)}")
                    print(f"  [fail] {failures[-1]}\n      {_stderr_tail(work / 'server-stderr.log')}", flush=True)
                shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    if not any(s["server"] == "homeport" for s in sessions):
        print("no successful Homeport session; no report", file=sys.stderr)
        return 1
    for name in adapters:
        fails = sum(1 for s in sessions if s["server"] == name and s.get("stderr_embedding_failures"))
        if fails:
            adapters[name].notes.append(f"its stderr logged failed embedding steps in {fails} of its sessions")
    report, _ = build_report(
        args, adapters, sessions, soaks, skipped, failures, machine, started, time.monotonic() - t_start
    )

    args.out.mkdir(parents=True, exist_ok=True)
    stem = time.strftime("%Y-%m-%d") + "-stdio" + ("-quick" if args.quick else "")
    md_path, raw_path, png = args.out / f"{stem}.md", args.out / f"{stem}.json", args.out / f"{stem}.png"
    names = [n for n in adapters if any(s["server"] == n for s in sessions)]
    raw = {
        "title": f"Latency per call over stdio, N={args.ops} x {args.reps} reps ({started})",
        "ops": list(OPS),
        "servers": names,
        "labels": {n: adapters[n].label for n in names},
        "machine": machine,
        "latencies": {
            n: {op: [x for s in sessions if s["server"] == n for x in s.get("lat_ms", {}).get(op, [])] for op in OPS}
            for n in names
        },
        "sessions": [{k: v for k, v in s.items() if k != "lat_ms"} for s in sessions],
        "soaks": soaks,
        "failures": failures,
        "skipped": skipped,
    }
    raw_path.write_text(json.dumps(raw, indent=1))
    if not args.no_plot:
        message = make_plot(raw_path, png)
        print(message)
        if message.startswith("plot:"):
            report += f"\n![latency distributions]({png.name})\n"
        else:
            report += f"\n{message}\n"
    md_path.write_text(report)
    print()
    print(report)
    print(f"written: {md_path}, {raw_path}" + (f", {png}" if png.exists() else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return anyio.run(main_async, args)


if __name__ == "__main__":
    sys.exit(main())
