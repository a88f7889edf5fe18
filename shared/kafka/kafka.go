// Package kafka is the bus at scale, on Kafka through segmentio/kafka-go: the
// topic "clicks" from the edges to the analytics consumer group (records of
// many clicks in the encoding of click.AppendRecord, all of a link in one
// partition), and the topic "link-changes" that every edge reads whole to
// evict its cache. It implements the interfaces of package bus.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Topics and their partitions.
const (
	ClicksTopic      = "clicks"
	ClicksPartitions = 6
	// ChangesTopic has one partition: every edge reads it whole, in order.
	ChangesTopic = "link-changes"
)

// EnsureTopics creates the platform's topics when they are missing, with a
// replication factor of up to 3 as the cluster allows.
func EnsureTopics(ctx context.Context, brokers []string) error {
	var d kafkago.Dialer
	var conn *kafkago.Conn
	var err error
	for _, b := range brokers {
		if conn, err = d.DialContext(ctx, "tcp", b); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("cannot reach a Kafka broker of %v: %w", brokers, err)
	}
	defer conn.Close()
	nodes, err := conn.Brokers()
	if err != nil {
		return fmt.Errorf("cannot list Kafka brokers: %w", err)
	}
	rf := min(3, len(nodes))
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("cannot find the Kafka controller: %w", err)
	}
	cc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("cannot reach the Kafka controller: %w", err)
	}
	defer cc.Close()
	err = cc.CreateTopics(
		// The edge sends its click records uncompressed (compressing them
		// cost it about 150 ns of its redirect core per click); the broker
		// stores them LZ4-compressed, to about a quarter.
		kafkago.TopicConfig{Topic: ClicksTopic, NumPartitions: ClicksPartitions, ReplicationFactor: rf,
			ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "compression.type", ConfigValue: "lz4"}}},
		kafkago.TopicConfig{Topic: ChangesTopic, NumPartitions: 1, ReplicationFactor: rf},
	)
	if err != nil && !errors.Is(err, kafkago.TopicAlreadyExists) {
		return fmt.Errorf("cannot create Kafka topics: %w", err)
	}
	return nil
}

func writer(brokers []string, topic string) *kafkago.Writer {
	return &kafkago.Writer{
		Addr:         kafkago.TCP(brokers...),
		Topic:        topic,
		Balancer:     &kafkago.Hash{},
		RequiredAcks: kafkago.RequireAll,
		BatchSize:    1000,
		BatchTimeout: 5 * time.Millisecond,
		MaxAttempts:  3,
		WriteTimeout: 10 * time.Second,
		Compression:  kafkago.Snappy,
	}
}
