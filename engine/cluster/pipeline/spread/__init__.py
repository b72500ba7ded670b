"""Spread placement: terms (`spec.spreadPolicy`), topologies and the selection loop of the `Spread` prioritizer."""
