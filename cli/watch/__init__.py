"""`placement-stream watch`: a continuous `apply -f` from a Kubernetes API server."""
