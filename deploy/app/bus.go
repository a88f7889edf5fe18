package app

import (
	"context"
	"errors"
	"path/filepath"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/kafka"
)

// Bus is the process's side of the bus: in-process on the standalone's
// embedded defaults, Kafka with SHORTLINK_KAFKA_BROKERS.
type Bus struct {
	// Producer takes the edge's clicks (standalone and edge).
	Producer bus.ClickProducer
	// Changes carries link changes from the API's relay to the edges (all
	// but analytics).
	Changes bus.LinkChanges

	memory   *bus.Memory
	producer *kafka.Producer
	changes  *kafka.Changes
	// consumer stores the clicks of Kafka's topic (standalone on Kafka and
	// analytics: a member of the consumer group "analytics").
	consumer *Task
}

// openBus opens what the shape uses of the bus. On the embedded defaults
// the edge hands clicks to the in-process bus, whose consumer writes them in
// batches into the click store; with Kafka the same process (or the split
// processes) goes through the topics.
func (m *Main) openBus(ctx context.Context) error {
	b := &Bus{}
	m.Bus = b
	cfg := m.Config
	if len(cfg.KafkaBrokers) == 0 { // the standalone only: Open checked the others
		b.memory = bus.NewMemory(bus.MemoryOptions{Logger: m.Logger, FlushInterval: cfg.ClickFlushInterval})
		go b.memory.Consume(m.Clicks.Write)
		b.Producer, b.Changes = b.memory, b.memory
		return nil
	}
	brokers := cfg.KafkaBrokers
	if err := kafka.EnsureTopics(ctx, brokers); err != nil {
		return err
	}
	if m.Shape == ShapeStandalone || m.Shape == ShapeEdge {
		producer, err := kafka.NewProducer(kafka.ProducerOptions{
			Brokers: brokers, SpoolDir: filepath.Join(cfg.DataDir, "click-spool"), Logger: m.Logger,
			MaxSpoolBytes: cfg.ClickSpoolMaxBytes, FlushInterval: cfg.ClickFlushInterval,
		})
		if err != nil {
			return err
		}
		b.producer, b.Producer = producer, producer
	}
	if m.Shape != ShapeAnalytics {
		b.changes = kafka.NewChanges(brokers, m.Logger)
		b.Changes = b.changes
		if m.runsAPI() {
			b.changes.AwaitEcho() // answer a change once the edges have read it
		}
		if m.Shape == ShapeStandalone {
			// For the other replicas' changes: this one's edge runs
			// in-process. The split edge acknowledges once it is built
			// (edgeplane).
			b.changes.Acknowledge()
		}
	}
	if m.Shape == ShapeStandalone || m.Shape == ShapeAnalytics {
		// The members take turns on a partition through the database's
		// advisory locks, so that a rebalance cannot have two of them
		// store the same clicks at once (kafka.ConsumerOptions.Fence).
		consumer := kafka.NewConsumer(kafka.ConsumerOptions{Brokers: brokers, Group: "analytics", Logger: m.Logger,
			Fence: m.Store.LockClickPartitions})
		b.consumer = Start(func(ctx context.Context) error { return consumer.Run(ctx, m.Clicks.Write) })
	}
	return nil
}

// Acknowledge makes this process answer the control planes' link changes
// once applied: the split edge calls it when it is built.
func (b *Bus) Acknowledge() {
	if b.changes != nil {
		b.changes.Acknowledge()
	}
}

// close stores or sends every buffered click, the edge's producer first,
// until ctx ends (clicksErr), then stops the link changes (changesErr).
func (b *Bus) close(ctx context.Context) (clicksErr, changesErr error) {
	if b.memory != nil {
		return b.memory.Close(ctx), nil
	}
	if b.producer != nil {
		clicksErr = b.producer.Close(ctx)
	}
	clicksErr = errors.Join(clicksErr, b.consumer.Stop(ctx))
	if b.changes != nil {
		changesErr = b.changes.Close()
	}
	return clicksErr, changesErr
}
