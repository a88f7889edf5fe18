// Command shortlink is the standalone server: every plane in one process on
// embedded storage under SHORTLINK_DATA_DIR (SQLite, an in-process bus), with
// nothing else to install. `shortlink serve` starts it; `shortlink admin …`
// manages workspaces and keys, also while it runs.
package main

import (
	"context"
	"fmt"
	"os"

	"shortlink.dev/controlplane/cli"
)

func main() {
	if err := cli.Main(context.Background(), cli.Program{Name: "shortlink"}, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "shortlink:", err)
		os.Exit(1)
	}
}
