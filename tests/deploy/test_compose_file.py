"""docker-compose.yml is a valid Compose file and deploys the way users deploy: health on /readyz, scalable
processors, an opt-in examples profile, an image that runs as non-root and takes secrets from files.

Docker is not on the test machines, so the file is checked against the Compose Specification's JSON schema,
vendored as it is in tests/deploy/compose-spec.json (compose-spec/compose-spec, schema/compose-spec.json,
Apache-2.0).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SCHEMA = json.loads((Path(__file__).with_name("compose-spec.json")).read_text())


def _errors(document: dict[str, Any]) -> list[str]:
    # the schema names draft-07 by an address jsonschema does not recognise as draft-07's, so say it here
    validator = jsonschema.Draft7Validator(SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_compose_file_follows_the_compose_specification() -> None:
    assert _errors(COMPOSE) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("services", "processor", "healthcheck", "interval"), 5),
        (("services", "processor", "profiles"), "examples"),
        (("services", "processor", "depends_on", "broker", "condition"), "when_ready"),
        (("services", "processor", "unknown_key"), True),
    ],
    ids=["interval-not-a-duration-string", "profiles-not-a-list", "bad-condition", "unknown-key"],
)
def test_the_schema_check_catches_broken_files(path: tuple[str, ...], value: object) -> None:
    """The check is not vacuous: each of these edits breaks the file."""
    broken = copy.deepcopy(COMPOSE)
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert _errors(broken)


def test_processor_is_healthy_only_when_ready_and_can_be_scaled() -> None:
    processor = COMPOSE["services"]["processor"]
    probe = " ".join(processor["healthcheck"]["test"])
    assert "/readyz" in probe
    environment = processor["environment"]
    assert "PLACEMENT_KAFKA__GROUP_INSTANCE_ID" not in environment  # replicas of one service would share it
    assert processor.get("container_name") is None  # a fixed name forbids a second replica
    (ports,) = processor["ports"]
    assert re.fullmatch(r"127\.0\.0\.1:8080-\d+:8080", ports)  # one host port per replica
    assert not [key for key, value in environment.items() if re.search("PASSWORD$|TOKEN$", key) and value]


def test_examples_profile_adds_advisors_and_events_and_the_default_starts_neither() -> None:
    services = COMPOSE["services"]
    profiled = {name for name, service in services.items() if "examples" in service.get("profiles", [])}
    assert profiled == {"cpu-advisor", "veto-advisor", "example-events"}
    assert {"broker", "processor"} <= {name for name, service in services.items() if not service.get("profiles")}
    for name in profiled:
        assert services[name]["depends_on"]["processor"]["condition"] == "service_healthy"
    assert services["example-events"]["command"][0] == "apply"
    assert all(Path(ROOT, p.removeprefix("/app/")).is_file() for p in services["example-events"]["command"][2::2])


def test_image_runs_as_non_root_and_bakes_in_no_secret() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    (user,) = re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)
    assert user.split(":")[0] not in ("root", "0")
    assert user.split(":")[0].isdigit()  # numeric: Kubernetes' runAsNonRoot can verify it
    assert not re.search(r"^(ENV|ARG)\b.*(PASSWORD|TOKEN|SECRET)", dockerfile, re.MULTILINE)
