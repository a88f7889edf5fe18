package kafka

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"shortlink.dev/shared/click"
)

// brokerProcessEnv makes the test binary a Kafka-protocol broker (see
// TestMain): the producer benchmark runs its broker in another process, so
// that the process CPU it measures is the producer's alone.
const brokerProcessEnv = "SHORTLINK_KAFKA_TEST_BROKER"

func TestMain(m *testing.M) {
	if os.Getenv(brokerProcessEnv) != "" {
		serveBroker()
		return
	}
	os.Exit(m.Run())
}

// serveBroker runs a kfake cluster that accepts and discards what is
// produced, prints its address and lives until its stdin closes.
func serveBroker() {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BlackholeProduce(),
		kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(ClicksPartitions))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println(strings.Join(c.ListenAddrs(), ","))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startBrokerProcess starts serveBroker in a child process.
func startBrokerProcess(tb testing.TB) []string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), brokerProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the broker process did not start: %v", err)
	}
	return strings.Split(strings.TrimSpace(line), ",")
}

// sampleEvents returns n clicks spread over links the way traffic is: a few
// hot links and a long tail, with the fields a real click carries.
func sampleEvents(n int) []click.Event {
	countries := []string{"US", "DE", "FR", "GB", "IN", "BR", "JP", ""}
	cities := []string{"New York", "Berlin", "Paris", "London", "Mumbai", "São Paulo", "Tokyo", ""}
	devices := []string{click.DeviceDesktop, click.DeviceMobile, click.DeviceMobile, click.DeviceTablet}
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge"}
	oses := []string{"Windows", "iOS", "Android", "macOS", "Linux"}
	referrers := []string{"", "t.co", "www.google.com", "news.ycombinator.com", "l.facebook.com"}
	base := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	out := make([]click.Event, n)
	seed := uint32(1)
	next := func() uint32 { seed = seed*1664525 + 1013904223; return seed >> 8 }
	// The edge's clicks share the strings of the link they are a click of
	// (its cached record), and of the visitor's place and agent.
	type link struct{ id, workspace, slug, target, qr string }
	links := make([]link, 2008)
	for i := range links {
		links[i] = link{
			id:        fmt.Sprintf("lnk_%012d", i),
			workspace: fmt.Sprintf("ws_%010d", i%50),
			slug:      fmt.Sprintf("s%d", i),
			target:    fmt.Sprintf("https://www.example.com/products/item-%d?utm_source=newsletter&utm_medium=email", i),
			qr:        fmt.Sprintf("qr_%d", i),
		}
	}
	for i := range out {
		// Half the clicks go to 8 hot links, the rest to 2000 others.
		l := links[next()%8]
		if next()%2 == 0 {
			l = links[8+next()%2000]
		}
		e := click.Event{
			V:           click.Version,
			ID:          click.NewEventID(),
			Time:        base.Add(time.Duration(i) * 137 * time.Microsecond),
			LinkID:      l.id,
			WorkspaceID: l.workspace,
			Domain:      "sho.rt",
			Slug:        l.slug,
			Target:      l.target,
			Country:     countries[next()%uint32(len(countries))],
			Device:      devices[next()%uint32(len(devices))],
			Browser:     browsers[next()%uint32(len(browsers))],
			OS:          oses[next()%uint32(len(oses))],
			Referrer:    referrers[next()%uint32(len(referrers))],
			Trigger:     click.TriggerLink,
			Bot:         next()%20 == 0,
		}
		e.City = cities[next()%uint32(len(cities))]
		if next()%10 == 0 {
			e.Trigger, e.QRID = click.TriggerQR, l.qr
		}
		v := next()
		e.Visitor = click.Visitor{byte(v), byte(v >> 8), byte(v >> 16), 7, 7, 7}
		out[i] = e
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProducerCPU offers b.N clicks to a producer that sends them to a
// broker in another process, and reports the CPU time this process spent per
// click (Offer, batching, encoding, compression, the writes to the socket,
// and the garbage collection of all that): what the producer costs an edge.
// "max" offers as fast as the producer sends (full batches); "10k-per-s"
// offers 10,000 clicks a second (500 every 50ms). Run it with
// a fixed count, e.g. -benchtime=200000x.
func BenchmarkProducerCPU(b *testing.B) {
	brokers := startBrokerProcess(b)
	if err := EnsureTopics(context.Background(), brokers); err != nil {
		b.Fatal(err)
	}
	pool := sampleEvents(1 << 14)
	run := func(b *testing.B, perSecond int) {
		p, err := NewProducer(ProducerOptions{Brokers: brokers, SpoolDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		// A first batch finds the partitions and opens the connections.
		for i := range 2000 {
			p.Offer(pool[i])
		}
		for p.buf.Len() > 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		const capacity = 1 << 16
		const step = 50 * time.Millisecond
		perStep := perSecond / int(time.Second/step)
		b.ResetTimer()
		start, next := cpuTime(), time.Now()
		for i := 0; i < b.N; i++ {
			e := pool[i&(len(pool)-1)]
			e.ID = click.NewEventID()
			p.Offer(e)
			switch {
			case perStep > 0 && i%perStep == perStep-1:
				next = next.Add(step)
				time.Sleep(time.Until(next))
			case perStep == 0 && i%1000 == 999:
				// Keep the buffer from overflowing: the edge does not offer
				// faster than the producer sends for long.
				for p.buf.Len() > capacity/2 {
					time.Sleep(time.Millisecond)
				}
			}
		}
		if err := p.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		used := cpuTime() - start
		b.StopTimer()
		if p.Dropped() != 0 || p.Spooled() != 0 {
			b.Fatalf("%d clicks dropped, %d bytes spooled", p.Dropped(), p.Spooled())
		}
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/click")
	}
	b.Run("max", func(b *testing.B) { run(b, 0) })
	b.Run("10k-per-s", func(b *testing.B) { run(b, 10000) })
}

// BenchmarkEncodeBatch is the producer's work on a batch besides Kafka's:
// grouping the clicks by partition and link, and their binary records. It
// allocates nothing once its memory has grown to the batches.
func BenchmarkEncodeBatch(b *testing.B) {
	batch := sampleEvents(batchSize)
	r := newRecords()
	msgs := r.encode(batch, ClicksPartitions)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		msgs = r.encode(batch, ClicksPartitions)
	}
	b.StopTimer()
	size := 0
	for _, m := range msgs {
		size += len(m.Value)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/click")
	b.ReportMetric(float64(size)/float64(len(batch)), "bytes/click")
}
