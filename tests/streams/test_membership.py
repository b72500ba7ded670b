"""The member map in the group protocol's user data: encoding, and range's assignment kept exactly."""

from __future__ import annotations

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from streams.kafka.membership import (
    Member,
    MemberDirectoryAssignor,
    decode_directory,
    decode_member,
    encode_directory,
    encode_member,
)

TOPICS = ["subs", "recs"]


class _Cluster(ClusterMetadata):  # type: ignore[misc]
    """Three partitions on each topic, as the leader's metadata would say."""

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0, 1, 2}


def _metadata(user_data: bytes) -> ConsumerProtocolMemberMetadata:
    return ConsumerProtocolMemberMetadata(0, TOPICS, user_data)


def test_a_member_round_trips_its_address_and_release() -> None:
    assert decode_member(encode_member("http://a:8080", "1.2.0")) == ("http://a:8080", "1.2.0")


def test_empty_or_foreign_user_data_says_nothing() -> None:
    for raw in (b"", b"\x00\x01binary", b"[1, 2]", b'{"url": 5}'):
        assert decode_member(raw) == (None, None)
    for raw in (b"", b"not json", b'{"v": 1}'):
        assert not decode_directory(raw).known


def test_a_directory_round_trips_and_finds_each_task_owner() -> None:
    members = [Member("m-1", "http://a:1", "1.0", (0, 1)), Member("m-2", None, None, (2,))]
    directory = decode_directory(encode_directory(members), generation=4)
    assert directory.known and directory.generation == 4
    assert directory.members == tuple(members)
    assert directory.owner_of(1) == members[0]
    assert directory.owner_of(2) == members[1]
    assert directory.owner_of(3) is None


def test_the_assignment_is_ranges_with_every_member_listed() -> None:
    members = {
        "b-new": _metadata(encode_member("http://b:8080", "2.0.0")),
        "a-old": _metadata(b""),  # a member of an earlier release: plain range, no user data
        "c-new": _metadata(encode_member("http://c:8080", "2.0.0")),
    }
    assignor = MemberDirectoryAssignor("http://b:8080", "2.0.0")
    ours = assignor.assign(_Cluster(), members)
    plain = RangePartitionAssignor.assign(_Cluster(), members)
    assert {m: a.assignment for m, a in ours.items()} == {m: a.assignment for m, a in plain.items()}
    assert assignor.name == RangePartitionAssignor.name == "range"
    directory = decode_directory(ours["b-new"].user_data)
    assert {m.member_id: (m.url, m.version, m.tasks) for m in directory.members} == {
        "a-old": (None, None, (0,)),
        "b-new": ("http://b:8080", "2.0.0", (1,)),
        "c-new": ("http://c:8080", "2.0.0", (2,)),
    }
    assert len({a.user_data for a in ours.values()}) == 1, "every member gets the same map"


def test_joining_marks_the_map_stale_until_the_next_assignment() -> None:
    assignor = MemberDirectoryAssignor("http://a:1", "2.0.0")
    metadata = assignor.metadata(TOPICS)
    assert decode_member(metadata.user_data) == ("http://a:1", "2.0.0")
    assert assignor.joining
    assignment = assignor.assign(_Cluster(), {"m": metadata})["m"]
    assignor.on_assignment(assignment)
    assert not assignor.joining
    assert assignor.directory.known and assignor.directory.generation == 1
    owner = assignor.directory.owner_of(0)
    assert owner is not None and owner.url == "http://a:1"


def test_a_leader_of_an_earlier_release_leaves_the_map_unknown() -> None:
    assignor = MemberDirectoryAssignor("http://a:1", "2.0.0")
    assignor.metadata(TOPICS)
    plain = RangePartitionAssignor.assign(_Cluster(), {"m": _metadata(b"")})["m"]
    assignor.on_assignment(plain)
    assert not assignor.directory.known
    assert not assignor.joining
