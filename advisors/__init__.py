"""Example advisors for hybrid PlacementRules: small Kafka programs, run apart from the processor.

`cpu_priority` prefers clusters with more allocatable CPU; `veto` rejects the targets it is given. Both answer
`candidates.proposed` requests that name them with `recommendation.posted` events (hybrid spec K).
"""
