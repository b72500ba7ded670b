"""The whole hostile corpus through `placement-stream replay`: every bad record dead-lettered with a reason that
names the problem, every good record decided right, no crash, no hang.

Replay runs in a child process (this module run as a script) that reports each line as it finishes, so a record
that hangs the processor is named and killed instead of blocking the suite; the run then goes on after it, on
a fresh processor given the baseline inventory again (see HANGS_PER_CLASS for what is then skipped).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import queue
import resource
import subprocess
import sys
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
import pytest

from streams.replay import Replayer, ReplayError
from streams.settings import Settings
from tests.faults.hostile_corpus import (
    CLASSES,
    AppDecision,
    HostileRecord,
    Outcome,
    PlacementDecision,
    build_corpus,
    letter_problem,
    summarise,
)

REPO = Path(__file__).resolve().parents[2]
QUEUES = Path(__file__).with_name("hostile_queues.yaml")
HANG_SECONDS = 30.0
"""A record still running after this long is a hang: the child is killed and the run resumes after it. A guard
against unbounded work (a backtracking regexp, an expression not stopped by its cost), far above what a bounded
record takes even on a loaded machine (the costliest, a stopped 1000 x 1000 comprehension, about 1.5 s when
quiet and 8 s at a load of 7 on 2 cores): speed is measured by the benchmarks, not asserted here."""
HANGS_PER_CLASS = 4
"""After this many hangs the rest of a class is not run (after one, the rest of its variant is not): bounds the
time a processor that hangs everywhere costs the suite."""
MEMORY_LIMIT_BYTES = 3 * 1024**3
"""Address-space cap of the child: an expression that builds a 10 GB string fails there instead of in the machine."""
_DLQ = "__connect.errors."


# --- the child: replay with a report per line ------------------------------------------------------------------
def _digest(text: str | None) -> str | None:
    """A short stand-in for subject keys and application ids, which can be 500 KB long."""
    if text is None:
        return None
    return hashlib.sha1(text.encode(errors="surrogatepass"), usedforsecurity=False).hexdigest()


def _summary(line: dict[str, Any]) -> dict[str, Any] | None:
    """What the checks need of one produced record (decisions can be megabytes: keep names, not pages)."""
    key = line["key"]
    headers = line.get("headers")
    if headers is not None:
        return {
            "t": "dead-letter",
            "key": None if key is None else key[:200],
            "stage": headers.get(_DLQ + "stage"),
            "message": headers.get(_DLQ + "exception.message", "")[:2000],
            "error": headers.get(_DLQ + "exception.class.name"),
        }
    value = line["value"]
    if not isinstance(value, dict) or not str(value.get("type", "")).endswith(".v1"):
        return None
    kind, data = value["type"], value.get("data") or {}
    if kind == "placement.decided.v1":
        clusters = sorted(
            {d["clusterName"] for page in data.get("placementDecisions", []) for d in page["status"]["decisions"]}
        )
        return {"t": kind, "subject": _digest(key), "clusters": clusters, "deleted": data.get("deleted", False)}
    if kind in ("application.placed.v1", "application.rejected.v1"):
        app = _digest(data.get("applicationId"))
        return {"t": kind, "app": app, "queue": data.get("queue"), "reason": str(data.get("reason", ""))[:300]}
    return None


def _drive(lines: Iterable[bytes], queue_config: Path, report: IO[bytes]) -> None:
    """Replay `index<TAB>line` lines one by one, writing a start and an end report for each."""
    out = io.BytesIO()
    warnings: list[str] = []
    replayer = Replayer(Settings(), out, queue_config=queue_config, warn=warnings.append)
    for entry in lines:
        index, _, line = entry.rstrip(b"\n").partition(b"\t")
        report.write(orjson.dumps({"start": int(index)}) + b"\n")
        report.flush()
        crash = None
        started = time.perf_counter()
        try:
            replayer.feed(line)
        except ReplayError as exc:
            warnings.append(str(exc))
        except BaseException:  # a crash is reported, and the run goes on as far as the processor still can
            crash = traceback.format_exc(limit=6)[-3000:]
        seconds = time.perf_counter() - started
        produced = [_summary(orjson.loads(raw)) for raw in out.getvalue().splitlines()]
        out.seek(0)
        out.truncate()
        result = {"end": int(index), "seconds": seconds, "out": [p for p in produced if p], "crash": crash}
        result["warnings"] = warnings[:]
        warnings.clear()
        report.write(orjson.dumps(result) + b"\n")
        report.flush()


# --- the parent: run, watch, resume ---------------------------------------------------------------------------
@dataclass
class Replayed:
    """Per corpus index: the child's end report, or why there is none."""

    results: dict[int, dict[str, Any]] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)
    restarts: int = 0


def _run_child(entries: list[bytes], replayed: Replayed, evaluated: set[int]) -> tuple[int, str] | None:
    """Run one child over `entries` and store the reports of `evaluated` indexes. Returns the index of the record
    that hung or killed the child (-1: between records) and what happened, or None when every entry was replayed."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.test_hostile_replay", str(QUEUES)],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdin is not None and child.stdout is not None
    reports: queue.Queue[bytes] = queue.Queue()

    def feed(stdin: IO[bytes]) -> None:
        with contextlib.suppress(OSError):  # the child was killed: the rest is not needed
            for entry in entries:
                stdin.write(entry + b"\n")
            stdin.close()

    def read(stdout: IO[bytes]) -> None:
        for raw in stdout:
            reports.put(raw)
        reports.put(b"")

    threads = [threading.Thread(target=feed, args=(child.stdin,)), threading.Thread(target=read, args=(child.stdout,))]
    for thread in threads:
        thread.start()
    running: int | None = None
    try:
        while True:
            try:
                raw = reports.get(timeout=HANG_SECONDS)
            except queue.Empty:
                return (-1 if running is None else running), f"hung: still running after {HANG_SECONDS:.0f} s"
            if not raw:
                child.wait()
                return None if running is None else (running, f"killed the replay process (exit {child.returncode})")
            report = orjson.loads(raw)
            if "start" in report:
                running = report["start"]
            else:
                running = None
                if report["end"] in evaluated:
                    replayed.results[report["end"]] = report
    finally:
        child.kill()
        child.wait()
        for thread in threads:
            thread.join(timeout=10)
        for stream in (child.stdin, child.stdout):
            with contextlib.suppress(OSError):
                stream.close()


def replay_corpus(corpus: list[HostileRecord]) -> Replayed:
    """Replay the corpus in children, resuming after each hang on a fresh child given the baseline again."""
    replayed = Replayed()
    lines = {r.index: f"{r.index}\t".encode() + r.replay_line() for r in corpus}
    baseline = [r.index for r in corpus if r.baseline]
    hangs: dict[str, int] = defaultdict(int)
    todo = [r.index for r in corpus]
    while todo:
        evaluated = set(todo)
        stopped = _run_child([lines[i] for i in dict.fromkeys([*baseline, *todo])], replayed, evaluated)
        if stopped is None:
            break
        replayed.restarts += 1
        hung, why = stopped
        if hung not in evaluated:
            for i in todo:
                replayed.missing.setdefault(i, f"not run: the replay child {why} outside the records checked")
            break
        kind, variant = corpus[hung].kind, corpus[hung].variant
        hangs[kind] += 1
        replayed.missing[hung] = why
        todo = [i for i in todo if i not in replayed.results and i != hung]
        for i in todo:
            if corpus[i].kind == kind and corpus[i].variant == variant:
                replayed.missing[i] = f"not run: #{hung} of the same variant {why}"
            elif corpus[i].kind == kind and hangs[kind] >= HANGS_PER_CLASS:
                replayed.missing[i] = f"not run: {HANGS_PER_CLASS} records of this class hung"
        todo = [i for i in todo if i not in replayed.missing]
    for record in corpus:
        if record.index not in replayed.results:
            replayed.missing.setdefault(record.index, "no report: the child exited early")
    return replayed


# --- checks ---------------------------------------------------------------------------------------------------
def verdict(record: HostileRecord, report: dict[str, Any]) -> str | None:
    """Why the record's outcome is wrong, or None when it is right."""
    if report["crash"]:
        return "crashed: " + str(report["crash"]).strip().splitlines()[-1][:300]
    if report["warnings"]:
        return f"replay refused the line: {report['warnings'][0][:300]}"
    produced = report["out"]
    letters = [p for p in produced if p["t"] == "dead-letter"]
    if record.expected(replay=True) is Outcome.DEAD_LETTER:
        if not letters:
            shown = "; ".join(f"{p['t']} {p.get('clusters') or p.get('queue') or ''}".strip() for p in produced[:3])
            return f"not dead-lettered (produced: {shown or 'nothing'})"
        if len(letters) > 1:
            return f"dead-lettered {len(letters)} times"
        return letter_problem(record, letters[0]["stage"], letters[0]["message"])
    if letters:
        return f"dead-lettered at {letters[0]['stage']}: {letters[0]['message'][:300]}"
    return decision_problem(record.check, produced)


