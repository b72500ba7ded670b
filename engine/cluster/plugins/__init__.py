"""Filters and prioritizers, one per module; `engine.cluster.registry` lists them in order."""
