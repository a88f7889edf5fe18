package engines

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScaleS11ParseSettings(t *testing.T) {
	out := "broker on 127.0.0.1:1\nSHORTLINK_DATABASE_URL=postgres://p@127.0.0.1:5432/shortlink_x?sslmode=disable\n" +
		"  SHORTLINK_KAFKA_BROKERS=127.0.0.1:9092 \nSHORTLINK_CLICKHOUSE_URL=clickhouse://127.0.0.1:9000/shortlink\nOTHER=1\n"
	env, err := ParseSettings(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(env) != 3 || env["SHORTLINK_KAFKA_BROKERS"] != "127.0.0.1:9092" || env["SHORTLINK_DATABASE_URL"] != "postgres://p@127.0.0.1:5432/shortlink_x?sslmode=disable" {
		t.Errorf("settings: %v", env)
	}
	if _, err := ParseSettings("SHORTLINK_DATABASE_URL=x\nSHORTLINK_KAFKA_BROKERS=y\n"); err == nil || !strings.Contains(err.Error(), "SHORTLINK_CLICKHOUSE_URL") {
		t.Errorf("missing ClickHouse: %v", err)
	}
}

func TestScaleS11EnvironAndPID(t *testing.T) {
	t.Setenv("SHORTLINK_LEAK", "1")
	dir := t.TempDir()
	e := &Engines{Dir: dir, Env: map[string]string{"SHORTLINK_KAFKA_BROKERS": "b:1"}}
	env := e.Environ("/data", "SHORTLINK_X=2")
	if slices.Contains(env, "SHORTLINK_LEAK=1") {
		t.Error("the shell's SHORTLINK_ settings leak into the process")
	}
	for _, want := range []string{"SHORTLINK_KAFKA_BROKERS=b:1", "SHORTLINK_DATA_DIR=/data", "SHORTLINK_X=2"} {
		if !slices.Contains(env, want) {
			t.Errorf("environment lacks %s", want)
		}
	}
	if e.PID("kafka") != 0 {
		t.Error("a pid without its file")
	}
	if err := os.WriteFile(filepath.Join(dir, "kafka.pid"), []byte("1234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := e.PID("kafka"); got != 1234 {
		t.Errorf("PID = %d", got)
	}
}
