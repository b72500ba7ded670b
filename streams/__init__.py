"""The asyncio shell: settings, Kafka I/O, the processor loop, timers, replay, metrics, health and the CLI."""
