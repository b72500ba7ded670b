// Command produce sends placement-stream events to Kafka with franz-go, partitioned as the processor requires:
// by murmur2 of the record key, as Kafka's Java client does.
//
// It reads one JSON object per line on stdin, {"topic": ..., "key": ..., "value": {...}} (a null value is a
// tombstone), and prints "key<TAB>partition<TAB>offset" for each record once the broker has it.
//
//	go run . -brokers localhost:9092 < events.jsonl
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

type line struct {
	Topic string          `json:"topic"`
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func main() {
	brokers := flag.String("brokers", "localhost:9092", "bootstrap servers, comma-separated")
	flag.Parse()
	client, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		// A nil hasher is Kafka's murmur2: every record of a subject lands on the partition the processor's
		// task for that subject reads. franz-go's default partitioner hashes keys the same way; saying so
		// keeps it that way.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		fail(err)
	}
	defer client.Close()
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		if strings.TrimSpace(scanner.Text()) == "" {
			continue
		}
		var in line
		if err := json.Unmarshal(scanner.Bytes(), &in); err != nil {
			fail(err)
		}
		record := &kgo.Record{Topic: in.Topic, Key: []byte(in.Key)}
		if len(in.Value) > 0 && string(in.Value) != "null" {
			record.Value = in.Value
			record.Headers = []kgo.RecordHeader{
				{Key: "content-type", Value: []byte("application/cloudevents+json; charset=UTF-8")},
			}
		}
		produced, err := client.ProduceSync(context.Background(), record).First()
		if err != nil {
			fail(err)
		}
		fmt.Printf("%s\t%d\t%d\n", produced.Key, produced.Partition, produced.Offset)
	}
	if err := scanner.Err(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "produce:", err)
	os.Exit(1)
}
