"""How long the shell's memory commands take as whole processes, beside `python -c pass` (issue 30).

    python3 bench/shell_commands.py --before /tmp/wt-before --after /tmp/wt-after
    python3 bench/shell_commands.py --before /tmp/wt-before --after /tmp/wt-after --rounds 30 --out FILE.md

`--before` and `--after` are two checkouts of Homeport (`git worktree add /tmp/wt-before COMMIT`); each
runs with `PYTHONPATH=<checkout>/src`, as `python -c "from homeport.cli import main; main()" ARGS`,
what the `homeport` console script runs. For each checkout, a project of its own (10 decisions, 5
progress entries) is used two ways:

    daemon on    `homeport daemon start` of that checkout owns the project (its own state directory)
    daemon off   a state directory with no daemon: the command opens the store itself

Every round runs each (checkout, daemon, command) once and `python -c pass` once, in turn, so the
machine's drift touches all alike; medians over the rounds are printed, with each median's ratio to
`python -c pass` and after/before. Wall seconds are what the user waits. CPU seconds and peak RSS are
the calling process's own (`os.wait4`): with the daemon on, the work is done in the daemon and, after
this change, in a child of its command runner, which are not the caller's and are not in those columns.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import environ_without_homeport, machine_description, machine_markdown, md_table, median, ratio

BOOT = "from homeport.cli import main; main()"
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("decisions", "list"),
    ("progress", "list"),
    ("search", "WAL"),
    ("ready",),
)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, int]:
    """(wall s, cpu s, peak RSS KiB, exit status) of one whole process."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, process.returncode


class Checkout:
    def __init__(self, name: str, root: Path, tmp: Path) -> None:
        self.name, self.src = name, (root / "src").resolve()
        self.project = tmp / name / "app"
        (self.project / ".git").mkdir(parents=True)
        self.on = environ_without_homeport(tmp / name / "st-on")
        self.off = environ_without_homeport(tmp / name / "st-off")
        for env in (self.on, self.off):
            env["PYTHONPATH"] = str(self.src)

    def homeport(self, *args: str, env: dict[str, str], check: bool = True) -> None:
        done = subprocess.run([sys.executable, "-c", BOOT, *args], cwd=self.project, env=env, capture_output=True)
        if check and done.returncode != 0:
            sys.exit(f"{self.name}: homeport {' '.join(args)} exited {done.returncode}: {done.stderr.decode()}")

    def seed(self) -> None:
        for i in range(10):
            self.homeport("decisions", "add", f"Decision {i} about WAL", "--rationale", "r", env=self.off)
        for i in range(5):
            self.homeport("progress", "add", "TODO", f"Task {i}", env=self.off)

    def start(self) -> None:
        self.homeport("daemon", "start", "--allow-root", str(self.project), env=self.on)
        sock = Path(self.on["HOMEPORT_STATE_DIR"], "daemon", "commands.sock")
        deadline = time.monotonic() + 60
        while not sock.exists() and time.monotonic() < deadline and self.has_runner():
            time.sleep(0.1)

    def has_runner(self) -> bool:
        return (self.src / "homeport" / "cli" / "_command_runner.py").exists()

    def stop(self) -> None:
        self.homeport("daemon", "stop", env=self.on, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout of the code before")
    parser.add_argument("--after", type=Path, required=True, help="checkout of the code after")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hp-shell-") as tmp_name:
        tmp = Path(tmp_name).resolve()
        checkouts = [Checkout("before", args.before, tmp), Checkout("after", args.after, tmp)]
        for checkout in checkouts:
            checkout.seed()
            checkout.start()
        baseline_env = environ_without_homeport(tmp / "st-none")
        cases = [(c, mode, command) for command in COMMANDS for c in checkouts for mode in ("on", "off")]
        samples: dict[tuple[str, str, tuple[str, ...]], list[tuple[float, float, int]]] = {}
        baseline: list[tuple[float, float, int]] = []
        failures: dict[tuple[str, str, tuple[str, ...]], int] = {}
        try:
            for round_ in range(args.warmup + args.rounds):
                counted = round_ >= args.warmup
                wall, cpu, rss, _ = _run([sys.executable, "-c", "pass"], baseline_env, tmp)
                if counted:
                    baseline.append((wall, cpu, rss))
                for checkout, mode, command in cases:
                    env = checkout.on if mode == "on" else checkout.off
                    argv = [sys.executable, "-c", BOOT, *command]
                    wall, cpu, rss, code = _run(argv, env, checkout.project)
                    key = (checkout.name, mode, command)
                    if code != 0:
                        failures[key] = code
                    if counted:
                        samples.setdefault(key, []).append((wall, cpu, rss))
        finally:
            for checkout in checkouts:
                checkout.stop()

    report = _report(args, samples, baseline, failures)
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")


def _report(
    args: argparse.Namespace,
    samples: dict[tuple[str, str, tuple[str, ...]], list[tuple[float, float, int]]],
    baseline: list[tuple[float, float, int]],
    failures: dict[tuple[str, str, tuple[str, ...]], int],
) -> str:
    base_wall = median(s[0] for s in baseline)
    base_cpu = median(s[1] for s in baseline)
    base_peak = median(s[2] for s in baseline) / 1024
    rows = [("`python -c pass`", "", f"{base_wall:.3f}", "1.00×", "", f"{base_cpu:.3f}", f"{base_peak:.0f}")]
    for (name, mode, command), values in samples.items():
        wall = median(v[0] for v in values)
        before = samples.get(("before", mode, command))
        vs_before = ratio(wall, median(v[0] for v in before)) if name == "after" and before else ""
        rows.append(
            (
                f"`homeport {' '.join(command)}` {name}",
                f"daemon {mode}",
                f"{wall:.3f}",
                ratio(wall, base_wall),
                vs_before,
                f"{median(v[1] for v in values):.3f}",
                f"{median(v[2] for v in values) / 1024:.0f}",
            )
        )
    header = ["command", "", "wall s (median)", "÷ python -c pass", "after ÷ before", "caller cpu s", "caller peak MiB"]
    lines = [
        f"    python3 bench/shell_commands.py {' '.join(shlex.quote(a) for a in sys.argv[1:])}",
        "",
        f"{args.rounds} counted rounds after {args.warmup} warm-up rounds, each (checkout, daemon, command) and "
        "`python -c pass` once per round, in turn.",
        "",
        md_table(header, rows, align="llrrrrr"),
        "",
        machine_markdown(machine_description()),
    ]
    if failures:
        lines += ["", "Runs that exited non-zero: " + ", ".join(f"{k}: {v}" for k, v in failures.items())]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
