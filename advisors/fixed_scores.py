"""Example scripted advisor: answers every request that names it with the entries given on its command line.

Useful to reproduce a documented evaluation, or to stand in for an advisor whose logic is not at hand. An entry is
`[ROUND:]TARGET[=SCORE]`: TARGET is `NAME` (a cluster-scoped object) or `NAMESPACE/NAME`, SCORE is 0..100 (unset
means 100, A3), and an entry with a ROUND prefix is posted only in that round, one without in every round. The
answer lists the round's entries in command-line order; an entry naming a current candidate echoes it (kind and
apiVersion included), one naming no candidate is posted as written (the engine ignores it, E5). A round with no
entries is answered with an empty list (E4).

    python -m advisors.fixed_scores --bootstrap 127.0.0.1:9092 --name cost [--topic-prefix PREFIX] ENTRY...

For example `--name cost 1:cluster2 2:cluster1=80` answers round 1 with cluster2 (score 100), round 2 with cluster1
(score 80) and later rounds with nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from advisors.common import base_parser, echo, parse_arguments, run_main, serve, start_from_args
from topics.k8s import ObjectReference
from topics.placementrule import RecommendationEntry

__all__ = ["FixedEntry", "answer", "main", "parse_entry"]


@dataclass(frozen=True, slots=True)
class FixedEntry:
    """One configured entry: the object it names, its score, and the only round it is posted in (None: every)."""

    namespace: str
    name: str
    score: int | None = None
    round: int | None = None

    def names(self, candidate: ObjectReference) -> bool:
        """Whether the entry names the candidate (namespace and name equal, as B8 matches)."""
        return candidate.name == self.name and (candidate.namespace or "") == self.namespace


def parse_entry(text: str) -> FixedEntry:
    """`[ROUND:]TARGET[=SCORE]` as an entry; ValueError with a readable message otherwise."""
    rest = text.strip()
    round_number: int | None = None
    head, colon, tail = rest.partition(":")
    if colon:
        if not head.strip().isdigit() or int(head) < 1:
            raise ValueError(f"entry {text!r}: the round before ':' must be a positive integer")
        round_number, rest = int(head), tail
    target, equals, raw_score = rest.partition("=")
    score: int | None = None
    if equals:
        if not raw_score.strip().isdigit() or not 0 <= int(raw_score) <= 100:
            raise ValueError(f"entry {text!r}: the score after '=' must be an integer 0..100")
        score = int(raw_score)
    namespace, _, name = target.strip().rpartition("/")
    if not name:
        raise ValueError(f"entry {text!r} names nothing: use [ROUND:]NAME[=SCORE] or [ROUND:]NAMESPACE/NAME[=SCORE]")
    return FixedEntry(namespace=namespace, name=name, score=score, round=round_number)


def answer(
    candidates: Sequence[ObjectReference], round_number: int, entries: Sequence[FixedEntry]
) -> list[RecommendationEntry]:
    """The entries of one round, in configured order; a candidate named by an entry is echoed with its score."""
    out: list[RecommendationEntry] = []
    for entry in entries:
        if entry.round is not None and entry.round != round_number:
            continue
        named = next((c for c in candidates if entry.names(c)), None)
        if named is not None:
            out.append(echo(named, entry.score))
        else:
            out.append(RecommendationEntry(namespace=entry.namespace or None, name=entry.name, score=entry.score))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = base_parser("Example scripted advisor: answers every round with the entries given here.")
    parser.add_argument(
        "entries", nargs="*", metavar="ENTRY", help="[ROUND:]NAME[=SCORE] or [ROUND:]NAMESPACE/NAME[=SCORE]"
    )
    args = parser.parse_args(argv)
    entries = parse_arguments(parser, parse_entry, args.entries)
    config = start_from_args(args)
    return run_main(
        lambda stop: serve(config, lambda request: answer(request.candidates, request.round, entries), stop)
    )


if __name__ == "__main__":
    sys.exit(main())
