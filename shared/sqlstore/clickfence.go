package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// clickPartitionLock is the first key of the PostgreSQL advisory locks
// (pg_advisory_xact_lock(int, int)) by which the analytics consumers take
// turns on a partition of the clicks topic; the second is the partition.
// It is apart from the migrations' lock (8412) and the webhook claimers'
// (8413).
const clickPartitionLock = 8414

// LockClickPartitions takes the PostgreSQL advisory lock of each partition
// of the clicks topic, in partition order, waiting while another holds it,
// and returns the function that releases them all. The analytics consumer
// holds them from before it stores a batch until after it committed the
// batch's offsets: during a group rebalance a partition's batch may be in
// the hands of its old member and its new one at once, and the locks make
// the second wait, then find the first's clicks stored (kafka.Consumer).
//
// The locks live in a transaction that touches nothing: a process that dies
// (kill -9) loses its connection, and PostgreSQL releases them. ctx bounds
// the wait; the transaction outlives it, until release. On SQLite, where one
// process owns the database, there is nothing to lock.
func (s *Store) LockClickPartitions(ctx context.Context, partitions []int) (release func(), err error) {
	if s.dialect != postgres || len(partitions) == 0 {
		return func() {}, nil
	}
	keys := slices.Clone(partitions)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	// The transaction must outlive ctx, whose end would roll it back and
	// release the locks in the middle of the batch they guard; but until
	// the locks are held, ctx bounds the wait, connecting included.
	txCtx, txCancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, txCancel)
	tx, err := s.db.BeginTx(txCtx, nil)
	if err != nil {
		txCancel()
		return nil, fmt.Errorf("lock the click partitions: %w", err)
	}
	values := make([]string, len(keys))
	args := make([]any, len(keys))
	for i, k := range keys {
		values[i] = "($" + strconv.Itoa(i+1) + "::int)"
		args[i] = k
	}
	// A VALUES list is read in its order: the locks are taken in key order,
	// so that two consumers never wait for each other's.
	_, err = tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+strconv.Itoa(clickPartitionLock)+`, k)
		FROM (VALUES `+strings.Join(values, ", ")+`) AS v(k)`, args...)
	if err == nil && !stop() {
		err = ctx.Err() // ctx ended as the locks came: the transaction is going
	}
	if err != nil {
		tx.Rollback() //nolint:errcheck // the lock failed already
		txCancel()
		return nil, fmt.Errorf("lock the click partitions: %w", err)
	}
	return func() {
		tx.Rollback() //nolint:errcheck // a broken connection releases them too
		txCancel()
	}, nil
}
