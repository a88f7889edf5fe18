// Command edge is the redirector of the split deployment: it reads links from
// the control plane's database (a read-only pool; the click-limit charge is its
// one write), streams clicks to Kafka and evicts its cache from Kafka's
// link-changes topic. Any number of edges can run side by side. deploy/app
// wires it.
package main

import (
	"context"
	"fmt"
	"os"

	"shortlink.dev/deploy/app"
	"shortlink.dev/deploy/app/edgeplane"
)

func main() {
	m := &app.Main{Name: "edge", Shape: app.ShapeEdge, Edge: edgeplane.New(), Stdout: os.Stdout, Stderr: os.Stderr}
	if err := app.Serve(context.Background(), m); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}
