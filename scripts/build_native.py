"""Compile the engine's hot modules to C with mypyc, into engine/_native/, beside a manifest of their sources.

The engine is CPU-bound Python glue between numpy calls (the README's benchmark section); mypyc compiles the same
type-checked sources, so there is one implementation and the pure-Python modules stay the fallback.
`engine.native` loads the build only while every compiled source still has the hash recorded here: an edited
module falls back to Python as a whole instead of running stale code. Needs a C compiler and the dev extras.

    python scripts/build_native.py [--root DIR] [--if-stale]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the checkout's engine package
from engine.native import source_digest

# The modules a placement decision runs through, each type-checked strictly. Left out: the CEL modules (their
# evaluator is cel-python's), the queue and hybrid engines (their time is in Kafka round trips; mypyc also
# refuses some of their dataclasses), and modules whose compiled import fails: engine/core.py (a slotted generic
# dataclass) and engine/runtime/records.py (a dataclass field typed with an exception class).
MODULES = (
    "engine/inventory/store.py",
    "engine/runtime/batch.py",
    "engine/runtime/changelog.py",
    "engine/runtime/deadletter.py",
    "engine/runtime/inputs.py",
    "engine/runtime/processor.py",
    "engine/runtime/routing.py",
    "engine/runtime/subjects.py",
    "engine/runtime/timers.py",
    "engine/cluster/engine.py",
    "engine/cluster/fleet/ids.py",
    "engine/cluster/fleet/views.py",
    "engine/cluster/pipeline/compiled.py",
    "engine/cluster/pipeline/conditions.py",
    "engine/cluster/pipeline/evaluate.py",
    "engine/cluster/pipeline/framework.py",
    "engine/cluster/pipeline/groups.py",
    "engine/cluster/pipeline/registry.py",
    "engine/cluster/pipeline/status.py",
    "engine/cluster/pipeline/weights.py",
    "engine/cluster/pipeline/plugins/addon.py",
    "engine/cluster/pipeline/plugins/balance.py",
    "engine/cluster/pipeline/plugins/predicate.py",
    "engine/cluster/pipeline/plugins/resource.py",
    "engine/cluster/pipeline/plugins/spread.py",
    "engine/cluster/pipeline/plugins/steady.py",
    "engine/cluster/pipeline/plugins/taint_toleration.py",
    "engine/cluster/pipeline/spread/counts.py",
    "engine/cluster/pipeline/spread/selection.py",
    "engine/cluster/pipeline/spread/terms.py",
    "engine/cluster/pipeline/spread/topology.py",
    "engine/cluster/tracking/affected.py",
    "engine/cluster/tracking/events.py",
    "engine/cluster/tracking/indexes.py",
    "engine/cluster/tracking/next_steps.py",
    "engine/cluster/tracking/state.py",
)
GROUP = "placement_native"
"""The name of the shared library every compiled module's shim imports."""
OUTPUT = "engine/_native"
MANIFEST = "manifest.json"


def manifest(root: Path) -> dict[str, object]:
    """What a build was made from: the interpreter's extension suffix and each compiled source's hash."""
    return {
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "group": GROUP,
        "modules": {path: source_digest(root / path) for path in MODULES},
    }


def is_current(root: Path) -> bool:
    try:
        built = json.loads((root / OUTPUT / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return bool(built == manifest(root))


def build(root: Path) -> None:
    from mypyc.build import mypycify  # noqa: PLC0415  (a dev tool: only a build needs it)
    from setuptools import Distribution  # type: ignore[import-untyped]  # noqa: PLC0415

    out = root / OUTPUT
    with tempfile.TemporaryDirectory(prefix="placement-native-") as scratch:
        cwd = Path.cwd()
        os.chdir(root)  # mypyc names modules by their paths and reads the mypy settings from pyproject.toml
        try:
            extensions = mypycify(
                list(MODULES), opt_level="3", multi_file=True, group_name=GROUP, target_dir=f"{scratch}/c"
            )
            dist = Distribution({"name": GROUP, "ext_modules": extensions})
            command = dist.get_command_obj("build_ext")
            command.build_lib = f"{scratch}/lib"
            command.build_temp = f"{scratch}/tmp"
            command.parallel = os.cpu_count() or 1
            dist.run_command("build_ext")
        finally:
            os.chdir(cwd)
        staged = out.with_name(out.name + ".new")
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(f"{scratch}/lib", staged)
        (staged / MANIFEST).write_text(json.dumps(manifest(root), indent=1, sort_keys=True) + "\n")
    # swapped in by renames: a process starting meanwhile sees the old build or the new one, never a mix
    retired = out.with_name(out.name + ".old")
    shutil.rmtree(retired, ignore_errors=True)
    if out.exists():
        out.rename(retired)
    staged.rename(out)
    shutil.rmtree(retired, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--if-stale", action="store_true", help="do nothing when the build matches the sources")
    args = parser.parse_args()
    root = args.root.resolve()
    if args.if_stale and is_current(root):
        return 0
    build(root)
    print(f"compiled {len(MODULES)} engine modules into {root / OUTPUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
