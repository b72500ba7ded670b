"""The Kubernetes form of the queue configuration: the `yunikorn-configs` ConfigMap.

The YuniKorn shim merges a ConfigMap's `data` and `binaryData` (a `binaryData` key ending in `.gz` is
base64 gzip and loses the suffix; `binaryData` wins over `data` for the same key) and hands the entry
`queues.yaml` to the scheduler core (the key is `<policy group>.yaml`, and the default policy group is
`queues`). A file whose top level says `kind: ConfigMap` is read the same way here; any other file is the
scheduler configuration itself.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import zlib
from dataclasses import dataclass

import yaml

from engine.errors import QueueConfigError

__all__ = ["QUEUES_KEY", "ConfigSource", "unwrap_configmap"]

QUEUES_KEY = "queues.yaml"
_GZIP_SUFFIX = ".gz"


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """The scheduler configuration text and where it came from (empty `where` for a plain file)."""

    text: str
    where: str = ""


def _scalar_entries(node: yaml.Node | None) -> dict[str, str]:
    """The string entries of a `data` or `binaryData` mapping; anything else is ignored as the shim would."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        str(key.value): str(value.value)
        for key, value in node.value
        if isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode)
    }


def _binary(key: str, encoded: str, name: str) -> tuple[str, str]:
    """One `binaryData` entry as the shim flattens it: decoded, and gunzipped for a `.gz` key."""
    try:
        raw = base64.b64decode("".join(encoded.split()), validate=True)
        if key.endswith(_GZIP_SUFFIX):
            raw = gzip.decompress(raw)
            key = key.removesuffix(_GZIP_SUFFIX)
        return key, raw.decode()
    except (binascii.Error, OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise QueueConfigError(f"ConfigMap {name} binaryData key {key} cannot be decoded: {exc}") from exc


def _key_line(node: yaml.MappingNode, name: str) -> int:
    """The 1-based line of a mapping key."""
    return next(int(key.start_mark.line) + 1 for key, _ in node.value if key.value == name)


def unwrap_configmap(text: str) -> ConfigSource:
    """The scheduler configuration inside a ConfigMap document, or the text itself when it is not one.

    Raises:
        QueueConfigError: a ConfigMap without a `queues.yaml` entry, or an undecodable `binaryData` entry.
    """
    try:
        root = yaml.compose(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError:
        return ConfigSource(text)  # the configuration reader reports the YAML error with its line
    if not isinstance(root, yaml.MappingNode):
        return ConfigSource(text)
    fields = {str(key.value): value for key, value in root.value if isinstance(key, yaml.ScalarNode)}
    if QUEUES_KEY in fields and "partitions" not in fields and "kind" not in fields:
        line = _key_line(root, QUEUES_KEY)
        raise QueueConfigError(
            f"unknown key {QUEUES_KEY} in configuration (line {line}): this looks like the data of the "
            "yunikorn-configs ConfigMap; give the whole ConfigMap (kind: ConfigMap) or the content of "
            f"{QUEUES_KEY} itself"
        )
    kind = fields.get("kind")
    if not isinstance(kind, yaml.ScalarNode) or kind.value != "ConfigMap":
        return ConfigSource(text)
    metadata = _scalar_entries(fields.get("metadata"))
    name = metadata.get("name", "<unnamed>")
    entries = _scalar_entries(fields.get("data"))
    where = "data"
    for key, encoded in _scalar_entries(fields.get("binaryData")).items():
        flat_key, decoded = _binary(key, encoded, name)
        entries[flat_key] = decoded
        if flat_key == QUEUES_KEY:
            where = f"binaryData key {key}"
    if QUEUES_KEY not in entries:
        present = ", ".join(sorted(entries)) or "none"
        raise QueueConfigError(
            f"ConfigMap {name} has no {QUEUES_KEY} entry in data or binaryData (keys: {present}); "
            f"the YuniKorn shim reads the scheduler configuration from data[{QUEUES_KEY!r}]"
        )
    shown = f"data key {QUEUES_KEY}" if where == "data" else where
    return ConfigSource(entries[QUEUES_KEY], f"ConfigMap {name}, {shown}")
