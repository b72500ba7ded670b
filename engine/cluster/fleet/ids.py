"""Cluster ids: the pipeline works on integer arrays, names appear only at its edges.

A re-decision runs every filter and prioritizer over hundreds of candidates; over name-keyed maps that is
per-candidate Python work, over id arrays it is a few numpy operations. An id is the cluster's rank among
the inventory's names, so ascending ids are name order (the candidates' order and the tie-break, G1).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from itertools import count, repeat

import numpy as np
from numpy.typing import NDArray

__all__ = ["Fleet", "Ids", "KnownIds"]

Ids = NDArray[np.intp]
"""Cluster ids of one fleet, ascending unless said otherwise."""

KnownIds = tuple[int, Ids]
"""(fleet serial, a set of names as that fleet's ids): kept with the names, valid while the serial is the fleet's."""

_NO_IDS: Ids = np.zeros(0, dtype=np.intp)
_NO_IDS.flags.writeable = False
_SERIALS = count()


class Fleet:
    """The names of every cluster of one inventory version, by id; shared by views while no cluster comes or
    goes, so arrays built over it stay valid across label and taint changes."""

    __slots__ = ("_labels", "names", "position", "serial")

    def __init__(self, names: Iterable[str]) -> None:
        self.serial = next(_SERIALS)
        """Tells fleets apart without keeping them alive (ids memoised elsewhere are valid for one serial)."""
        self.names: tuple[str, ...] = tuple(sorted(names))
        self.position: dict[str, int] = {name: index for index, name in enumerate(self.names)}
        self._labels: NDArray[np.object_] = np.array(self.names, dtype=object)

    def __len__(self) -> int:
        return len(self.names)

    def ids(self, names: Collection[str]) -> Ids:
        """The ids of the known names among `names`, ascending; clusters no longer in the inventory are left out.

        The array may be shared: read it, never write it.
        """
        if not names:
            return _NO_IDS
        found = np.fromiter(map(self.position.get, names, repeat(-1)), dtype=np.intp, count=len(names))
        found = found[found >= 0]
        found.sort()
        found.flags.writeable = False
        return found

    def mask(self, names: Collection[str]) -> NDArray[np.bool_]:
        """True at the id of every known name among `names`."""
        return self.marked(self.ids(names))

    def marked(self, ids: Ids) -> NDArray[np.bool_]:
        """True at each of `ids`."""
        out = np.zeros(len(self.names), dtype=np.bool_)
        out[ids] = True
        return out

    def values(self, by_name: Mapping[str, float], missing: float = np.nan) -> NDArray[np.float64]:
        """`by_name` as an array over the ids, `missing` where a cluster has no value."""
        out = np.full(len(self.names), missing)
        for name, value in by_name.items():
            index = self.position.get(name)
            if index is not None:
                out[index] = value
        return out

    def names_of(self, ids: Ids) -> list[str]:
        """The names of `ids`, in the ids' order."""
        names: list[str] = self._labels[ids].tolist()
        return names
