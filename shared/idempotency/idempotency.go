// Package idempotency is what the API keeps of a request sent with an
// Idempotency-Key header (CONTRACT §13): per workspace and key, a fingerprint
// of the first request, and once it has finished, its answer, which a retry
// with the same key and request receives again instead of running twice.
// The SQL store keeps it, so that it holds across restarts and replicas.
package idempotency

import (
	"context"
	"net/http"
	"time"
)

// TTL is how long a key is kept after its first request began.
const TTL = 24 * time.Hour

// LockTimeout is how long a first request may run before a retry with the
// same request may take its key over: longer than any request the API
// serves (its write timeout is 60 s), so only a process that died in the
// middle of a request leaves a key behind for a retry to take.
const LockTimeout = 2 * time.Minute

// State is what Begin found.
type State int

// The states of a key.
const (
	// Started: the key is new (or expired, or abandoned by a process that
	// died): the caller runs the request, then calls Complete or Release
	// with the claim.
	Started State = iota + 1
	// Replay: the key's first request has finished; Begun.Response is its answer.
	Replay
	// InProgress: the key's first request, with the same fingerprint, is still running.
	InProgress
	// Mismatch: the key was first used with another request.
	Mismatch
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Started:
		return "started"
	case Replay:
		return "replay"
	case InProgress:
		return "in progress"
	case Mismatch:
		return "mismatch"
	default:
		return "unknown"
	}
}

// Response is an answer as it is replayed: its status, the headers that
// describe the body (Content-Type, Location, …) and the body's bytes.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Begun is what Begin found or did.
type Begun struct {
	State State
	// Claim names this request's hold on the key (Started only): Complete and
	// Release act only while it holds, so a request whose key was taken over
	// changes nothing.
	Claim string
	// Response is the stored answer (Replay only).
	Response *Response
}

// Store keeps idempotency keys. Every method is atomic: two requests that
// begin one key at once see one Started and one InProgress, whichever
// replica serves them.
type Store interface {
	// BeginIdempotent claims the workspace's key for a request whose
	// fingerprint is given, at now: Started when the key is unused, expired
	// (TTL after its first request began) or left running for LockTimeout
	// by a request with the same fingerprint; otherwise what the key holds.
	BeginIdempotent(ctx context.Context, workspaceID, key, fingerprint string, now time.Time) (Begun, error)
	// CompleteIdempotent stores the answer of the request that holds claim.
	// It does nothing when the claim no longer holds.
	CompleteIdempotent(ctx context.Context, workspaceID, key, claim string, r Response) error
	// ReleaseIdempotent forgets a claimed key whose request stored no
	// answer (a server error), so that a retry runs it again. It does
	// nothing when the claim no longer holds.
	ReleaseIdempotent(ctx context.Context, workspaceID, key, claim string) error
	// DeleteExpiredIdempotent deletes the keys expired at now and returns how many.
	DeleteExpiredIdempotent(ctx context.Context, now time.Time) (int64, error)
}
