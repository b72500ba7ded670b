"""The compiled build of the engine's hot modules: used when it matches the sources, never when it does not.

The suite runs compiled (scripts/bootstrap.sh builds it), and scripts/test.sh runs the engine and topics tests
a second time on the Python sources with PLACEMENT_NATIVE=0, leaving this file out.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import engine.native
from engine.cluster.pipeline import evaluate

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "engine" / "_native"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
PROBE = (
    "import engine.native as n, engine.cluster.pipeline.evaluate as e, engine.queue.engine as q;"
    "print(n.ACTIVE, e.__file__, q.__file__)"
)


def _manifest() -> dict[str, object]:
    return dict(json.loads((BUILD / "manifest.json").read_text()))


def test_the_suite_runs_the_compiled_modules() -> None:
    """A failed build must not pass unnoticed as a slower suite: without PLACEMENT_NATIVE=0 it is required."""
    assert os.environ.get("PLACEMENT_NATIVE", "1") != "0", "this file is left out of the Python-sources pass"
    assert engine.native.ACTIVE, "no current build: run scripts/bootstrap.sh (needs a C compiler)"
    assert evaluate.__file__ is not None and evaluate.__file__.endswith(SUFFIX)
    modules = _manifest()["modules"]
    assert isinstance(modules, dict) and len(modules) >= 20
    for source in modules:
        name = source.removesuffix(".py").replace("/", ".")
        assert str(importlib.import_module(name).__file__).endswith(SUFFIX), name


def _copy(tmp_path: Path) -> Path:
    """A copy of the engine package with its build, imported ahead of the checkout's."""
    shutil.copytree(ROOT / "engine", tmp_path / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _probe(root: Path, **env: str) -> tuple[list[str], str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{ROOT}", "PLACEMENT_NATIVE": "1", **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    return result.stdout.split(), result.stderr


def _edit_source(root: Path) -> None:
    path = root / "engine/cluster/pipeline/evaluate.py"
    path.write_text(path.read_text() + "\n# edited after the build\n")


def _other_interpreter(root: Path) -> None:
    path = root / "engine/_native/manifest.json"
    path.write_text(json.dumps({**_manifest(), "ext_suffix": ".cpython-399-other.so"}))


def _drop_library(root: Path) -> None:
    (root / f"engine/_native/placement_native__mypyc{SUFFIX}").unlink()


def _corrupt_manifest(root: Path) -> None:
    (root / "engine/_native/manifest.json").write_text("{not json")


def _manifest_without_modules(root: Path) -> None:
    built = _manifest()
    del built["modules"]
    (root / "engine/_native/manifest.json").write_text(json.dumps(built))


@pytest.mark.parametrize(
    ("change", "warning"),
    [
        (_edit_source, "older than engine/cluster/pipeline/evaluate.py"),
        (_other_interpreter, "is for .cpython-399-other.so"),
        (_drop_library, "incomplete"),
        (_corrupt_manifest, "unreadable"),
        (_manifest_without_modules, "unreadable (KeyError('modules'))"),
    ],
)
def test_a_build_that_does_not_match_runs_the_python_sources(tmp_path: Path, change: object, warning: str) -> None:
    root = _copy(tmp_path)
    active, compiled, _ = _probe(root)[0]
    assert (active, compiled.endswith(SUFFIX)) == ("True", True), "the copy's build is used before the change"
    assert callable(change)
    change(root)
    (active, source, _), stderr = _probe(root)
    assert active == "False"
    assert source == str(root / "engine/cluster/pipeline/evaluate.py")
    assert warning in stderr


def test_no_build_and_the_switch_run_the_python_sources_quietly(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    switched_off, stderr = _probe(root, PLACEMENT_NATIVE="0")
    assert switched_off[:2] == ["False", str(root / "engine/cluster/pipeline/evaluate.py")]
    assert stderr == ""
    shutil.rmtree(root / "engine/_native")
    (active, source, _), stderr = _probe(root)
    assert (active, source.endswith(".py"), stderr) == ("False", True, "")


def test_modules_left_out_of_the_build_stay_python(tmp_path: Path) -> None:
    (active, compiled, queue), _ = _probe(_copy(tmp_path))
    assert active == "True" and compiled.endswith(SUFFIX)
    assert queue == str(tmp_path / "engine/queue/engine.py")


def test_every_compiled_module_imports_first_in_a_fresh_interpreter() -> None:
    """A compiled module met half-initialised in an import cycle can crash the interpreter instead of raising:
    each one is imported before any other engine module, as some entry point may."""
    names = [source.removesuffix(".py").replace("/", ".") for source in _manifest()["modules"]]  # type: ignore[attr-defined]
    probe = "import sys, {0}, engine.native as n; sys.exit(not (n.ACTIVE and {0}.__file__.endswith({1!r})))"

    def run(name: str) -> tuple[str, int, str]:
        result = subprocess.run(
            [sys.executable, "-c", probe.format(name, SUFFIX)],
            env={**os.environ, "PLACEMENT_NATIVE": "1"},
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )
        return name, result.returncode, result.stderr[-500:]

    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = [outcome for outcome in pool.map(run, names) if outcome[1] != 0]
    assert failed == []