def decision_problem(check: PlacementDecision | AppDecision | None, produced: list[dict[str, Any]]) -> str | None:
    """What is wrong with the decisions published for a good record (the last one per subject counts)."""
    if isinstance(check, PlacementDecision):
        decided = [p for p in produced if p["t"] == "placement.decided.v1" and p["subject"] == _digest(check.subject)]
        if not decided:
            return "no placement.decided for the placement"
        got = decided[-1]
        if got["deleted"]:
            return "decided as deleted"
        if check.clusters is not None and set(got["clusters"]) != check.clusters:
            return f"selected {sorted(got['clusters'])}, expected {sorted(check.clusters)}"
    elif isinstance(check, AppDecision):
        app = _digest(check.application_id)
        decided = [p for p in produced if p["t"].startswith("application.") and p["app"] == app]
        if not decided:
            return "no application.placed or application.rejected for the application"
        got = decided[-1]
        if check.queue is None and got["t"] != "application.rejected.v1":
            return f"placed in {got['queue']}, expected a rejection"
        if check.queue is not None and got["queue"] != check.queue:
            return f"expected {check.queue}, got {got['t']} {got['queue'] or got['reason']!r}"
    return None


# --- tests ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus() -> list[HostileRecord]:
    return build_corpus()


@pytest.fixture(scope="module")
def replayed(corpus: list[HostileRecord]) -> Replayed:
    return replay_corpus(corpus)


def test_the_corpus_is_large_varied_and_deterministic(corpus: list[HostileRecord]) -> None:
    assert len(corpus) >= 2000
    assert len({r.kind for r in corpus} - {"good"}) >= 15
    assert sum(r.bad for r in corpus) >= 800 and sum(not r.bad for r in corpus) >= 800
    again = build_corpus()
    assert [(r.kind, r.variant, r.topic, r.key, r.value) for r in again] == [
        (r.kind, r.variant, r.topic, r.key, r.value) for r in corpus
    ], "the same seed must give the same records"


@pytest.mark.parametrize("kind", list(CLASSES))
def test_each_record_of_the_class_gets_its_outcome(corpus: list[HostileRecord], replayed: Replayed, kind: str) -> None:
    records = [r for r in corpus if r.kind == kind]
    failures: list[tuple[HostileRecord, str]] = []
    for record in records:
        report = replayed.results.get(record.index)
        if report is None:
            failures.append((record, replayed.missing[record.index]))
            continue
        problem = verdict(record, report)
        if problem is not None:
            failures.append((record, problem))
    assert not failures, summarise(failures, len(records))


def test_the_run_completes_without_crash_or_hang(corpus: list[HostileRecord], replayed: Replayed) -> None:
    slowest = max(replayed.results.values(), key=lambda r: r["seconds"], default=None)
    if slowest is not None:
        record = corpus[slowest["end"]]
        print(f"longest single-record processing time: {slowest['seconds']:.3f} s ({record.label()})")
    crashed = [corpus[i].label() for i, r in replayed.results.items() if r["crash"]]
    assert not crashed, f"{len(crashed)} records crashed the replay, e.g. {crashed[:5]}"
    assert replayed.restarts == 0, f"{len(replayed.missing)} records not replayed: {list(replayed.missing.items())[:5]}"
    assert len(replayed.results) == len(corpus)


if __name__ == "__main__":  # the replay child: `index<TAB>line` on stdin, reports on stdout
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    _drive(sys.stdin.buffer, Path(sys.argv[1]), sys.stdout.buffer)
