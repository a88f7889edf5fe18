// Command stack starts and stops, on loopback, the engines of the split
// deployment for development and tests: a fresh database on the machine's
// PostgreSQL, a Kafka-protocol broker (kfake) and a ClickHouse server with its
// own config and data under DIR. `deploy/local/services up|down DIR` runs it.
//
//	stack up DIR     start them; print the settings that point at them (NAME=value)
//	stack up --clickhouse-cluster NAME DIR
//	                 the same with a ClickHouse cluster named NAME instead of
//	                 one server: one ZooKeeper and 2 shards of 2 replicas
//	stack down DIR   stop them and remove what up created
//	stack broker --port P --dir D   (internal) run the Kafka-protocol broker
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/twmb/franz-go/pkg/kfake"

	"shortlink.dev/analytics/clickhouse/chserver"
)

const usage = "usage: services up [--clickhouse-cluster NAME] DIR | services down DIR"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "services:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 1 {
		return errors.New(usage)
	}
	switch args[0] {
	case "up":
		if len(args) == 4 && args[1] == "--clickhouse-cluster" {
			return up(args[3], args[2])
		}
		if len(args) != 2 {
			return errors.New(usage)
		}
		return up(args[1], "")
	case "down":
		if len(args) != 2 {
			return errors.New(usage)
		}
		return down(args[1])
	case "broker":
		return broker(args[1:])
	}
	return errors.New(usage)
}

// adminURL is the machine's PostgreSQL, where up creates a fresh database.
func adminURL() string {
	if u := os.Getenv("SHORTLINK_LOCAL_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// up starts the services in dir; cluster, when not empty, names the
// ClickHouse cluster to start in place of a single server.
func up(dir, cluster string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "services.env")); err == nil {
		return fmt.Errorf("%s holds running services already; run `services down %s` first", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := []string{}
	fail := func(err error) error {
		down(dir) //nolint:errcheck // best effort: undo what was started
		return err
	}

	// PostgreSQL: a fresh database on the machine's server.
	db := "shortlink_" + randomHex(6)
	if err := execAdmin(ctx, "CREATE DATABASE "+db); err != nil {
		return fail(fmt.Errorf("cannot create a database on %s (is PostgreSQL running?): %w", adminURL(), err))
	}
	os.WriteFile(filepath.Join(dir, "postgres.db"), []byte(db), 0o640)
	env = append(env, "SHORTLINK_DATABASE_URL="+databaseURL(db))

	// Kafka-protocol broker: this program, detached.
	kport := freePort()
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	if err := spawn(dir, "kafka", self, "broker", "--port", strconv.Itoa(kport), "--dir", filepath.Join(dir, "kafka")); err != nil {
		return fail(err)
	}
	if err := waitPort(ctx, kport); err != nil {
		return fail(fmt.Errorf("the Kafka-protocol broker did not start: %w", err))
	}
	env = append(env, fmt.Sprintf("SHORTLINK_KAFKA_BROKERS=127.0.0.1:%d", kport))

	if cluster != "" {
		urlEnv, err := upCluster(ctx, dir, cluster)
		if err != nil {
			return fail(err)
		}
		env = append(env, urlEnv...)
		out := strings.Join(env, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "services.env"), []byte(out), 0o640); err != nil {
			return fail(err)
		}
		fmt.Print(out)
		return nil
	}

	// ClickHouse: Debian's server with a config and data folder of its own.
	tcp, http := freePort(), freePort()
	conf, err := chserver.WriteConfig(filepath.Join(dir, "clickhouse"), tcp, http)
	if err != nil {
		return fail(err)
	}
	bin, err := chserver.Find()
	if err != nil {
		return fail(err)
	}
	if err := spawn(dir, "clickhouse", bin, "--config-file="+conf); err != nil {
		return fail(err)
	}
	url := fmt.Sprintf("clickhouse://127.0.0.1:%d/shortlink", tcp)
	if err := waitPort(ctx, tcp); err != nil {
		return fail(fmt.Errorf("ClickHouse did not start (log: %s): %w", filepath.Join(dir, "clickhouse"), err))
	}
	env = append(env, "SHORTLINK_CLICKHOUSE_URL="+url)

	out := strings.Join(env, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "services.env"), []byte(out), 0o640); err != nil {
		return fail(err)
	}
	fmt.Print(out)
	return nil
}

