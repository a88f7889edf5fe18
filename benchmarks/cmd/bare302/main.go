// Command bare302 is the yardstick of the platform benchmarks (package
// benchmarks/internal/bare) as a process of its own: a fasthttp server with
// the edge's server settings whose handler only answers every request with
// the edge's redirect (302, Location, Cache-Control: no-store), deciding
// nothing and recording nothing. What the edge costs beyond it is what the
// product adds to a redirect.
//
// Usage:
//
//	bare302 [-addr 127.0.0.1:0] [-location URL]
//
// It prints "bare302 listening on http://ADDR/" once it listens and stops on
// SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"shortlink.dev/benchmarks/internal/bare"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	location := flag.String("location", "https://example.com/landing?a=1", "Location of every answer")
	flag.Parse()
	if err := run(*addr, *location); err != nil {
		fmt.Fprintln(os.Stderr, "bare302:", err)
		os.Exit(1)
	}
}

func run(addr, location string) error {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return err
	}
	srv := bare.NewServer(location, slog.New(slog.NewTextHandler(os.Stderr, nil)).With("server", "bare302"))
	fmt.Printf("bare302 listening on http://%s/\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.ShutdownWithContext(sctx)
}
