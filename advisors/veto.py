"""Example predicate advisor: accepts every candidate except the targets named on its command line.

A target is `name`, `namespace/name` or `namespace/`, matched like a rule's `spec.targets` entries (hybrid spec
B5): an empty part matches anything. Every accepted candidate is echoed back; a vetoed one is left out (K2).

    python -m advisors.veto --bootstrap 127.0.0.1:9092 --name veto [--topic-prefix PREFIX] TARGET...
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from advisors.common import base_parser, echo, parse_arguments, run_main, serve, start_from_args
from topics.k8s import ObjectReference
from topics.placementrule import RecommendationEntry, targets_match

__all__ = ["accept", "main", "parse_target", "vetoed"]


def parse_target(text: str) -> ObjectReference:
    """`name`, `namespace/name` or `namespace/` as a target reference."""
    namespace, _, name = text.strip().rpartition("/")
    if not namespace and not name:
        raise ValueError(f"target {text!r} names nothing: use NAME, NAMESPACE/NAME or NAMESPACE/")
    return ObjectReference(namespace=namespace or None, name=name)


def vetoed(candidate: ObjectReference, targets: Sequence[ObjectReference]) -> bool:
    """Whether a listed target matches the candidate (with no targets nothing is vetoed)."""
    return bool(targets) and targets_match(targets, candidate.namespace or "", candidate.name)


def accept(candidates: Sequence[ObjectReference], targets: Sequence[ObjectReference]) -> list[RecommendationEntry]:
    """The predicate answer: every candidate that is not vetoed, in the order proposed."""
    return [echo(c) for c in candidates if not vetoed(c, targets)]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = base_parser("Example predicate advisor: vetoes the listed targets, accepts everything else.")
    parser.add_argument("targets", nargs="*", metavar="TARGET", help="NAME, NAMESPACE/NAME or NAMESPACE/ to veto")
    args = parser.parse_args(argv)
    targets = parse_arguments(parser, parse_target, args.targets)
    config = start_from_args(args)
    return run_main(lambda stop: serve(config, lambda request: accept(request.candidates, targets), stop))


if __name__ == "__main__":
    sys.exit(main())
