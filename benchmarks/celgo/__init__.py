"""The real cel-go with OCM's placement CEL environment as a shared library, for measurements only.

`golib/` is a small Go program built with `go build -buildmode=c-shared` over `github.com/google/cel-go` and
OCM's own CEL library (`open-cluster-management.io/sdk-go/pkg/cel`: `ManagedClusterLib` with `scores()`,
`JsonLib` with `parseJSON()`, the base options with semver and quantity, OCM's cost estimator, the Kubernetes
per-call limit), all from the Go module proxy. It is built on first use into
`$PLACEMENT_CACHE_DIR/celgo/<hash of the Go sources>/`, never by the test suite or the bootstrap, and the product
never loads it: `python -m benchmarks.celgo` compares it with the project's evaluator.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from localbroker.fetch import default_cache_root, exclusive

__all__ = ["FALSE", "NON_BOOL", "STOPPED", "TRUE", "CelGo", "CelGoError", "Evaluation", "library_path"]

SOURCES = Path(__file__).parent / "golib"
TRUE, FALSE, NON_BOOL, ERROR, STOPPED, BAD_ARGUMENTS = 1, 0, 2, -1, -2, -3
OUTCOMES = {TRUE: "true", FALSE: "false", NON_BOOL: "non-bool", ERROR: "error", STOPPED: "stopped"}


class CelGoError(RuntimeError):
    """The library could not be built, or refused its input."""


def _source_hash() -> str:
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((SOURCES / name).read_bytes())
    return digest.hexdigest()[:12]


def library_path(cache_root: Path | None = None) -> Path:
    """The built library, built once per version of the Go sources (about a minute on two cores)."""
    folder = (cache_root or default_cache_root()) / "celgo" / _source_hash()
    library = folder / "libcelgo.so"
    if library.is_file():
        return library
    with exclusive(folder.with_suffix(".lock")):
        if library.is_file():
            return library
        go = shutil.which("go")
        if go is None:
            raise CelGoError("`go` is not on PATH: the cel-go library is built from the Go module proxy")
        staging = folder.with_name(f"{folder.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        command = [go, "build", "-buildmode=c-shared", "-trimpath", "-o", str(staging / library.name), "."]
        started = time.monotonic()
        print("celgo: building the cel-go library (about a minute, once)", file=sys.stderr)
        env = {**os.environ, "GOFLAGS": "-buildvcs=false -mod=readonly"}
        done = subprocess.run(command, cwd=SOURCES, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
            raise CelGoError(f"{' '.join(command)} failed (exit {done.returncode}):\n{tail}")
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
        print(f"celgo: built in {time.monotonic() - started:.0f} s into {folder}", file=sys.stderr)
    return library


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One cel-go evaluation: its outcome (`OUTCOMES`), the actual cost cel-go tracked, and the error text or the
    type name of a non-boolean value."""

    outcome: int
    cost: int
    message: str

    @property
    def kind(self) -> str:
        return OUTCOMES.get(self.outcome, "bad arguments")


class CelGo:
    """The loaded library: programs and kept clusters are handles into it, valid for the process's lifetime."""

    def __init__(self, path: Path | None = None) -> None:
        lib = ctypes.CDLL(str(path or library_path()))
        text, size, out = ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)
        cost = ctypes.POINTER(ctypes.c_longlong)
        lib.celgo_free.argtypes, lib.celgo_free.restype = [ctypes.c_void_p], None
        lib.celgo_set_scores.argtypes, lib.celgo_set_scores.restype = [text, size, out], ctypes.c_int
        lib.celgo_compile.argtypes = [text, size, ctypes.c_longlong, out]
        lib.celgo_compile.restype = ctypes.c_int
        lib.celgo_cluster.argtypes, lib.celgo_cluster.restype = [text, size, out], ctypes.c_int
        lib.celgo_eval.argtypes, lib.celgo_eval.restype = [size, size, cost, out], ctypes.c_int
        lib.celgo_eval_json.argtypes = [size, text, size, cost, out]
        lib.celgo_eval_json.restype = ctypes.c_int
        self._lib = lib
        self._cost = ctypes.c_longlong()
        self._message = ctypes.c_void_p()

    def _take_message(self) -> str:
        if not self._message.value:
            return ""
        text = ctypes.string_at(self._message.value).decode()
        self._lib.celgo_free(self._message.value)
        self._message.value = None
        return text

    def set_scores(self, objects: list[dict[str, Any]]) -> None:
        """Replaces the AddOnPlacementScore objects `scores()` reads (the API JSON of each)."""
        data = orjson.dumps(objects)
        if self._lib.celgo_set_scores(data, len(data), ctypes.byref(self._message)) < 0:
            raise CelGoError(self._take_message())

    def compile(self, expression: str, limit: int = -1) -> int:
        """A program handle, compiled as OCM compiles a selector's expression; `limit` -1 is upstream's per-call
        cost limit. Raises `CelGoError` with cel-go's issue text."""
        data = expression.encode()
        handle: int = self._lib.celgo_compile(data, len(data), limit, ctypes.byref(self._message))
        if handle < 0:
            raise CelGoError(self._take_message())
        return handle

    def cluster(self, document: dict[str, Any]) -> int:
        """A handle on a ManagedCluster (its API JSON), converted once as OCM converts it."""
        data = orjson.dumps(document)
        handle: int = self._lib.celgo_cluster(data, len(data), ctypes.byref(self._message))
        if handle < 0:
            raise CelGoError(self._take_message())
        return handle

    def evaluate(self, program: int, cluster: int) -> Evaluation:
        outcome = self._lib.celgo_eval(program, cluster, ctypes.byref(self._cost), ctypes.byref(self._message))
        return Evaluation(outcome, self._cost.value, self._take_message())

    def matches_json(self, program: int, data: bytes) -> bool:
        """Whether the program is true on a cluster's API JSON, decoded and converted in this call: the path a
        caller holding only the cluster's bytes would take."""
        outcome = self._lib.celgo_eval_json(program, data, len(data), None, ctypes.byref(self._message))
        if self._message.value:
            self._take_message()
        return bool(outcome == TRUE)

    def matches(self, program: int, cluster: int) -> bool:
        """Whether the program is true on a kept cluster."""
        outcome = self._lib.celgo_eval(program, cluster, None, ctypes.byref(self._message))
        if self._message.value:
            self._take_message()
        return bool(outcome == TRUE)
