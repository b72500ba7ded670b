"""OCM Placement (v1beta1) in, `placement.decided` out.

The spec models carry the CRD defaults (cluster spec A2) so the engine never re-applies them; every model
accepts unknown fields so a Placement copied from a cluster validates as it is. Decision pages and groups are
TypedDicts: they are built in bulk by the engine and must stay cheap (no per-cluster model objects).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar

import orjson
from pydantic import (
    Field,
    Strict,
    StrictStr,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from typing_extensions import TypedDict

from topics.base import EventData, KubeObject, validated_once
from topics.interning import Interning, SharedByKey
from topics.k8s import Condition, Int32, Int64, LabelSelector, LabelSelectorRequirement, ObjectMeta

__all__ = [
    "AddOnScoreCoordinate",
    "CelSelector",
    "ClusterClaimSelector",
    "ClusterDecision",
    "ClusterPredicate",
    "ClusterSelector",
    "DecisionEntries",
    "DecisionGroup",
    "DecisionGroupStatus",
    "DecisionStrategy",
    "GroupClusterSelector",
    "GroupStrategy",
    "PageMetadata",
    "PageStatus",
    "Placement",
    "PlacementDecided",
    "PlacementDecisionPage",
    "PlacementSpec",
    "PrioritizerConfig",
    "PrioritizerExplain",
    "PrioritizerPolicy",
    "ScoreCoordinate",
    "SpecParts",
    "Toleration",
    "WarningInfo",
]


class ClusterClaimSelector(KubeObject):
    """Selects clusters by `status.clusterClaims`; expressions only, as upstream."""

    match_expressions: list[LabelSelectorRequirement] | None = None


class CelSelector(KubeObject):
    """CEL expressions over `managedCluster`; all must be true."""

    cel_expressions: list[str] = Field(default_factory=list)


class ClusterSelector(KubeObject):
    """One `requiredClusterSelector`: label AND claim AND CEL."""

    label_selector: LabelSelector | None = None
    claim_selector: ClusterClaimSelector | None = None
    cel_selector: CelSelector | None = None


class ClusterPredicate(KubeObject):
    """One predicate; predicates are ORed."""

    required_cluster_selector: ClusterSelector = Field(default_factory=ClusterSelector)


class AddOnScoreCoordinate(KubeObject):
    """Names an AddOnPlacementScore resource and one score in it."""

    resource_name: str = ""
    score_name: str = ""


class ScoreCoordinate(KubeObject):
    """`BuiltIn` (default) or `AddOn`."""

    type: str = "BuiltIn"
    built_in: str = ""
    add_on: AddOnScoreCoordinate | None = None


class PrioritizerConfig(KubeObject):
    """One prioritizer configuration; weight defaults to 1 (CRD)."""

    score_coordinate: ScoreCoordinate | None = None
    weight: Int32 = 1


class PrioritizerPolicy(KubeObject):
    """`Additive` (default) overlays the defaults, `Exact` uses only the configurations."""

    mode: str = "Additive"
    configurations: list[PrioritizerConfig] = Field(default_factory=list)


class Toleration(KubeObject):
    """A toleration; operator defaults to `Equal` (CRD)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class GroupClusterSelector(KubeObject):
    """Selects the clusters of a predefined decision group (label AND claim; CEL is not used)."""

    label_selector: LabelSelector | None = None
    claim_selector: ClusterClaimSelector | None = None
    cel_selector: CelSelector | None = None


class DecisionGroup(KubeObject):
    """A predefined decision group."""

    group_name: str = ""
    group_cluster_selector: GroupClusterSelector = Field(default_factory=GroupClusterSelector)


class GroupStrategy(KubeObject):
    """How selected clusters are split into decision groups."""

    decision_groups: list[DecisionGroup] = Field(default_factory=list)
    clusters_per_decision_group: Annotated[Int32, Strict()] | StrictStr = "100%"
    """IntOrString: its integer is an int32."""


class DecisionStrategy(KubeObject):
    """Wraps the group strategy, as upstream."""

    group_strategy: GroupStrategy = Field(default_factory=GroupStrategy)


