// Package chserver runs a ClickHouse server as a child process, on loopback
// ports, with every file it writes in one folder: for the tests of the
// ClickHouse backend (package chtest) and for the local split deployment.
//
// The configuration it writes runs on Debian's clickhouse-server 18.16 and on
// current releases alike: the root element <yandex> is still read by current
// servers, and it sets nothing that either does not know.
package chserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// Binaries are the places Find looks for the server when it is not on PATH:
// Debian installs clickhouse-server in /usr/sbin, which a non-root PATH lacks.
var Binaries = []string{"/usr/bin/clickhouse-server", "/usr/sbin/clickhouse-server"}

// ErrNotInstalled is returned by Find when no clickhouse-server is installed.
var ErrNotInstalled = errors.New("clickhouse-server is not installed: install it (apt-get install " +
	"clickhouse-server) or point SHORTLINK_CLICKHOUSE_URL at a running server")

// Find returns the path of the clickhouse-server binary: on PATH, or in one
// of Binaries.
func Find() (string, error) {
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return p, nil
	}
	for _, p := range Binaries {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", ErrNotInstalled
}

// Config says how Start runs a server.
type Config struct {
	// Dir holds the configuration, the data and the logs; it is created if
	// missing. A server started on the same Dir again finds its data.
	Dir string
	// TCPPort is the native-protocol port and HTTPPort the HTTP one, both on
	// 127.0.0.1; 0 picks a free port.
	TCPPort, HTTPPort int
	// Binary is the server's executable; empty means Find.
	Binary string
	// StartTimeout bounds the wait until the server answers; 0 means 60s.
	StartTimeout time.Duration
	// Extra is XML added inside the root element of config.xml: the
	// cluster's remote_servers, zookeeper, macros and interserver port
	// (cluster.go). Empty for a server on its own.
	Extra string
	// Profile is XML added to the default profile of users.xml: the
	// cluster's settings that a client of Debian's 18.16 cannot send with
	// its queries (its protocol sends numbers only).
	Profile string
}

// WriteConfig writes config.xml and users.xml into dir, creating it, for a
// server that listens on 127.0.0.1 only, on tcpPort (native protocol) and
// httpPort, keeps every file it writes (data, temporary files, logs) under
// dir, runs in UTC, and lets the user "default" in without a password from
// loopback. It returns the path of config.xml, for clickhouse-server
// --config-file.
func WriteConfig(dir string, tcpPort, httpPort int) (configPath string, err error) {
	return writeConfig(dir, tcpPort, httpPort, "shortlink", "", "")
}

// writeConfig is WriteConfig with the server's display name, which it tells
// every client in its handshake.
func writeConfig(dir string, tcpPort, httpPort int, displayName, extra, profile string) (configPath string, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cannot write the ClickHouse config: %w", err)
	}
	for _, sub := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			return "", fmt.Errorf("cannot write the ClickHouse config: %w", err)
		}
	}
	// Folders end in a slash: ClickHouse appends file names to them as they are.
	path := func(sub string) string { return escape(filepath.Join(dir, sub) + "/") }
	config := `<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>` + escape(filepath.Join(dir, "log", "clickhouse-server.log")) + `</log>
        <errorlog>` + escape(filepath.Join(dir, "log", "clickhouse-server.err.log")) + `</errorlog>
        <size>10M</size>
        <count>2</count>
    </logger>
    <display_name>` + escape(displayName) + `</display_name>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>` + strconv.Itoa(tcpPort) + `</tcp_port>
    <http_port>` + strconv.Itoa(httpPort) + `</http_port>
    <path>` + path("data") + `</path>
    <tmp_path>` + path("tmp") + `</tmp_path>
    <user_files_path>` + path("user_files") + `</user_files_path>
    <format_schema_path>` + path("format_schemas") + `</format_schema_path>
    <users_config>users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
` + extra + `</yandex>
`
	users := `<?xml version="1.0"?>
<yandex>
    <profiles>
        <default>
            <max_memory_usage>4000000000</max_memory_usage>
            <!-- How often an idle connection checks for shutdown: the
                 default, 10 s, holds up every stop by as much. -->
            <poll_interval>1</poll_interval>
` + profile + `        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas>
        <default>
        </default>
    </quotas>
</yandex>
`
	configPath = filepath.Join(dir, "config.xml")
	if err := os.WriteFile(configPath, []byte(config), 0o640); err != nil {
		return "", fmt.Errorf("cannot write the ClickHouse config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(users), 0o640); err != nil {
		return "", fmt.Errorf("cannot write the ClickHouse config: %w", err)
	}
	return configPath, nil
}

func escape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // writes to a bytes.Buffer never fail
	return b.String()
}

