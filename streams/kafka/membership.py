"""Who is in the group and where each member answers: HTTP addresses carried in the group protocol's user data, as
Kafka Streams carries `application.server` (platform P17).

Each member's JoinGroup metadata carries its advertised HTTP address and release in `user_data`; the leader's
assignment hands every member the whole map, member -> (address, release, tasks), in the assignment's
`user_data`. The assignor keeps the protocol name `range` and range's assignment exactly, so a member of an
earlier release (plain range, empty user data) joins the same group and gets the same tasks: it is then listed
without an address, and a leader of that release hands out no map at all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

__all__ = [
    "USER_DATA_VERSION",
    "Member",
    "MemberDirectory",
    "MemberDirectoryAssignor",
    "decode_directory",
    "decode_member",
    "encode_directory",
    "encode_member",
]

log = logging.getLogger("placement.membership")

USER_DATA_VERSION = 1
"""The `v` of both user data documents; a reader takes what it knows of a newer one and ignores the rest."""
_MAX_TEXT = 512
"""An address or release longer than this is not ours: it is cut, so one odd member cannot grow every map."""


@dataclass(frozen=True, slots=True)
class Member:
    """One group member as the assignment describes it."""

    member_id: str
    url: str | None
    """Its advertised HTTP address; None for a member that advertises none (an earlier release, or no endpoint)."""
    version: str | None
    tasks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberDirectory:
    """The map of the last assignment this member received; `known` is False when the leader handed out none."""

    members: tuple[Member, ...] = ()
    known: bool = False
    generation: int = 0
    """How many assignments this member received: a rebalance bumps it."""
    _by_task: dict[int, Member] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for member in self.members:
            for task in member.tasks:
                self._by_task[task] = member

    def owner_of(self, task: int) -> Member | None:
        """The member assigned `task`; None when the map is unknown or no member has it."""
        return self._by_task.get(task)


def _text(value: Any) -> str | None:
    return value[:_MAX_TEXT] if isinstance(value, str) and value else None


def encode_member(url: str | None, version: str) -> bytes:
    """This member's JoinGroup user data."""
    return orjson.dumps({"v": USER_DATA_VERSION, "url": url, "version": version})


def decode_member(user_data: bytes) -> tuple[str | None, str | None]:
    """(address, release) from a member's user data; (None, None) for empty or foreign user data."""
    try:
        loaded = orjson.loads(user_data) if user_data else None
    except orjson.JSONDecodeError:
        loaded = None
    if not isinstance(loaded, dict):
        return None, None
    return _text(loaded.get("url")), _text(loaded.get("version"))


def encode_directory(members: Iterable[Member]) -> bytes:
    """The assignment's user data: every member's address, release and tasks."""
    listed = {m.member_id: {"url": m.url, "version": m.version, "tasks": list(m.tasks)} for m in members}
    return orjson.dumps({"v": USER_DATA_VERSION, "members": listed})


def decode_directory(user_data: bytes, generation: int = 0) -> MemberDirectory:
    """The map an assignment carries; an unknown one (`known=False`) when it carries none or an unreadable one."""
    try:
        loaded = orjson.loads(user_data) if user_data else None
    except orjson.JSONDecodeError:
        loaded = None
    listed = loaded.get("members") if isinstance(loaded, dict) else None
    if not isinstance(listed, dict):
        return MemberDirectory(generation=generation)
    members = []
    for member_id, raw in sorted(listed.items()):
        if not isinstance(raw, dict):
            continue
        tasks = raw.get("tasks")
        numbers = tuple(sorted({t for t in tasks if isinstance(t, int)})) if isinstance(tasks, list) else ()
        members.append(Member(str(member_id), _text(raw.get("url")), _text(raw.get("version")), numbers))
    return MemberDirectory(tuple(members), known=True, generation=generation)


def _tasks(assignment: ConsumerProtocolMemberAssignment) -> tuple[int, ...]:
    return tuple(sorted({partition for _topic, partitions in assignment.assignment for partition in partitions}))


class MemberDirectoryAssignor(RangePartitionAssignor):  # type: ignore[misc]  # aiokafka ships no types
    """Range assignment under the name `range`, plus the member map in the user data; one instance per consumer
    (aiokafka calls the strategies it is given, instances as well as classes)."""

    name = "range"

    def __init__(self, url: str | None, version: str) -> None:
        self.url = url
        self._user_data = encode_member(url, version)
        self.directory = MemberDirectory()
        """The map of the last assignment received (read from the HTTP thread: replaced whole, never changed)."""
        self.joining = False
        """Between this member's JoinGroup and its next assignment: the map may be out of date."""

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """Range's metadata with this member's address and release; called as the member (re)joins."""
        self.joining = True
        return ConsumerProtocolMemberMetadata(self.version, list(topics), self._user_data)

    def assign(
        self, cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """Range's assignment, every member's carrying the whole map."""
        ranged: dict[str, ConsumerProtocolMemberAssignment] = RangePartitionAssignor.assign(cluster, members)
        listed = [
            Member(member_id, *decode_member(members[member_id].user_data), _tasks(assignment))
            for member_id, assignment in sorted(ranged.items())
        ]
        user_data = encode_directory(listed)
        return {
            member_id: ConsumerProtocolMemberAssignment(assignment.version, assignment.assignment, user_data)
            for member_id, assignment in ranged.items()
        }

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Hand the received map on; a leader of an earlier release sends none (`known=False`)."""
        directory = decode_directory(assignment.user_data, self.directory.generation + 1)
        if not directory.known and (self.directory.known or self.directory.generation == 0):
            log.info("the group's leader shares no member addresses (an earlier release); requests are not forwarded")
        self.directory = directory
        self.joining = False
