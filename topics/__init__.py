"""The wire contract: topic names and configs, the CloudEvents envelope, event models and the codec."""
