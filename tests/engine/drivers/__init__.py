"""Pure drivers of one engine without Kafka or the runtime, for the engine tables and the conformance runners:
`cluster` (ClusterPlacementEngine) and `hybrid` (one PlacementRule through HybridPlacementEngine)."""
