"""Any replica answers: a request about a subject another instance owns is forwarded to it, one hop, found in the
group's member map (platform P17).

`route` is the decision, pure, so every case is a table row: answer here, forward to the owner, or refuse with a
status and a message that says what to do. `forward` is the hop: the same request to the owner's advertised
address with `X-Placement-Forwarded-By`, which makes the owner answer or refuse itself rather than forward again.
"""

from __future__ import annotations

import enum
import urllib.error
import urllib.request
from dataclasses import dataclass

import orjson

from streams.http_server import Request, Response
from streams.kafka.membership import MemberDirectory

__all__ = [
    "FORWARDED_BY",
    "FORWARDED_TO",
    "Forward",
    "Here",
    "Locality",
    "Refuse",
    "Route",
    "forward",
    "route",
]

FORWARDED_BY = "X-Placement-Forwarded-By"
"""Set on a forwarded request (the forwarding instance's address): the receiver never forwards it again."""
FORWARDED_TO = "X-Placement-Forwarded-To"
"""Set on an answer that came from the owner: the owner's address."""


class Locality(enum.Enum):
    """What this instance is to a task."""

    OWNED = "owned"
    """Assigned here and restored: its subjects are answered here."""
    RESTORING = "restoring"
    """Assigned here, its state not back yet."""
    ELSEWHERE = "elsewhere"


@dataclass(frozen=True, slots=True)
class Here:
    """Answer from this instance's state."""


@dataclass(frozen=True, slots=True)
class Forward:
    """Ask the owner."""

    url: str
    member_id: str


@dataclass(frozen=True, slots=True)
class Refuse:
    """Answer `status` with `message`: the request cannot be answered now, here or by forwarding."""

    status: int
    message: str


Route = Here | Forward | Refuse


def route(
    task: int,
    local: Locality,
    directory: MemberDirectory,
    *,
    joining: bool,
    forwarded_by: str | None,
    own_url: str | None,
) -> Route:
    """Where a request about a subject of `task` is answered."""
    if local is Locality.OWNED:
        return Here()
    if local is Locality.RESTORING:
        return Refuse(503, f"task {task} is being restored on this instance; try again shortly")
    if forwarded_by is not None:
        return Refuse(
            503,
            f"forwarded here by {forwarded_by}, but this instance does not own task {task} (the group is"
            " rebalancing); try again shortly",
        )
    if joining:
        return Refuse(503, f"the group is rebalancing; task {task}'s owner is not known yet, try again shortly")
    if directory.generation == 0:
        return Refuse(503, "this instance has not joined the group yet; try again shortly")
    if not directory.known:
        return Refuse(
            503,
            f"the group's leader runs an earlier release, which shares no member addresses: ask the instance that"
            f" owns task {task} directly",
        )
    owner = directory.owner_of(task)
    if owner is None:
        return Refuse(503, f"no member owns task {task} (the group is rebalancing); try again shortly")
    if owner.url is None:
        release = f" (release {owner.version})" if owner.version else " (an earlier release)"
        return Refuse(
            503,
            f"task {task} is owned by member {owner.member_id}{release}, which advertises no HTTP address: ask"
            " it directly",
        )
    if owner.url == own_url:  # a map older than this instance's assignment, or two members sharing an address
        return Refuse(
            503,
            f"task {task} is owned by member {owner.member_id}, which advertises this instance's own address"
            f" {own_url}: give each instance an address the others reach (PLACEMENT_ADVERTISED_URL)",
        )
    return Forward(owner.url, owner.member_id)


def forward(hop: Forward, request: Request, own_url: str | None, timeout: float) -> Response:
    """The owner's answer to `request` (blocking: run it in a thread); 502 when the owner does not answer."""
    headers = {FORWARDED_BY: own_url or "unknown"}
    content_type = request.header(b"content-type")
    if content_type is not None:
        headers["Content-Type"] = content_type.decode("latin-1")
    if request.authorization:
        headers["Authorization"] = request.authorization.decode("latin-1")
    body = request.body if request.method == "POST" else None
    outgoing = urllib.request.Request(hop.url + request.target, data=body, headers=headers, method=request.method)
    answered = ((FORWARDED_TO, hop.url),)
    try:
        with urllib.request.urlopen(outgoing, timeout=timeout) as response:
            kind = response.headers.get("Content-Type", "application/json")
            return Response(int(response.status), bytes(response.read()), kind, answered)
    except urllib.error.HTTPError as exc:
        kind = exc.headers.get("Content-Type", "application/json")
        return Response(exc.code, exc.read(), kind, answered)
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        message = f"the owner, member {hop.member_id} at {hop.url}, did not answer: {reason}"
        return Response(502, _error(message), "application/json", answered)


def _error(message: str) -> bytes:
    return orjson.dumps({"error": message}) + b"\n"
