package clickhouse

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The sums of sealed days, kept.
//
// A sealed day's rows (workspace_shares, workspace_share_sums,
// workspace_link_shares of one workspace, day and seal generation) never
// change once the seal is recorded: a reseal writes another generation,
// and readers name the generation they count. So the sums a query of
// sealed days reads can be kept, for the same query of the same days and
// generations, and are right as long as those generations are the days'
// seals (which the query's caller decides each time, from
// workspace_day_seals). A dimension of a tag or a domain over 30 or 90
// days, which ClickHouse 18.16 answers in 50–130 ms at 10M clicks
// (docs/benchmarks.md), is so answered from memory once it was asked.
//
// The sealed days of a query are split into blocks of up to sealedBlockDays
// days aligned on the calendar (day numbers since 1970 divisible by the
// block's size), so that ranges that overlap (30 and 90 days, a range that
// moved on a day) share most of their blocks; a block's key is the query's
// text and arguments and the block's days with their generations. The
// blocks not kept are read in one query, each row tagged with its block.
// A block's rows are integer sums (clicks, visitor shares in thousandths):
// the blocks' rows are added up before they reach the aggregator, which
// so gets, for each row, the sums one query over every day would give.

// sealedBlockDays is the longest block of days kept as one.
const sealedBlockDays = 64

// sealedKeptBytes bounds the memory of the kept sums (a variable for the
// tests); past it the least recently used blocks are dropped.
var sealedKeptBytes = 64 << 20

// sealedRow is one summed row of a block.
type sealedRow struct {
	dim, row      string
	clicks, milli int64
}

// sealedKept is a least-recently-used store of blocks' rows, bounded in
// bytes.
type sealedKept struct {
	mu      sync.Mutex
	bytes   int
	order   *list.List // of *sealedEntry, most recently used first
	entries map[[32]byte]*list.Element
}

type sealedEntry struct {
	key   [32]byte
	rows  []sealedRow
	bytes int
}

func newSealedKept() *sealedKept {
	return &sealedKept{order: list.New(), entries: map[[32]byte]*list.Element{}}
}

func (k *sealedKept) get(key [32]byte) ([]sealedRow, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	el, ok := k.entries[key]
	if !ok {
		return nil, false
	}
	k.order.MoveToFront(el)
	return el.Value.(*sealedEntry).rows, true
}

func (k *sealedKept) put(key [32]byte, rows []sealedRow) {
	size := 128
	for _, r := range rows {
		size += 64 + len(r.dim) + len(r.row)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if size > sealedKeptBytes {
		return
	}
	if el, ok := k.entries[key]; ok {
		k.bytes -= el.Value.(*sealedEntry).bytes
		k.order.Remove(el)
		delete(k.entries, key)
	}
	k.entries[key] = k.order.PushFront(&sealedEntry{key: key, rows: rows, bytes: size})
	k.bytes += size
	for k.bytes > sealedKeptBytes {
		last := k.order.Back()
		e := last.Value.(*sealedEntry)
		k.order.Remove(last)
		delete(k.entries, e.key)
		k.bytes -= e.bytes
	}
}

func (k *sealedKept) clear() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.order.Init()
	k.entries = map[[32]byte]*list.Element{}
	k.bytes = 0
}

// sealedBlock is a block of sealed days of one query.
type sealedBlock struct {
	days []sealedDay
	key  [32]byte
}

