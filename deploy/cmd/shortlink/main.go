// Command shortlink is the standalone server: every plane in one process on
// embedded storage under SHORTLINK_DATA_DIR (SQLite, an in-process bus), with
// nothing else to install. `shortlink serve` starts it; `shortlink admin …`
// manages workspaces and keys, also while it runs. With
// SHORTLINK_KAFKA_BROKERS and SHORTLINK_CLICKHOUSE_URL the same process runs
// on the real engines, as the split binaries do. deploy/app wires it.
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
	"shortlink.dev/deploy/app/edgeplane"
)

func main() {
	p := cli.Program{Name: "shortlink", Serve: serve}
	if err := cli.Main(context.Background(), p, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "shortlink:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, stdout, stderr io.Writer) error {
	return app.Serve(ctx, &app.Main{Name: "shortlink", Shape: app.ShapeStandalone, API: apiplane.New(), Edge: edgeplane.New(), Clicks: clickplane.New(), Stdout: stdout, Stderr: stderr})
}
