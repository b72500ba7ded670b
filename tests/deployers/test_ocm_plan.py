"""The OCM deployer's page planning: the writes, their order, and that no kept cluster leaves every page."""

from __future__ import annotations

import pytest

from deployers.ocm.plan import CurrentPage, Page, Step, StepKind, plan_pages

LABELS = {"cluster.open-cluster-management.io/placement": "web"}


def group(name: str, index: int) -> dict[str, str]:
    return {
        **LABELS,
        "cluster.open-cluster-management.io/decision-group-name": name,
        "cluster.open-cluster-management.io/decision-group-index": str(index),
    }


def current(*pages: tuple[str, tuple[str, ...]], owned: bool = True) -> dict[str, CurrentPage]:
    return {name: CurrentPage(name, group("", 0), clusters, owned) for name, clusters in pages}


def desired(*pages: tuple[str, tuple[str, ...]]) -> list[Page]:
    return [Page(name, group("", 0), clusters) for name, clusters in pages]


def shown(steps: list[Step]) -> list[str]:
    """Each step as text; a CREATE writes no clusters (the STATUS after it does)."""
    return [
        f"{s.kind.value} {s.page.name} {'' if s.kind is StepKind.CREATE else ','.join(s.page.clusters)}".rstrip()
        for s in steps
    ]


def simulate(before: dict[str, CurrentPage], steps: list[Step]) -> list[dict[str, tuple[str, ...]]]:
    """What a reader listing the pages sees after each write."""
    pages = {name: page.clusters for name, page in before.items()}
    seen = [dict(pages)]
    for step in steps:
        if step.kind is StepKind.DELETE:
            pages.pop(step.page.name)
        elif step.kind is StepKind.CREATE:
            pages[step.page.name] = ()
        elif step.kind is StepKind.STATUS:
            pages[step.page.name] = step.page.clusters
        seen.append(dict(pages))
    return seen


CASES = [
    pytest.param(
        current(),
        desired(("web-decision-1", ("a", "b"))),
        ["create web-decision-1", "status web-decision-1 a,b"],
        id="first-decision",
    ),
    pytest.param(current(("web-decision-1", ("a", "b"))), desired(("web-decision-1", ("a", "b"))), [], id="unchanged"),
    pytest.param(current(), desired(("web-decision-1", ())), ["create web-decision-1"], id="nothing-selected"),
    pytest.param(
        current(("web-decision-1", ("a", "b"))),
        desired(("web-decision-1", ("a",))),
        ["status web-decision-1 a"],
        id="a-cluster-dropped",
    ),
    pytest.param(
        current(("web-decision-1", ("a", "b")), ("web-decision-2", ("c",))),
        desired(("web-decision-1", ("a", "c"))),
        ["status web-decision-1 a,c", "delete web-decision-2"],  # b is no longer selected: dropped at once
        id="a-page-emptied",
    ),
    pytest.param(
        current(("web-decision-1", ("a", "b")), ("web-decision-2", ("c", "d"))),
        desired(("web-decision-1", ("a", "d")), ("web-decision-2", ("c", "b"))),
        [
            "status web-decision-1 a,d,b",
            "status web-decision-2 c,b,d",
            "status web-decision-1 a,d",
            "status web-decision-2 c,b",
        ],
        id="clusters-swap-pages",
    ),
    pytest.param(
        current(("web-decision-1", ("a", "b", "c"))),
        desired(("web-decision-1", ("a",)), ("web-decision-2", ("b",))),
        ["create web-decision-2", "status web-decision-2 b", "status web-decision-1 a"],
        id="a-page-split",
    ),
]


@pytest.mark.parametrize(("before", "after", "expected"), CASES)
def test_plans_the_writes_in_order(before: dict[str, CurrentPage], after: list[Page], expected: list[str]) -> None:
    steps = plan_pages(before, after)
    assert shown(steps) == expected
    kept = {c for page in before.values() for c in page.clusters} & {c for page in after for c in page.clusters}
    for pages in simulate(before, steps):
        missing = kept - {c for clusters in pages.values() for c in clusters}
        assert not missing, f"a reader would miss {missing} in {pages}"
    final = simulate(before, steps)[-1]
    assert final == {page.name: page.clusters for page in after}
    replanned = {n: CurrentPage(n, group("", 0), c, owned=True) for n, c in final.items()}
    assert plan_pages(replanned, after) == [], "a second run writes nothing"


def test_a_page_owned_by_someone_else_or_labelled_otherwise_is_relabelled_before_it_is_written() -> None:
    before = current(("web-decision-1", ("a",)), owned=False)
    after = [Page("web-decision-1", group("canary", 0), ("a", "b"))]
    assert shown(plan_pages(before, after)) == ["metadata web-decision-1 a,b", "status web-decision-1 a,b"]
    assert shown(plan_pages(before, [Page("web-decision-1", group("", 0), ("a",))])) == ["metadata web-decision-1 a"]


def test_every_intermediate_state_plans_to_the_same_end() -> None:
    """A conflict makes the writer observe and plan again from wherever it stopped."""
    before = current(("web-decision-1", ("a", "b")), ("web-decision-2", ("c", "d")))
    after = desired(("web-decision-1", ("d",)), ("web-decision-2", ("a", "e")), ("web-decision-3", ("b",)))
    steps = plan_pages(before, after)
    for stopped in simulate(before, steps):
        middle = {n: CurrentPage(n, group("", 0), c, owned=True) for n, c in stopped.items()}
        kept = {c for clusters in stopped.values() for c in clusters} & {c for p in after for c in p.clusters}
        for pages in simulate(middle, plan_pages(middle, after)):
            assert kept <= {c for clusters in pages.values() for c in clusters}
        assert simulate(middle, plan_pages(middle, after))[-1] == {p.name: p.clusters for p in after}
