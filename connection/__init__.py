"""How every program of the project connects to Kafka and to a Kubernetes API server: the connection settings, the
TLS and SASL options of every client, the reading of a failure as one sentence, and the kubeconfig. The service,
the example advisors, the deployers and the command-line tools share it, so they connect alike."""
