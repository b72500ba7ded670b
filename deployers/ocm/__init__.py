"""The OCM deployer: writes handed-over Placements' PlacementDecisions and status into a Kubernetes API server."""