// Server is a running clickhouse-server child process.
type Server struct {
	cmd      *exec.Cmd
	dir      string
	name     string // the display name
	tcpPort  int
	httpPort int
	exited   chan struct{} // closed when the process has exited
	exitErr  error         // the process's exit, once exited is closed
	stopOnce sync.Once
	stopErr  error
}

// Start writes the configuration into cfg.Dir, starts the server and returns
// once it answers a native-protocol ping. Ports left 0 are picked free; when
// the server loses such a port to another process before it binds it, Start
// tries again with new ones. Stop the server with Stop.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Binary == "" {
		bin, err := Find()
		if err != nil {
			return nil, err
		}
		cfg.Binary = bin
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	picked := cfg.TCPPort == 0 || cfg.HTTPPort == 0
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, cfg)
		if err == nil || !picked || attempt == 3 || !errors.Is(err, errAddressInUse) {
			return s, err
		}
	}
}

// errAddressInUse marks a server that could not bind its ports.
var errAddressInUse = errors.New("address in use")

func start(ctx context.Context, cfg Config) (*Server, error) {
	tcpPort, httpPort := cfg.TCPPort, cfg.HTTPPort
	var err error
	if tcpPort == 0 {
		if tcpPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	if httpPort == 0 {
		if httpPort, err = freePort(); err != nil {
			return nil, err
		}
	}
	// The display name tells this server from another one that holds the
	// port already and would answer the pings in its place.
	name := "shortlink-" + rand.Text()
	configPath, err := writeConfig(cfg.Dir, tcpPort, httpPort, name, cfg.Extra, cfg.Profile)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(configPath)
	errLog := filepath.Join(dir, "log", "clickhouse-server.err.log")
	_ = os.Remove(errLog) // so that a failure shows this start's errors only
	cmd := exec.Command(cfg.Binary, "--config-file="+configPath)
	cmd.Dir = dir
	stdout, err := os.OpenFile(filepath.Join(dir, "log", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("cannot start ClickHouse: %w", err)
	}
	defer stdout.Close()
	cmd.Stdout, cmd.Stderr = stdout, stdout
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start ClickHouse %s: %w", cfg.Binary, err)
	}
	s := &Server{cmd: cmd, dir: dir, name: name, tcpPort: tcpPort, httpPort: httpPort, exited: make(chan struct{})}
	go func() {
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, cfg.StartTimeout); err != nil {
		s.Stop()
		logged, _ := os.ReadFile(errLog)
		if bytes.Contains(logged, []byte("Address already in use")) {
			err = fmt.Errorf("%w: %w", errAddressInUse, err)
		}
		return nil, fmt.Errorf("cannot start ClickHouse on 127.0.0.1:%d: %w%s", tcpPort, err, tail(logged))
	}
	return s, nil
}

// waitReady pings the server until it answers, it exits, or timeout passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := s.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited (%v) before it answered", s.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("no answer after %s: %w", timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ping connects to the server's port and checks that this server answers.
func (s *Server) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := ch.Open(&ch.Options{Addr: []string{s.Addr()}, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Ping(ctx); err != nil {
		return err
	}
	v, err := conn.ServerVersion()
	if err != nil {
		return err
	}
	if v.DisplayName != s.name {
		return fmt.Errorf("another server (%s) answers on %s", v.DisplayName, s.Addr())
	}
	return nil
}

// tail returns the end of a log for an error message.
func tail(log []byte) string {
	log = bytes.TrimSpace(log)
	if len(log) == 0 {
		return ""
	}
	const max = 2000
	if len(log) > max {
		log = log[len(log)-max:]
	}
	return "\n" + strings.TrimSpace(string(log))
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr returns the server's native-protocol address, host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tcpPort)) }

// HTTPAddr returns the server's HTTP address, host:port.
func (s *Server) HTTPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.httpPort)) }

// URL returns a clickhouse:// URL of the server's database, for
// SHORTLINK_CLICKHOUSE_URL.
func (s *Server) URL(database string) string { return "clickhouse://" + s.Addr() + "/" + database }

// Pid returns the server's process id, to read its CPU time from /proc.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Dir returns the folder of the server's configuration, data and logs.
func (s *Server) Dir() string { return s.dir }

// Exited is closed when the server process has exited, for whatever reason.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop stops the server: SIGTERM, then SIGKILL when it has not exited after
// 10 seconds. It returns once the process is gone; later calls return the
// first one's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stopErr = errors.New("cannot stop ClickHouse: it did not exit within 10s of SIGTERM and was killed")
		}
	})
	return s.stopErr
}

// Kill kills the server at once (SIGKILL), as a crash would, and returns once
// the process is gone.
func (s *Server) Kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}
