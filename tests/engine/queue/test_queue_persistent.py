"""The copy-on-write mapping behind a partition's active applications."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from engine.queue.persistent import PersistentMap, with_item, without_item


@pytest.mark.parametrize("size", [0, 1, 7, 300, 2000])
def test_set_and_delete_leave_the_original_untouched(size: int) -> None:
    plain = {f"app-{i}": i for i in range(size)}
    base = PersistentMap(plain)
    grown = base.set("new", -1).set("app-0", 99)
    assert dict(base) == plain and len(base) == size
    assert dict(grown) == {**plain, "new": -1, "app-0": 99} and len(grown) == size + 1 + (size == 0)
    shrunk = grown.delete("new").delete("missing")
    assert dict(shrunk) == {**plain, "app-0": 99}
    assert shrunk.delete("missing") is shrunk
    assert ("app-0" in shrunk, "new" in shrunk, 5 in shrunk) == (True, False, False)  # type: ignore[comparison-overlap]


def test_equal_to_plain_mappings_and_converted_on_first_change() -> None:
    proxy = MappingProxyType({"a": 1})
    assert PersistentMap({"a": 1}) == proxy == PersistentMap(proxy) and PersistentMap() == {}
    assert with_item(proxy, "b", 2) == {"a": 1, "b": 2} and without_item(proxy, "a") == {}
    assert PersistentMap({"a": 1}).get("z", "dflt") == "dflt"
