"""Filters and prioritizers, one per module; `engine.cluster.pipeline.registry` lists them in order."""
