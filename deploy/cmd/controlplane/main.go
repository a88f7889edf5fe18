// Command controlplane serves the REST API of the split deployment
// (`controlplane`), or runs an admin command (`controlplane admin …`). Any
// number of control planes can run side by side: state is in the database,
// rate limits in Redis (SHORTLINK_REDIS_URL), link changes go out on Kafka,
// statistics are read from the click store. deploy/app wires it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"shortlink.dev/controlplane/cli"
	"shortlink.dev/deploy/app"
	"shortlink.dev/deploy/app/apiplane"
	"shortlink.dev/deploy/app/clickplane"
)

func main() {
	p := cli.Program{Name: "controlplane", ServeByDefault: true, Serve: serve}
	if err := cli.Main(context.Background(), p, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, stdout, stderr io.Writer) error {
	return app.Serve(ctx, &app.Main{Name: "controlplane", Shape: app.ShapeControlPlane, API: apiplane.New(), Clicks: clickplane.New(), Stdout: stdout, Stderr: stderr})
}
