"""What the engine remembers between records: each placement's state and published pages, the indexes of
which placements read which clusters, which placements an inventory change affects, and the decision events
derived from the state. Builds on `pipeline`, `fleet` and `matching`."""