class PlacementSpec(KubeObject):
    """Placement spec; `spreadPolicy` is read by the engine (section S), `sortBy` and `scoreRateLimit` are accepted
    and ignored (M)."""

    cluster_sets: list[str] = Field(default_factory=list)
    number_of_clusters: Int32 | None = None
    predicates: list[ClusterPredicate] = Field(default_factory=list)
    prioritizer_policy: PrioritizerPolicy = Field(default_factory=PrioritizerPolicy)
    tolerations: list[Toleration] = Field(default_factory=list)
    decision_strategy: DecisionStrategy = Field(default_factory=DecisionStrategy)
    spread_policy: dict[str, Any] | None = None

    @field_validator("predicates", "prioritizer_policy", "tolerations", "decision_strategy", mode="wrap")
    @classmethod
    def _shared_part(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        return _validated_once(info, info.field_name or "", value, handler)


class SpecParts:
    """Spec parts, and whole specs, by their JSON: Placements repeat them (see `validated_once`). A runtime's
    pools (`Interning`), given to validation as its context: a Placement validated without one shares nothing."""

    __slots__ = ("_by_part",)

    def __init__(self) -> None:
        self._by_part: dict[str, SharedByKey[Any]] = {
            name: SharedByKey()
            for name in ("predicates", "prioritizer_policy", "tolerations", "decision_strategy", "spec")
        }

    def __getitem__(self, part: str) -> SharedByKey[Any]:
        return self._by_part[part]


def _validated_once(info: ValidationInfo, part: str, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    interning = info.context
    if not isinstance(interning, Interning):
        return handler(value)
    return validated_once(interning.pools(SpecParts)[part], value, handler)


class Placement(KubeObject):
    """`cluster.open-cluster-management.io/v1beta1` Placement."""

    api_version: str = "cluster.open-cluster-management.io/v1beta1"
    kind: str = "Placement"
    metadata: ObjectMeta
    spec: PlacementSpec = Field(default_factory=PlacementSpec)

    @field_validator("spec", mode="wrap")
    @classmethod
    def _shared_spec(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        return _validated_once(info, "spec", value, handler)


class ClusterDecision(TypedDict):
    """One decided cluster; `reason` is always empty, as upstream."""

    clusterName: str
    reason: str


class DecisionEntries(list[ClusterDecision]):
    """A page's entries as the engine shares them between the placements publishing that page: nothing changes
    them once made, so their JSON is made once and the codec writes it as it is (`PlacementDecided.json_field`)."""

    __slots__ = ("_json",)

    def json(self) -> orjson.Fragment:
        """`{"decisions": <these entries>}` as JSON, made at the first call."""
        try:
            return self._json
        except AttributeError:
            self._json: orjson.Fragment = orjson.Fragment(orjson.dumps({"decisions": self}))
            return self._json


class PageMetadata(TypedDict):
    """Name, namespace and the three upstream labels of a page."""

    name: str
    namespace: str
    labels: dict[str, str]


class PageStatus(TypedDict):
    """The clusters of one page."""

    decisions: list[ClusterDecision]


class PlacementDecisionPage(TypedDict):
    """One PlacementDecision object (at most 100 clusters)."""

    apiVersion: str
    kind: str
    metadata: PageMetadata
    status: PageStatus


class DecisionGroupStatus(TypedDict):
    """`status.decisionGroups[]` of the Placement."""

    decisionGroupIndex: int
    decisionGroupName: str
    decisions: list[str]
    clusterCount: int


class PrioritizerExplain(TypedDict):
    """Explain data of one prioritizer: its weight and raw (unweighted) scores."""

    name: str
    weight: int
    scores: dict[str, int]


class WarningInfo(TypedDict):
    """A final Warning status: an expired AddOn score, or a CEL expression stopped at its cost limit."""

    plugin: str
    message: str


class PlacementDecided(EventData):
    """The whole decision of one placement: every page, every group, status and the selected clusters' scores."""

    JSON_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"placement_decisions", "decision_groups", "scores", "warning", "passing_scores", "prioritizers", "filtered_by"}
    )

    namespace: str
    name: str
    generation: int = 0
    evaluation_time: datetime | None = None
    placement_decisions: list[PlacementDecisionPage] = Field(default_factory=list)
    decision_groups: list[DecisionGroupStatus] = Field(default_factory=list)
    number_of_selected_clusters: int = 0
    conditions: list[Condition] = Field(default_factory=list)
    scores: dict[str, int] = Field(
        default_factory=dict,
        description="Weighted total of each selected cluster, by name; empty when scheduling stopped on a "
        "misconfiguration or selected nothing. Events written by earlier versions also hold the clusters that "
        "passed the filters but were not selected.",
    )
    """Spec K3: what was decided only, so an event grows with the decision, not with the fleet."""
    warning: WarningInfo | None = None
    deleted: bool = False
    passing_scores: dict[str, int] | None = Field(
        default=None,
        description="Explain only: weighted total of every cluster that passed both filters, selected or not.",
    )
    """Explain only (spec K4)."""
    prioritizers: list[PrioritizerExplain] | None = None
    """Explain only (spec K4): each enabled prioritizer in order, with its raw scores."""
    filtered_by: dict[str, str] | None = None
    """Explain only (spec K4): available cluster -> the filter that removed it."""

    @model_validator(mode="before")
    @classmethod
    def _old_group_count_name(cls, data: Any) -> Any:
        """Events written before the group count took upstream's name `clusterCount` said `clustersCount`; they
        stay on the compacted decisions topic, so a reader still accepts them (and sees `clusterCount`)."""
        groups = data.get("decisionGroups") if isinstance(data, dict) else None
        if not isinstance(groups, list) or not any(isinstance(g, dict) and _OLD_COUNT in g for g in groups):
            return data
        renamed = [
            {("clusterCount" if k == _OLD_COUNT else k): v for k, v in g.items()}
            if isinstance(g, dict) and "clusterCount" not in g
            else g
            for g in groups
        ]
        return {**data, "decisionGroups": renamed}

    def json_field(self, name: str, value: Any) -> Any:
        """Pages whose entries are shared `DecisionEntries` get their status as the entries' JSON, made once."""
        if name != "placement_decisions":
            return value
        return [_wire_page(page) for page in value]


def _wire_page(page: PlacementDecisionPage) -> Any:
    status = page["status"]
    decisions = status["decisions"]
    if type(decisions) is not DecisionEntries or len(status) != 1:
        return page
    return {**page, "status": decisions.json()}


_OLD_COUNT = "clustersCount"
