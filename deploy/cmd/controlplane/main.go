// Command controlplane serves the REST API of the split deployment
// (`controlplane`), or runs an admin command (`controlplane admin …`). Any
// number of control planes can run side by side: state is in the database,
// rate limits in Redis (SHORTLINK_REDIS_URL), link changes go out on Kafka.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"shortlink.dev/analytics/backend"
	"shortlink.dev/controlplane/cli"
	"shortlink.dev/shared/kafka"
)

func main() {
	p := cli.Program{Name: "controlplane", ServeByDefault: true, Planes: planes}
	if err := cli.Main(context.Background(), p, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

// planes connects the API to the other planes of the split deployment: link
// changes out through Kafka, statistics read from the click store.
func planes(ctx context.Context, env cli.Env) (*cli.Planes, error) {
	cfg := env.Config
	if len(cfg.KafkaBrokers) == 0 {
		return nil, errors.New("invalid setting SHORTLINK_KAFKA_BROKERS: the split control plane tells the edges of link changes through Kafka (or run `shortlink serve`)")
	}
	if err := kafka.EnsureTopics(ctx, cfg.KafkaBrokers); err != nil {
		return nil, err
	}
	clicks, err := backend.Open(ctx, cfg, env.Store)
	if err != nil {
		return nil, err
	}
	changes := kafka.NewChanges(cfg.KafkaBrokers, env.Logger)
	changes.AwaitEcho() // answer a change once the edges have read it
	return &cli.Planes{
		Changes: changes,
		Stats:   clicks,
		Stop: func(context.Context) error {
			return errors.Join(changes.Close(), clicks.Close())
		},
	}, nil
}
