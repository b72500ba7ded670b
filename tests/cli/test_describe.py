"""`describe`'s reading of DescribeGroups members and its table, without Kafka."""

from __future__ import annotations

from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from cli.describe import _members, render_table
from streams.kafka.membership import encode_member


def _raw(member_id: str, user_data: bytes, partitions: list[int]) -> tuple[str, str, str, bytes, bytes]:
    metadata = ConsumerProtocolMemberMetadata(0, ["subs", "recs"], user_data).encode()
    assignment = ConsumerProtocolMemberAssignment(0, [("recs", partitions), ("subs", partitions)], b"").encode()
    return member_id, "placement-stream", "/10.0.0.1", metadata, assignment


def test_members_carry_release_address_tasks_and_topics_or_nothing_for_an_earlier_release() -> None:
    raw = [_raw("new-1", encode_member("http://a:8080", "2.0.0"), [1, 2]), _raw("old-1", b"", [0])]
    old, new = _members(raw, "consumer")
    assert (old.member_id, old.url, old.version, old.tasks) == ("old-1", None, None, (0,))
    assert (new.url, new.version, new.tasks, new.topics) == ("http://a:8080", "2.0.0", (1, 2), ("subs", "recs"))
    assert _members(raw, "connect")[0].tasks == ()  # another protocol's bytes are not read


def test_the_table_shows_members_and_a_restore_in_progress() -> None:
    restore = {"readTo": 40, "endOffset": 100, "records": 40}
    described = {
        "group": "placement",
        "state": "Stable",
        "protocol": "range",
        "members": [
            {"memberId": "old-1", "version": None, "url": None, "tasks": [0], "status": None},
            {
                "memberId": "new-1",
                "version": "2.0.0",
                "url": "http://a:8080",
                "tasks": [1],
                "status": {"ready": False, "lastCommitAt": "2026-12-07T10:00:00.5Z", "deadLetters": {"decode": 2}},
            },
        ],
        "tasks": [
            {"task": 0, "owner": "old-1", "records": 0, "seconds": 0.0, "restore": None},
            {"task": 1, "owner": "new-1", "records": 3, "seconds": 1.25, "restore": restore},
        ],
    }
    lines = render_table(described).splitlines()
    assert lines[0] == "GROUP placement  STATE Stable  PROTOCOL range"
    (old,) = [line for line in lines if line.startswith("old-1")]
    assert "? (no metadata)" in old
    (new,) = [line for line in lines if line.startswith("new-1")]
    assert "false" in new and "2026-12-07 10:00:00" in new and "decode=2" in new
    (task,) = [line for line in lines if line.startswith("1 ")]
    assert task.split()[1:4] == ["new-1", "3", "1.2"] and "restoring: offset 40 of 100, 40 records" in task
