"""Kafka's own operator tools for real-broker tests, run from the broker's cached jars.

The cached distribution holds the broker's jars but not `kafka-tools` (whose `ConsumerGroupCommand` is behind
`kafka-consumer-groups.sh`), so `reset_offsets_to_earliest` runs the same two calls that command makes for
`--reset-offsets --to-earliest --execute`: Java's `Admin.listOffsets(earliest)`, then
`Admin.alterConsumerGroupOffsets` with metadata-less offsets, in a single-file Java program on `kafka-clients`.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from pathlib import Path

from localbroker.fetch import ensure_kafka_libs

_RESET = """
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

public class ResetToEarliest {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(props)) {
            Map<TopicPartition, OffsetSpec> wanted = new HashMap<>();
            for (int i = 2; i < args.length; i++) {
                String topic = args[i];
                int count = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
                for (int p = 0; p < count; p++) wanted.put(new TopicPartition(topic, p), OffsetSpec.earliest());
            }
            Map<TopicPartition, OffsetAndMetadata> reset = new HashMap<>();
            admin.listOffsets(wanted).all().get()
                .forEach((tp, info) -> reset.put(tp, new OffsetAndMetadata(info.offset())));
            admin.alterConsumerGroupOffsets(args[1], reset).all().get();
            reset.forEach((tp, o) -> System.out.println(tp + " " + o.offset()));
        }
    }
}
"""


async def reset_offsets_to_earliest(bootstrap: str, group: str, *topics: str) -> str:
    """`kafka-consumer-groups --bootstrap-server B --group G --topic T... --reset-offsets --to-earliest --execute`
    (the group must have no members); returns what the program printed (one `topic-partition offset` a line)."""
    libs = ensure_kafka_libs()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "ResetToEarliest.java"
        source.write_text(_RESET)
        command = ["java", "-cp", f"{libs}/*", str(source), bootstrap, group, *topics]
        done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"resetting the offsets failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout
