"""Resolve the Apache Kafka broker classpath from Maven Central into a local, versioned cache.

The broker is a plain JVM classpath, so no tarball or Docker image is needed: Maven copies the runtime
closure of ``kafka_2.13`` (plus the SLF4J binding Kafka only ships in its tarball) into
``<cache>/kafka/<version>/libs`` once. A marker file is written only after a complete copy, so an
interrupted download is detected and redone on the next call.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localbroker.errors import LocalBrokerError

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "FALLBACK_KAFKA_VERSION",
    "KafkaLibsError",
    "check_slf4j_binding",
    "default_cache_root",
    "ensure_kafka_libs",
    "exclusive",
    "libs_dir_for",
]

DEFAULT_KAFKA_VERSION = "4.4.0"
FALLBACK_KAFKA_VERSION = "4.3.1"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
MARKER_NAME = ".complete"
# log4j-core version each Kafka release pulls (dependency:tree without our two log4j entries); the POM's
# binding must match it. Unlisted versions use the POM default.
LOG4J_FOR_KAFKA = {"4.4.0": "2.25.5", "4.3.1": "2.25.4"}

_PACKAGE_DIR = Path(__file__).resolve().parent
_POM = _PACKAGE_DIR / "pom.xml"

# Jar name prefixes of SLF4J providers/bindings; more than one makes SLF4J pick arbitrarily,
# none makes it fall back to NOP and the broker logs nothing.
_SLF4J_BINDINGS = (
    "log4j-slf4j-impl-",
    "log4j-slf4j2-impl-",
    "slf4j-reload4j-",
    "slf4j-log4j12-",
    "slf4j-simple-",
    "slf4j-jdk14-",
    "slf4j-nop-",
    "logback-classic-",
)


class KafkaLibsError(LocalBrokerError):
    """The broker classpath could not be resolved or is unusable."""


def default_cache_root() -> Path:
    """``$PLACEMENT_CACHE_DIR``; else in a checkout ``<repo>/.cache`` (git-ignored), shared by tests, demo and
    benchmarks; else, for an installed package, the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    env = os.environ.get("PLACEMENT_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    checkout = _PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file():
        return checkout / ".cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "placement-stream"


def libs_dir_for(cache_root: Path, version: str) -> Path:
    """Where the jars of one Kafka version live inside a cache root."""
    return cache_root.resolve() / "kafka" / version / "libs"


def check_slf4j_binding(libs: Path) -> str:
    """Return the single SLF4J binding jar in ``libs``; raise if there is none or several."""
    found = sorted(p.name for p in libs.glob("*.jar") if p.name.startswith(_SLF4J_BINDINGS))
    if len(found) != 1:
        raise KafkaLibsError(f"expected exactly one SLF4J binding in {libs}, found {found or 'none'}")
    return found[0]


def _is_complete(libs: Path) -> bool:
    return (libs.parent / MARKER_NAME).is_file() and any(libs.glob("kafka_2.13-*.jar"))


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Serialise concurrent fetches or builds (parallel test workers, demo + tests) of the same version."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_maven(version: str, target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaLibsError("`mvn` is not on PATH: install Maven 3.8+ or point KAFKA_LIBS at a libs folder")
    # Run against a copy of the POM next to the cache so an installed (read-only) package stays untouched.
    pom = target.parent / "pom.xml"
    shutil.copyfile(_POM, pom)
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        "-DincludeScope=runtime",
        f"-Dkafka.version={version}",
        *([f"-Dlog4j.version={LOG4J_FOR_KAFKA[version]}"] if version in LOG4J_FOR_KAFKA else []),
        f"-DoutputDirectory={target}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise KafkaLibsError(f"Maven could not resolve kafka_2.13:{version} (exit {done.returncode}):\n{tail}")


def _download(cache_root: Path, version: str) -> Path:
    libs = libs_dir_for(cache_root, version)
    with exclusive(libs.parent.with_name(f"{version}.lock")):
        if _is_complete(libs):  # another process finished it while we waited
            return libs
        marker = libs.parent / MARKER_NAME
        marker.unlink(missing_ok=True)
        staging = libs.with_name("libs.partial")
        for leftover in (staging, libs):
            shutil.rmtree(leftover, ignore_errors=True)
        staging.mkdir(parents=True)
        started = time.monotonic()
        _run_maven(version, staging)
        check_slf4j_binding(staging)
        staging.rename(libs)
        marker.write_text(f"kafka_2.13 {version}\n")
        elapsed = time.monotonic() - started
        size_mb = sum(p.stat().st_size for p in libs.iterdir()) / 1e6
        jars = sum(1 for _ in libs.glob("*.jar"))
        print(
            f"localbroker: fetched Kafka {version} ({jars} jars, {size_mb:.1f} MB) in {elapsed:.1f} s into {libs}",
            file=sys.stderr,
        )
        return libs


def ensure_kafka_libs(cache_root: Path | None = None, version: str | None = None) -> Path:
    """Return a folder holding the broker's runtime jars, downloading them on first use only.

    ``$KAFKA_LIBS`` (an existing folder) wins and is used as it is. Otherwise the version is the argument,
    else ``$KAFKA_VERSION``, else 4.4.0 with 4.3.1 as the fallback when 4.4.0 does not resolve.
    """
    env_libs = os.environ.get("KAFKA_LIBS")
    if env_libs:
        libs = Path(env_libs).expanduser().resolve()
        if not libs.is_dir() or not any(libs.glob("kafka_2.13-*.jar")):
            raise KafkaLibsError(f"KAFKA_LIBS={env_libs} is not a folder holding kafka_2.13-*.jar")
        check_slf4j_binding(libs)
        return libs

    root = cache_root if cache_root is not None else default_cache_root()
    requested = version or os.environ.get("KAFKA_VERSION")
    candidates = [requested] if requested else [DEFAULT_KAFKA_VERSION, FALLBACK_KAFKA_VERSION]
    for candidate in candidates:  # a cache hit never touches the network
        libs = libs_dir_for(root, candidate)
        if _is_complete(libs):
            check_slf4j_binding(libs)
            return libs

    failures: list[str] = []
    for candidate in candidates:
        try:
            return _download(root, candidate)
        except KafkaLibsError as exc:
            failures.append(str(exc))
            if candidate != candidates[-1]:
                print(f"localbroker: Kafka {candidate} unavailable, trying {candidates[-1]}", file=sys.stderr)
    raise KafkaLibsError("\n\n".join(failures))
