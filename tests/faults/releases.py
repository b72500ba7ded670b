"""Earlier releases of placement-stream, installed from the repository's own history for upgrade tests.

CHANGELOG.md names each release and the commit it was cut from; the previous release is the newest one listed
there. Installing it takes that commit's tree (`git archive`) into the cache and a virtualenv of its own beside
it, so the test runs the previous release's code and dependencies as an operator's old image would, never this
checkout's. The install is kept (a stamp names the commit) and reused until the changelog names another commit.

    python -m tests.faults.releases [VERSION]    # installs it and prints its `placement-stream` command
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from localbroker.fetch import default_cache_root

__all__ = ["Release", "install_release", "recorded_releases"]

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "CHANGELOG.md"
_HEADING = re.compile(r"^## \[?(\d+\.\d+\.\d+)\]?", re.MULTILINE)
_COMMIT = re.compile(r"\bcommit `?([0-9a-f]{7,40})`?", re.IGNORECASE)


@dataclass(frozen=True)
class Release:
    version: str
    commit: str


def recorded_releases(changelog: str) -> list[Release]:
    """The releases the changelog records, newest first; each section must name its commit."""
    headings = list(_HEADING.finditer(changelog))
    releases: list[Release] = []
    for number, heading in enumerate(headings):
        end = headings[number + 1].start() if number + 1 < len(headings) else len(changelog)
        found = _COMMIT.search(changelog, heading.end(), end)
        if found is None:
            raise ValueError(f"CHANGELOG.md: release {heading.group(1)} names no commit (write 'commit <hash>')")
        releases.append(Release(heading.group(1), found.group(1)))
    return releases


def previous_release() -> Release:
    releases = recorded_releases(CHANGELOG.read_text())
    if not releases:
        raise ValueError("CHANGELOG.md records no release")
    return releases[0]


def install_release(release: Release, cache_root: Path | None = None) -> list[str]:
    """Install `release` (once) and return the command that runs its processor: `[.../placement-stream, "run"]`."""
    home = (cache_root or default_cache_root()) / "releases" / release.version
    script = home / "venv" / "bin" / "placement-stream"
    stamp = home / "installed"
    if stamp.is_file() and stamp.read_text().strip() == release.commit and script.is_file():
        return [str(script), "run"]
    home.mkdir(parents=True, exist_ok=True)
    source = home / "source"
    _unpack(release.commit, source)
    _run([sys.executable, "-m", "venv", "--clear", str(home / "venv")])
    _run([str(home / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", str(source)])
    stamp.write_text(release.commit + "\n")
    return [str(script), "run"]


def _unpack(commit: str, into: Path) -> None:
    """The commit's tree, as `git archive` gives it, in a fresh directory (no .git, no build left-overs)."""
    if into.exists():
        _run(["rm", "-rf", str(into)])
    into.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "tree.tar"
        _run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), commit])
        with tarfile.open(archive) as tree:
            tree.extractall(into, filter="data")


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


if __name__ == "__main__":
    wanted = sys.argv[1] if len(sys.argv) > 1 else None
    chosen = previous_release()
    if wanted is not None:
        chosen = next(r for r in recorded_releases(CHANGELOG.read_text()) if r.version == wanted)
    print(" ".join(install_release(chosen)))
