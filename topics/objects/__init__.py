"""Kubernetes objects as the events the processor consumes: the documents `apply -f`, `watch` and `/what-if`
read, and one converter per kind (YuniKorn's shim rules for pods included)."""
