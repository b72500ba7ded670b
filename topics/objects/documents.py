"""Reading Kubernetes documents as `kubectl apply -f` does: multi-document YAML or JSON, Lists (the files, directories
and stdin that hold them are the CLI's, `cli/apply/files.py`).

Timestamps stay strings: PyYAML would turn `2026-11-23T10:00:00Z` into a datetime, which is neither what the
API server keeps nor JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["Document", "DocumentError", "parse_documents"]


class _Loader(yaml.SafeLoader):
    """Safe YAML without the timestamp resolver."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True, slots=True)
class Document:
    """One object to apply, and where it came from (for the report)."""

    source: str
    index: int
    """1-based position in its file, counting the items of a List one by one."""
    body: Any

    @property
    def where(self) -> str:
        """`FILE document N`, how a report names the document."""
        return f"{self.source} document {self.index}"


class DocumentError(ValueError):
    """A file cannot be read or parsed; the message names it."""


def _is_list(body: Any) -> bool:
    """`kind: List` or any `<Kind>List` with items, as `kubectl get -o yaml` writes them."""
    return (
        isinstance(body, dict)
        and isinstance(body.get("kind"), str)
        and body["kind"].endswith("List")
        and isinstance(body.get("items"), list)
    )


def parse_documents(source: str, raw: bytes) -> list[Document]:
    """The documents of one file in order; empty documents (a trailing `---`) are skipped.

    Raises:
        DocumentError: the content is not YAML or JSON.
    """
    try:
        bodies = [body for body in yaml.load_all(raw, Loader=_Loader) if body is not None]
    except yaml.YAMLError as exc:
        raise DocumentError(f"{source}: not YAML or JSON: {exc}") from exc
    documents: list[Document] = []
    for body in bodies:
        for item in body["items"] if _is_list(body) else [body]:
            documents.append(Document(source, len(documents) + 1, item))
    return documents
