"""Where a request about a subject is answered: here, at the owner, or refused with a reason."""

from __future__ import annotations

import pytest

from streams.forwarding import Forward, Here, Locality, Refuse, Route, route
from streams.kafka.membership import Member, MemberDirectory

OURS = "http://a:8080"
DIRECTORY = MemberDirectory(
    (
        Member("a-1", OURS, "2.0.0", (0,)),
        Member("b-1", "http://b:8080", "2.0.0", (1,)),
        Member("old-1", None, None, (2,)),
        Member("new-1", None, "2.0.0", (3,)),
    ),
    known=True,
    generation=3,
)
UNKNOWN = MemberDirectory(generation=3)
"""What an assignment from a leader of an earlier release leaves."""


@pytest.mark.parametrize(
    ("task", "local", "directory", "joining", "forwarded_by", "expected"),
    [
        (0, Locality.OWNED, DIRECTORY, False, None, Here()),
        (0, Locality.OWNED, UNKNOWN, True, "http://b:8080", Here()),  # the owner answers whatever else holds
        (1, Locality.ELSEWHERE, DIRECTORY, False, None, Forward("http://b:8080", "b-1")),
        (1, Locality.RESTORING, DIRECTORY, False, None, Refuse(503, "being restored on this instance")),
        (1, Locality.ELSEWHERE, DIRECTORY, False, "http://c:8080", Refuse(503, "forwarded here by http://c:8080")),
        (1, Locality.ELSEWHERE, DIRECTORY, True, None, Refuse(503, "the group is rebalancing")),
        (1, Locality.ELSEWHERE, UNKNOWN, False, None, Refuse(503, "earlier release, which shares no member")),
        (2, Locality.ELSEWHERE, DIRECTORY, False, None, Refuse(503, "member old-1 (an earlier release)")),
        (3, Locality.ELSEWHERE, DIRECTORY, False, None, Refuse(503, "member new-1 (release 2.0.0)")),
        (4, Locality.ELSEWHERE, DIRECTORY, False, None, Refuse(503, "no member owns task 4")),
        (1, Locality.ELSEWHERE, MemberDirectory(), False, None, Refuse(503, "has not joined the group yet")),
        (0, Locality.ELSEWHERE, DIRECTORY, False, None, Refuse(503, "advertises this instance's own")),
    ],
)
def test_route(
    task: int,
    local: Locality,
    directory: MemberDirectory,
    joining: bool,
    forwarded_by: str | None,
    expected: Route,
) -> None:
    decided = route(task, local, directory, joining=joining, forwarded_by=forwarded_by, own_url=OURS)
    if isinstance(expected, Refuse):
        assert isinstance(decided, Refuse) and decided.status == expected.status
        assert expected.message in decided.message
    else:
        assert decided == expected
