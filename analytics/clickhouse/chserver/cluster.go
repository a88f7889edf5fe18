package chserver

import (
	"bufio"
	"context"
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
)

// ZooKeeperJar is Debian's ZooKeeper server (package zookeeper); its
// manifest names the jars it needs.
var ZooKeeperJar = "/usr/share/java/zookeeper.jar"

// ErrNoZooKeeper is returned by StartZooKeeper and StartCluster when
// ZooKeeper or Java is not installed.
var ErrNoZooKeeper = errors.New("ZooKeeper is not installed: install it (apt-get install zookeeper), " +
	"which brings Java, for a replicated ClickHouse cluster")

// FindZooKeeper returns the java binary and ZooKeeper's jar, or
// ErrNoZooKeeper.
func FindZooKeeper() (java, jar string, err error) {
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", ErrNoZooKeeper
	}
	if _, err := os.Stat(ZooKeeperJar); err != nil {
		return "", "", ErrNoZooKeeper
	}
	return java, ZooKeeperJar, nil
}

// ZooKeeper is a standalone ZooKeeper server run as a child process on a
// loopback port, its data and log in one folder.
type ZooKeeper struct {
	cmd      *exec.Cmd
	port     int
	exited   chan struct{}
	exitErr  error
	stopOnce sync.Once
}

// ZooKeeperCommand writes the configuration of a standalone ZooKeeper with
// its data in dir (created if missing) on 127.0.0.1:port, and returns the
// command that runs it (java and its arguments), for StartZooKeeper and
// for the local deployment, which runs it detached.
func ZooKeeperCommand(dir string, port int) (java string, args []string, err error) {
	java, jar, err := FindZooKeeper()
	if err != nil {
		return "", nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o750); err != nil {
		return "", nil, fmt.Errorf("cannot write the ZooKeeper config: %w", err)
	}
	// A short tick keeps the sessions of a killed ClickHouse short-lived;
	// the admin server (Jetty, port 8080) is not wanted.
	cfg := "tickTime=500\ndataDir=" + filepath.Join(dir, "data") + "\nclientPort=" + strconv.Itoa(port) +
		"\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=0\n" +
		"minSessionTimeout=1000\nmaxSessionTimeout=30000\n4lw.commands.whitelist=srvr,ruok\n"
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o640); err != nil {
		return "", nil, fmt.Errorf("cannot write the ZooKeeper config: %w", err)
	}
	return java, []string{"-Xmx256m", "-cp", jar, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath}, nil
}

// StartZooKeeper starts a standalone ZooKeeper with its data in dir (created
// if missing; a ZooKeeper started on the same dir again finds its data) on
// port (0 picks a free one), and returns once it answers.
func StartZooKeeper(ctx context.Context, dir string, port int) (*ZooKeeper, error) {
	var err error
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	java, args, err := ZooKeeperCommand(dir, port)
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "zookeeper.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("cannot start ZooKeeper: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(java, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start ZooKeeper: %w", err)
	}
	z := &ZooKeeper{cmd: cmd, port: port, exited: make(chan struct{})}
	go func() {
		z.exitErr = cmd.Wait()
		close(z.exited)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ZooKeeperOK(z.Addr()) {
			return z, nil
		}
		select {
		case <-z.exited:
			return nil, fmt.Errorf("ZooKeeper exited (%v) before it answered (see %s)", z.exitErr, logf.Name())
		case <-ctx.Done():
			z.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			z.Stop()
			return nil, fmt.Errorf("ZooKeeper did not answer on 127.0.0.1:%d within 60s", port)
		}
	}
}

// ZooKeeperOK sends the ZooKeeper at addr the four-letter word srvr and
// reports whether it says it serves.
func ZooKeeperOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return false
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "Zookeeper version")
}

// Port returns ZooKeeper's client port.
func (z *ZooKeeper) Port() int { return z.port }

// Addr returns ZooKeeper's client address, host:port.
func (z *ZooKeeper) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(z.port)) }

