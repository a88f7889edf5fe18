// Command controlplane serves the REST API of the split deployment
// (`controlplane`), or runs an admin command (`controlplane admin …`).
package main

import (
	"context"
	"fmt"
	"os"

	"shortlink.dev/controlplane/cli"
)

func main() {
	if err := cli.Main(context.Background(), cli.Program{Name: "controlplane", ServeByDefault: true}, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}
