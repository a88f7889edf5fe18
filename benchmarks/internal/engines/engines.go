// Package engines starts and stops the split shape's engines for a benchmark
// with `deploy/local/services up DIR` (a fresh PostgreSQL database on the
// machine's server, the kfake Kafka-protocol broker, a clickhouse-server of
// its own) and reads the settings it prints.
package engines

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Engines are the engines one `services up` started.
type Engines struct {
	// Dir is the folder services up was given (pid files, data, logs).
	Dir string
	// Env holds the SHORTLINK_ settings services up printed
	// (SHORTLINK_DATABASE_URL, SHORTLINK_KAFKA_BROKERS, SHORTLINK_CLICKHOUSE_URL).
	Env  map[string]string
	root string
	log  io.Writer
}

// Up runs `ROOT/deploy/local/services up DIR`; postgres, when set, is the
// server it creates its database on (SHORTLINK_LOCAL_POSTGRES_URL; else the
// script's default, 127.0.0.1:5432). The script's progress goes to log. When
// Up returns an error after the script ran, what it started is stopped.
func Up(root, dir, postgres string, log io.Writer) (*Engines, error) {
	e := &Engines{Dir: dir, root: root, log: log}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.script(), "up", dir)
	cmd.Dir = root
	cmd.Stderr = log
	if postgres != "" {
		cmd.Env = append(os.Environ(), "SHORTLINK_LOCAL_POSTGRES_URL="+postgres)
	}
	out, err := cmd.Output()
	if err != nil {
		e.Down() //nolint:errcheck // best effort: the script undoes a failed up itself
		return nil, fmt.Errorf("%s up (PostgreSQL, the broker and ClickHouse are needed): %w", e.script(), err)
	}
	if e.Env, err = ParseSettings(string(out)); err != nil {
		e.Down() //nolint:errcheck // best effort
		return nil, fmt.Errorf("%s up: %w", e.script(), err)
	}
	return e, nil
}

func (e *Engines) script() string { return filepath.Join(e.root, "deploy", "local", "services") }

// Down runs `services down DIR`: stops the engines and drops the database.
func (e *Engines) Down() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	down := exec.CommandContext(ctx, e.script(), "down", e.Dir)
	down.Dir, down.Stdout, down.Stderr = e.root, e.log, e.log
	return down.Run()
}

// PID is the pid of an engine process services up started ("kafka",
// "clickhouse"), or 0 when there is none.
func (e *Engines) PID(name string) int {
	b, err := os.ReadFile(filepath.Join(e.Dir, name+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// ParseSettings reads the NAME=value lines services up prints and wants the
// three that point at the engines.
func ParseSettings(out string) (map[string]string, error) {
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && strings.HasPrefix(k, "SHORTLINK_") {
			env[k] = v
		}
	}
	for _, need := range []string{"SHORTLINK_DATABASE_URL", "SHORTLINK_KAFKA_BROKERS", "SHORTLINK_CLICKHOUSE_URL"} {
		if env[need] == "" {
			return nil, fmt.Errorf("no %s printed", need)
		}
	}
	return env, nil
}

// BaseEnv is this process's environment without any SHORTLINK_ setting, so
// that the shell's settings never leak into a measured server.
func BaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHORTLINK_") {
			env = append(env, kv)
		}
	}
	return env
}

// Environ is a split process's environment: BaseEnv, the engines' settings,
// its own data folder and the extra settings.
func (e *Engines) Environ(dataDir string, extra ...string) []string {
	env := BaseEnv()
	for k, v := range e.Env {
		env = append(env, k+"="+v)
	}
	return append(append(env, "SHORTLINK_DATA_DIR="+dataDir), extra...)
}