// Stop stops ZooKeeper (SIGTERM, then SIGKILL after 10 seconds) and returns
// once it has exited.
func (z *ZooKeeper) Stop() {
	z.stopOnce.Do(func() {
		_ = z.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-z.exited:
		case <-time.After(10 * time.Second):
			_ = z.cmd.Process.Kill()
			<-z.exited
		}
	})
}

// ClusterProfile is the default profile's settings on a cluster's servers,
// which the analytics Store needs there (see analytics/clickhouse's
// cluster.go): a shard's reads and writes go to its first live replica
// (in_order), and a subquery over a Distributed table inside a query of
// one is run once and its result sent to the shards (global).
const ClusterProfile = "            <load_balancing>in_order</load_balancing>\n" +
	"            <distributed_product_mode>global</distributed_product_mode>\n"

// ClusterConfig says how StartCluster runs a cluster.
type ClusterConfig struct {
	// Dir holds ZooKeeper's folder (zookeeper) and each server's
	// (s<shard>r<replica>, from 1); a cluster started again on the same
	// Dir with the same ports finds its data.
	Dir string
	// Name is the cluster's name in remote_servers; empty means "shortlink".
	Name string
	// Shards and Replicas per shard; 0 means 2 of each.
	Shards, Replicas int
	// Binary is the server's executable; empty means Find.
	Binary string
}

// Cluster is a ClickHouse cluster on this machine: one ZooKeeper and
// Shards × Replicas clickhouse-server processes, each with the cluster in
// its remote_servers (internal_replication: a Distributed table writes a
// shard's rows to one replica, and ReplicatedMergeTree copies them to the
// others) and its own macros {shard} and {replica}.
type Cluster struct {
	Name string
	ZK   *ZooKeeper
	// Servers[shard][replica], from 0.
	Servers [][]*Server
	configs [][]Config
	mu      sync.Mutex
}

// StartCluster starts ZooKeeper and the servers, and returns once every one
// answers. Stop it with Stop.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if cfg.Binary == "" {
		bin, err := Find()
		if err != nil {
			return nil, err
		}
		cfg.Binary = bin
	}
	if _, _, err := FindZooKeeper(); err != nil {
		return nil, err
	}
	zk, err := StartZooKeeper(ctx, filepath.Join(cfg.Dir, "zookeeper"), 0)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Name: cfg.Name, ZK: zk}
	if c.configs, err = ClusterServers(cfg, zk.Port()); err != nil {
		zk.Stop()
		return nil, err
	}
	c.Servers = make([][]*Server, len(c.configs))
	for sh := range c.configs {
		c.Servers[sh] = make([]*Server, len(c.configs[sh]))
	}
	// The servers start one after another: four at once on two cores
	// take longer than in turn.
	for sh := range c.configs {
		for r := range c.configs[sh] {
			s, err := Start(ctx, c.configs[sh][r])
			if err != nil {
				c.Stop()
				return nil, err
			}
			c.Servers[sh][r] = s
		}
	}
	return c, nil
}

func (cfg ClusterConfig) withDefaults() ClusterConfig {
	if cfg.Name == "" {
		cfg.Name = "shortlink"
	}
	if cfg.Shards == 0 {
		cfg.Shards = 2
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 2
	}
	return cfg
}

