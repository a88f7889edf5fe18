// Command analytics is the click consumer of the split deployment: a member of
// the Kafka consumer group "analytics" that stores clicks in batches
// (ClickHouse, or the embedded SQLite tables) and keeps each link's click
// counters. It serves /healthz and /metrics on SHORTLINK_ANALYTICS_ADDR.
// deploy/app wires it.
package main

import (
	"context"
	"fmt"
	"os"

	"shortlink.dev/deploy/app"
	"shortlink.dev/deploy/app/clickplane"
)

func main() {
	m := &app.Main{Name: "analytics", Shape: app.ShapeAnalytics, Clicks: clickplane.New(), Stdout: os.Stdout, Stderr: os.Stderr}
	if err := app.Serve(context.Background(), m); err != nil {
		fmt.Fprintln(os.Stderr, "analytics:", err)
		os.Exit(1)
	}
}
