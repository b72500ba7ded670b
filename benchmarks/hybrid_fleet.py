"""A hybrid PlacementRule without advisors over a large fleet, through `placement-stream replay`.

The input is N ManagedClusters labelled `fleet: hybrid`, then one rule with `replicas: 1` selecting them and no
advisors: the rule whose rounds once grew its output with the cube of N. Each run replays the input in a child
process (every record shown, changelog included) and reports its wall and CPU time (the CPU time is steadier
on a shared machine), its peak resident memory, the bytes and records it wrote and its largest record;
`--baseline` also replays the clusters alone, so the rule's own share of the time and memory can be read off.

Usage: `python -m benchmarks.hybrid_fleet [--clusters 100,1000,5000] [--repeat 3] [--checkout DIR]
[--write FILE]`. `--checkout` replays with another checkout's sources (its `.venv` when it has one), to compare
a branch with main. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from benchmarks.support import print_table

__all__ = ["Run", "fleet_lines", "main", "replay_once"]

RULE_KEY = "PlacementRule/apps/fleet"
_STAMP = "2026-01-01T00:00:00Z"


def _event(kind: str, event_id: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": event_id,
        "source": "/benchmarks/hybrid-fleet",
        "type": f"{kind}.v1",
        "time": _STAMP,
        "datacontenttype": "application/json",
        "data": data,
    }


def cluster_name(index: int) -> str:
    """The fleet's cluster names sort in index order, so the last one is the rule's expected decision (H7)."""
    return f"fleet-{index:05d}"


def fleet_lines(clusters: int, *, rule: bool = True) -> Iterator[bytes]:
    """Replay input: the clusters, then (unless `rule` is false) the advisor-less `replicas: 1` rule."""
    for i in range(clusters):
        name = cluster_name(i)
        data = {"metadata": {"name": name, "labels": {"fleet": "hybrid"}}}
        value = _event("managedcluster.applied", f"mc-{i}", data)
        yield orjson.dumps({"topic": "placement.cluster-status", "key": f"ManagedCluster/{name}", "value": value})
        yield b"\n"
    if rule:
        spec = {"replicas": 1, "targetLabels": {"matchLabels": {"fleet": "hybrid"}}}
        data = {"metadata": {"name": "fleet", "namespace": "apps", "generation": 1}, "spec": spec}
        value = _event("placementrule.applied", "rule-fleet", data)
        yield orjson.dumps({"topic": "placement.submissions", "key": RULE_KEY, "value": value}) + b"\n"


@dataclass(frozen=True)
class Run:
    """One replay: wall and CPU seconds, peak RSS (MiB), output bytes and records, the largest record, and the
    decision."""

    seconds: float
    cpu_seconds: float
    peak_mib: float
    output_bytes: int
    records: int
    largest: int
    decision: list[str]
    status: str


def _python(checkout: Path) -> str:
    venv = checkout / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _limit(memory_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def replay_once(path: Path, checkout: Path, *, timeout: float, memory_bytes: int) -> Run:
    """Replay `path` with `checkout`'s sources in a child capped at `memory_bytes` and `timeout` seconds."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PLACEMENT_NATIVE": os.environ.get("PLACEMENT_NATIVE", "0")}
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(
            [_python(checkout), "-m", "streams", "replay", "--all", str(path)],
            cwd=checkout,
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
            preexec_fn=lambda: _limit(memory_bytes),  # noqa: PLW1509 (a child with no threads yet)
        )
        killed = threading.Timer(timeout, child.kill)
        killed.start()
        stats = _read(child.stdout)
        _, code, usage = os.wait4(child.pid, 0)
        child.returncode = code
        killed.cancel()
        seconds = time.perf_counter() - started
        errors.seek(0)
        said = errors.read().decode(errors="replace").strip().splitlines()
    status = "ok" if code == 0 else ("killed (timeout)" if seconds >= timeout else f"exit {code >> 8}")
    if code != 0 and said:
        status += f": {said[0][:80]}"
    return Run(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, *stats, status=status)


def _read(stdout: IO[bytes] | None) -> tuple[int, int, int, list[str]]:
    """Bytes, records, the largest record, and the rule's last published decision."""
    assert stdout is not None
    total = records = largest = 0
    decision: list[str] = []
    for line in stdout:
        total += len(line)
        records += 1
        largest = max(largest, len(line) - 1)
        if b"placementrule.decided.v1" in line:
            value = orjson.loads(line)["value"]
            if value and value.get("type") == "placementrule.decided.v1":
                decision = [d["name"] for d in value["data"].get("decisions", [])]
    stdout.close()
    return total, records, largest, decision


def _row(label: str, runs: list[Run]) -> list[object]:
    last = runs[-1]
    return [
        label,
        last.status,
        f"{statistics.median(r.seconds for r in runs):.2f}",
        f"{statistics.median(r.cpu_seconds for r in runs):.2f}",
        f"{statistics.median(r.peak_mib for r in runs):.0f}",
        f"{last.output_bytes:,}",
        last.records,
        f"{last.largest:,}",
        ",".join(last.decision) or "-",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default="100,1000,5000", help="comma-separated fleet sizes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; figures are medians")
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--baseline", action="store_true", help="also replay the clusters without the rule")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is killed")
    parser.add_argument("--memory-gib", type=float, default=4.0, help="address-space cap of a run")
    parser.add_argument("--write", type=Path, help="only write the input for the first size to this file")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.clusters.split(",")]
    if args.write is not None:
        args.write.write_bytes(b"".join(fleet_lines(sizes[0])))
        return
    header = [
        "input",
        "status",
        "seconds",
        "CPU s",
        "peak MiB",
        "output bytes",
        "records",
        "largest record",
        "decision",
    ]
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="hybrid-fleet-") as tmp:
        for size in sizes:
            for rule in (False, True) if args.baseline else (True,):
                path = Path(tmp) / f"fleet-{size}-{rule}.jsonl"
                path.write_bytes(b"".join(fleet_lines(size, rule=rule)))
                runs = []
                for _ in range(args.repeat):
                    runs.append(
                        replay_once(
                            path, args.checkout, timeout=args.timeout, memory_bytes=int(args.memory_gib * 1024**3)
                        )
                    )
                    if runs[-1].status != "ok":
                        break
                rows.append(_row(f"{size} clusters" + ("" if rule else ", no rule"), runs))
    print_table(f"hybrid rule without advisors, replicas 1 ({args.checkout})", header, rows)


if __name__ == "__main__":
    main()
