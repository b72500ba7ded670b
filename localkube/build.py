"""Build the API server and its storage from the Go module proxy into a versioned cache, once.

`go install module@version` builds with the module's own go.mod (its pinned dependencies and replace-free
requirements), so nothing upstream is vendored here. The binary goes to a staging folder and is renamed into
place with a marker only when the build succeeded, so an interrupted build is redone, and a cached one is reused
without touching the network or the Go toolchain.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from localbroker.fetch import default_cache_root, exclusive
from localkube.errors import KubeBuildError

__all__ = ["APISERVER", "COMPONENTS", "KINE", "Component", "ensure_binary", "go_tool", "kube_cache"]

MARKER_NAME = ".complete"


@dataclass(frozen=True, slots=True)
class Component:
    """One Go program: its binary name, the package `go install` builds and the module version."""

    name: str
    package: str
    version: str

    def folder(self, cache_root: Path) -> Path:
        return kube_cache(cache_root) / f"{self.name}-{self.version}"

    def binary(self, cache_root: Path) -> Path:
        return self.folder(cache_root) / "bin" / self.name


APISERVER = Component("apiextensions-apiserver", "k8s.io/apiextensions-apiserver", "v0.34.2")
"""A generic API server serving CustomResourceDefinitions: all the OCM kinds are CRDs, so nothing else is needed."""
KINE = Component("kine", "github.com/k3s-io/kine", "v0.14.6")
"""The etcd API over SQLite, so the API server's storage is one file and one small process."""
COMPONENTS = (KINE, APISERVER)


def kube_cache(cache_root: Path | None = None) -> Path:
    """`<cache>/kube`: the binaries and CRDs, beside the Kafka jars."""
    return (cache_root if cache_root is not None else default_cache_root()).resolve() / "kube"


def go_tool() -> str:
    found = shutil.which("go")
    if found is None:
        raise KubeBuildError("`go` is not on PATH: the local API server is built from the Go module proxy (Go 1.24+)")
    return found


def _is_complete(component: Component, cache_root: Path) -> bool:
    return (component.folder(cache_root) / MARKER_NAME).is_file() and component.binary(cache_root).is_file()


def _build(component: Component, cache_root: Path) -> None:
    folder = component.folder(cache_root)
    staging = folder.with_name(f"{folder.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    (staging / "bin").mkdir(parents=True)
    env = {**os.environ, "GOBIN": str(staging / "bin"), "GOFLAGS": "-buildvcs=false"}
    command = [go_tool(), "install", f"{component.package}@{component.version}"]
    started = time.monotonic()
    print(f"localkube: building {component.package}@{component.version} (minutes, once)", file=sys.stderr)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=staging)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise KubeBuildError(f"{' '.join(command)} failed (exit {done.returncode}):\n{tail}")
    staging.rename(folder)
    (folder / MARKER_NAME).write_text(f"{component.package} {component.version}\n")
    elapsed = time.monotonic() - started
    print(f"localkube: built {component.name} {component.version} in {elapsed:.0f} s into {folder}", file=sys.stderr)


def ensure_binary(component: Component, cache_root: Path | None = None) -> Path:
    """The component's binary, built on first use only."""
    root = kube_cache(cache_root).parent
    if not _is_complete(component, root):
        with exclusive(kube_cache(root) / f"{component.name}-{component.version}.lock"):
            if not _is_complete(component, root):  # another process may have built it while we waited
                _build(component, root)
    return component.binary(root)