// sealedSums adds to add the rows of query over the sealed days of ws:
// query selects (blk, dim, row, clicks, milli) with {block} the block's
// number and {where} the days' rows, args being the arguments of its text
// after {where}. Blocks kept are not read again.
func (s *Store) sealedSums(ctx context.Context, ws string, days []sealedDay, query string, args []any,
	add func(dim, row string, clicks, milli int64)) error {
	shape := sha256.New()
	fmt.Fprintf(shape, "%s\x00%s\x00%q", ws, query, args)
	prefix := shape.Sum(nil)

	var blocks []sealedBlock
	for _, d := range days {
		n, err := sealedDayNumber(d.day)
		if err != nil {
			return err
		}
		start := n - n%sealedBlockDays
		if len(blocks) > 0 {
			if first, _ := sealedDayNumber(blocks[len(blocks)-1].days[0].day); first-first%sealedBlockDays == start {
				blocks[len(blocks)-1].days = append(blocks[len(blocks)-1].days, d)
				continue
			}
		}
		blocks = append(blocks, sealedBlock{days: []sealedDay{d}})
	}
	sums := map[[2]string]*[2]int64{}
	var order [][2]string
	sum := func(r sealedRow) {
		k := [2]string{r.dim, r.row}
		if v, ok := sums[k]; ok {
			v[0] += r.clicks
			v[1] += r.milli
			return
		}
		sums[k] = &[2]int64{r.clicks, r.milli}
		order = append(order, k)
	}
	var missing []*sealedBlock
	for i := range blocks {
		b := &blocks[i]
		h := sha256.New()
		h.Write(prefix)
		for _, d := range b.days {
			fmt.Fprintf(h, "\x00%s:%d", d.day, d.gen)
		}
		copy(b.key[:], h.Sum(nil))
		rows, ok := s.sealedKept.get(b.key)
		if !ok {
			missing = append(missing, b)
			continue
		}
		s.sealedKeptHits.Add(1)
		for _, r := range rows {
			sum(r)
		}
	}
	if len(missing) > 0 {
		read, err := s.readSealedBlocks(ctx, ws, missing, query, args)
		if err != nil {
			return err
		}
		for i, b := range missing {
			s.sealedKept.put(b.key, read[i])
			for _, r := range read[i] {
				sum(r)
			}
		}
	}
	for _, k := range order {
		v := sums[k]
		add(k[0], k[1], v[0], v[1])
	}
	return nil
}

// readSealedBlocks reads the blocks' rows in one query, each row tagged
// with its block's number.
func (s *Store) readSealedBlocks(ctx context.Context, ws string, blocks []*sealedBlock, query string, args []any) ([][]sealedRow, error) {
	var (
		pairs     []string
		whereArgs []any
		blockArgs []any
		cases     []string
	)
	first, last := blocks[0].days[0].day, blocks[len(blocks)-1].days[len(blocks[len(blocks)-1].days)-1].day
	whereArgs = append(whereArgs, ws, first, last)
	for i, b := range blocks {
		for _, d := range b.days {
			pairs = append(pairs, "(toDate(?), toUInt64(?))")
			whereArgs = append(whereArgs, d.day, d.gen)
		}
		if i < len(blocks)-1 {
			cases = append(cases, "day <= toDate(?), "+strconv.Itoa(i))
			blockArgs = append(blockArgs, b.days[len(b.days)-1].day)
		}
	}
	block := "toUInt32(0)"
	if len(cases) > 0 {
		block = "toUInt32(multiIf(" + strings.Join(cases, ", ") + ", " + strconv.Itoa(len(blocks)-1) + "))"
	}
	where := `workspace_id = ? AND day BETWEEN toDate(?) AND toDate(?) AND (day, gen) IN (` + strings.Join(pairs, ", ") + `)`
	text := strings.Replace(strings.Replace(query, "{block}", block, 1), "{where}", where, 1)
	rows, err := s.conn.Query(ctx, text, append(append(blockArgs, whereArgs...), args...)...)
	if err != nil {
		return nil, fmt.Errorf("cannot read the sealed days: %w", err)
	}
	defer rows.Close()
	out := make([][]sealedRow, len(blocks))
	for rows.Next() {
		var (
			blk uint32
			r   sealedRow
		)
		if err := rows.Scan(&blk, &r.dim, &r.row, &r.clicks, &r.milli); err != nil {
			return nil, fmt.Errorf("cannot read the sealed days: %w", err)
		}
		if int(blk) >= len(out) {
			return nil, fmt.Errorf("cannot read the sealed days: block %d of %d", blk, len(out))
		}
		out[blk] = append(out[blk], r)
		s.keyRowsRead.Add(1)
	}
	return out, rows.Err()
}

// sealedDayNumber is a day's (YYYY-MM-DD) number since 1970-01-01.
func sealedDayNumber(day string) (int, error) {
	t, err := time.Parse(dayLayout, day)
	if err != nil {
		return 0, fmt.Errorf("a sealed day %q: %w", day, err)
	}
	return int(t.Unix() / 86400), nil
}

// DropAnalyticsCache drops the kept sums of sealed days: the next query of
// each reads them from ClickHouse again (the benchmarks' cold runs).
func (s *Store) DropAnalyticsCache() { s.sealedKept.clear() }
