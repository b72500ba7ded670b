"""Kafka plumbing: topic setup, global tables and changelog restore, per-task transactional producers."""