func down(dir string) error {
	var errs []error
	// The servers of a cluster (clickhouse-s1r1 …) before its ZooKeeper.
	names, _ := filepath.Glob(filepath.Join(dir, "clickhouse-*.pid"))
	for i, n := range names {
		names[i] = strings.TrimSuffix(filepath.Base(n), ".pid")
	}
	names = append(names, "zookeeper", "clickhouse", "kafka")
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 {
			stopProcess(pid)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "postgres.db")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := execAdmin(ctx, "DROP DATABASE IF EXISTS "+strings.TrimSpace(string(b))+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("cannot drop the database: %w", err))
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// broker runs a Kafka-protocol cluster (kfake) on a fixed loopback port until
// SIGTERM, keeping its data under --dir so that a restart keeps topics and
// committed offsets.
func broker(args []string) error {
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	port := fs.Int("port", 9092, "loopback port")
	dir := fs.String("dir", "", "data folder")
	partitions := fs.Int("partitions", 6, "default partitions of a new topic")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions)}
	if *dir != "" {
		opts = append(opts, kfake.DataDir(*dir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Println("broker on", strings.Join(c.ListenAddrs(), ","))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

func databaseURL(db string) string {
	u := adminURL()
	i := strings.LastIndex(u, "/")
	rest := ""
	if q := strings.Index(u[i:], "?"); q >= 0 {
		rest = u[i+q:]
	}
	return u[:i+1] + db + rest
}

func execAdmin(ctx context.Context, stmt string) error {
	db, err := sql.Open("pgx", adminURL())
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// spawn starts a detached process that outlives this one, its output in
// DIR/NAME.log and its pid in DIR/NAME.pid.
func spawn(dir, name, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o640); err != nil {
		return err
	}
	return cmd.Process.Release()
}

func stopProcess(pid int) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	p.Signal(syscall.SIGTERM)
	for i := 0; i < 100; i++ {
		if err := p.Signal(syscall.Signal(0)); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Kill()
}

func waitPort(ctx context.Context, port int) error {
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// upCluster starts, detached, a ZooKeeper and the four servers of a
// ClickHouse cluster named name (2 shards of 2 replicas) under
// dir/clickhouse, and returns the settings that select it.
func upCluster(ctx context.Context, dir, name string) ([]string, error) {
	bin, err := chserver.Find()
	if err != nil {
		return nil, err
	}
	zkPort := freePort()
	java, args, err := chserver.ZooKeeperCommand(filepath.Join(dir, "clickhouse", "zookeeper"), zkPort)
	if err != nil {
		return nil, err
	}
	if err := spawn(dir, "zookeeper", java, args...); err != nil {
		return nil, err
	}
	for !chserver.ZooKeeperOK(fmt.Sprintf("127.0.0.1:%d", zkPort)) {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("ZooKeeper did not start (log: %s)", filepath.Join(dir, "zookeeper.log"))
		case <-time.After(100 * time.Millisecond):
		}
	}
	configs, err := chserver.ClusterServers(chserver.ClusterConfig{Dir: filepath.Join(dir, "clickhouse"), Name: name,
		Binary: bin}, zkPort)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for sh := range configs {
		for r, cfg := range configs[sh] {
			conf, err := chserver.WriteServerConfig(cfg)
			if err != nil {
				return nil, err
			}
			if err := spawn(dir, fmt.Sprintf("clickhouse-s%dr%d", sh+1, r+1), bin, "--config-file="+conf); err != nil {
				return nil, err
			}
			addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", cfg.TCPPort))
		}
	}
	for sh := range configs {
		for _, cfg := range configs[sh] {
			if err := waitPort(ctx, cfg.TCPPort); err != nil {
				return nil, fmt.Errorf("ClickHouse did not start (log: %s): %w", cfg.Dir, err)
			}
		}
	}
	return []string{"SHORTLINK_CLICKHOUSE_URL=clickhouse://" + strings.Join(addrs, ",") + "/shortlink",
		"SHORTLINK_CLICKHOUSE_CLUSTER=" + name}, nil
}