// ClusterServers returns the Config of each server of the cluster
// ([shard][replica]), on free loopback ports, with the ZooKeeper at
// 127.0.0.1:zkPort: its folder under cfg.Dir, the cluster in its
// remote_servers (internal_replication), its macros {shard} (1, 2, …) and
// {replica} (s1r1, s1r2, …), its interserver port for the replicas'
// fetches, and ClusterProfile. Start each with Start, or write its files
// with WriteServerConfig.
func ClusterServers(cfg ClusterConfig, zkPort int) ([][]Config, error) {
	cfg = cfg.withDefaults()
	type ports struct{ tcp, http, inter int }
	all := make([][]ports, cfg.Shards)
	for sh := range all {
		all[sh] = make([]ports, cfg.Replicas)
		for r := range all[sh] {
			for _, p := range []*int{&all[sh][r].tcp, &all[sh][r].http, &all[sh][r].inter} {
				var err error
				if *p, err = freePort(); err != nil {
					return nil, err
				}
			}
		}
	}
	var remote strings.Builder
	remote.WriteString("    <remote_servers>\n        <" + cfg.Name + ">\n")
	for sh := range all {
		remote.WriteString("            <shard>\n                <internal_replication>true</internal_replication>\n")
		for r := range all[sh] {
			remote.WriteString("                <replica><host>127.0.0.1</host><port>" +
				strconv.Itoa(all[sh][r].tcp) + "</port></replica>\n")
		}
		remote.WriteString("            </shard>\n")
	}
	remote.WriteString("        </" + cfg.Name + ">\n    </remote_servers>\n")
	zkXML := "    <zookeeper>\n        <node><host>127.0.0.1</host><port>" + strconv.Itoa(zkPort) +
		"</port></node>\n        <session_timeout_ms>10000</session_timeout_ms>\n    </zookeeper>\n"
	configs := make([][]Config, cfg.Shards)
	for sh := range all {
		configs[sh] = make([]Config, cfg.Replicas)
		for r, p := range all[sh] {
			extra := "    <interserver_http_host>127.0.0.1</interserver_http_host>\n" +
				"    <interserver_http_port>" + strconv.Itoa(p.inter) + "</interserver_http_port>\n" +
				remote.String() + zkXML +
				fmt.Sprintf("    <macros>\n        <shard>%d</shard>\n        <replica>s%dr%d</replica>\n    </macros>\n",
					sh+1, sh+1, r+1)
			configs[sh][r] = Config{Dir: filepath.Join(cfg.Dir, fmt.Sprintf("s%dr%d", sh+1, r+1)),
				TCPPort: p.tcp, HTTPPort: p.http, Binary: cfg.Binary, Extra: extra, Profile: ClusterProfile}
		}
	}
	return configs, nil
}

// WriteServerConfig writes the files of a server of cfg (config.xml with
// cfg.Extra, users.xml with cfg.Profile) as WriteConfig does, and returns
// the path of config.xml.
func WriteServerConfig(cfg Config) (configPath string, err error) {
	return writeConfig(cfg.Dir, cfg.TCPPort, cfg.HTTPPort, "shortlink", cfg.Extra, cfg.Profile)
}

// Addrs returns every server's native-protocol address, shard by shard.
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var addrs []string
	for sh := range c.configs {
		for r := range c.configs[sh] {
			addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(c.configs[sh][r].TCPPort)))
		}
	}
	return addrs
}

// URL returns a clickhouse:// URL of database naming every server (the
// client tries them in turn), for SHORTLINK_CLICKHOUSE_URL.
func (c *Cluster) URL(database string) string {
	return "clickhouse://" + strings.Join(c.Addrs(), ",") + "/" + database
}

// Server returns the running server of a shard's replica (from 0).
func (c *Cluster) Server(shard, replica int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Servers[shard][replica]
}

// Restart starts a shard's replica again, on its folder and ports, after it
// stopped or was killed, and returns once it answers.
func (c *Cluster) Restart(ctx context.Context, shard, replica int) error {
	s, err := Start(ctx, c.configs[shard][replica])
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.Servers[shard][replica] = s
	c.mu.Unlock()
	return nil
}

// Stop stops every server, then ZooKeeper, and returns the first error.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	servers := c.Servers
	c.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for _, shard := range servers {
		for _, s := range shard {
			if s != nil {
				wg.Go(func() {
					if err := s.Stop(); err != nil {
						errs <- err
					}
				})
			}
		}
	}
	wg.Wait()
	close(errs)
	c.ZK.Stop()
	return <-errs
}
