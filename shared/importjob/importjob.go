// Package importjob is an import job (issue 23): a file another product
// exported, read in the background into a workspace's links, and what the
// stores keep of it. The control plane's package imports runs the jobs.
package importjob

import (
	"context"
	"errors"
	"time"

	"shortlink.dev/shared/link"
)

// Status is where a job is.
type Status string

// The statuses of a job. Queued and Running are live; the others final.
const (
	Queued   Status = "queued"
	Running  Status = "running"
	Done     Status = "done"
	Failed   Status = "failed"
	Canceled Status = "canceled"
)

// Final reports whether a job in status s has ended.
func (s Status) Final() bool { return s == Done || s == Failed || s == Canceled }

// What a job does with a row whose domain and slug another link holds
// (with another destination, or in another workspace).
const (
	ConflictSkip   = "skip"
	ConflictSuffix = "suffix"
)

// Job is an import job.
type Job struct {
	ID          string
	WorkspaceID string
	Source      string
	FileName    string
	FileSize    int64
	// OnConflict is ConflictSkip or ConflictSuffix.
	OnConflict string
	// Mapping is the generic CSV's column mapping; nil for none.
	Mapping map[string]string
	Status  Status
	// Total is the number of rows in the file (counted when it was sent).
	Total int64
	// Read, Created, Skipped and Failed count the rows read, the links
	// created, and the rows skipped and failed (each in the report).
	Read, Created, Skipped, Failed int64
	// Position is how many rows of the file were consumed (read or
	// refused): a job taken over goes on after them.
	Position int64
	// Error says why a failed job failed.
	Error      string
	CreatedBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt *time.Time
}

// The outcomes of a report line.
const (
	OutcomeSkipped = "skipped"
	OutcomeFailed  = "failed"
)

// ReportLine is a row a job skipped or could not import.
type ReportLine struct {
	// Seq is the row's place among the file's rows (0-based).
	Seq int64
	// Line is where the row starts in the file (see sources.Row).
	Line    int64
	Outcome string // OutcomeSkipped or OutcomeFailed
	Domain  string
	Slug    string
	Reason  string
}

// Batch is what one step of a job writes, in one transaction: the links
// it creates, its report lines, the counters' increments and the position
// reached.
type Batch struct {
	JobID string
	// Owner is the lease holder writing it.
	Owner string
	// Links are created with their ImportedClicks; their domain and slug
	// must be free (else the batch fails with SLUG_EXISTS, nothing written).
	Links  []*link.Link
	Report []ReportLine
	// Read, Created, Skipped, Failed are added to the job's counters.
	Read, Created, Skipped, Failed int64
	// Position is the job's new position.
	Position int64
	// DefaultDomain is the service's default domain: the other domains of
	// Links are custom domains, checked against other workspaces'
	// verifications (ErrDomainTaken).
	DefaultDomain string
	// MaxActive is the workspace's plan link limit (-1 none): a batch
	// whose active links would pass it fails with LIMIT_REACHED.
	MaxActive int
	// LeaseUntil is when the lease ends now.
	LeaseUntil time.Time
	// At is the time of the write.
	At time.Time
}

// Filter selects a page of a workspace's jobs, newest first.
type Filter struct {
	WorkspaceID   string
	Offset, Limit int
}

// Existing is a link that holds a domain and slug.
type Existing struct {
	WorkspaceID    string
	DestinationURL string
}

// Key is a domain and a slug.
type Key struct{ Domain, Slug string }

// ErrLeaseLost is returned by the writes of a job's worker once it holds
// the job no more: the job was canceled, or its lease ran out and another
// worker took it.
var ErrLeaseLost = errors.New("the import job is not held by this worker any more")

// ErrDomainTaken is returned by CommitImportBatch when a custom domain of
// the batch's links is verified by another workspace: the batch is built
// again, its rows on that domain refused.
var ErrDomainTaken = errors.New("a domain of the batch is verified by another workspace")

// Store keeps import jobs.
type Store interface {
	// CreateImportJob stores j (queued) and its file.
	CreateImportJob(ctx context.Context, j *Job, file []byte) error
	// GetImportJob returns the workspace's job, or NOT_FOUND.
	GetImportJob(ctx context.Context, workspaceID, id string) (*Job, error)
	// ListImportJobs returns a page of the workspace's jobs, newest first, and their total.
	ListImportJobs(ctx context.Context, f Filter) ([]*Job, int, error)
	// CancelImportJob cancels the workspace's job if it is live and
	// returns it (as it is when it ended already), or NOT_FOUND.
	CancelImportJob(ctx context.Context, workspaceID, id string, at time.Time) (*Job, error)
	// ClaimImportJob gives owner a job that is queued, or running under a
	// lease that ended before now, with its file, leased until leaseUntil;
	// nil when there is none. The job is of the workspace whose jobs were
	// worked on least recently (fair per workspace), its oldest.
	ClaimImportJob(ctx context.Context, owner string, now, leaseUntil time.Time) (*Job, []byte, error)
	// ImportJobWaiting reports whether a job of another workspace than
	// workspaceID waits to be claimed at now (ClaimImportJob would take it).
	ImportJobWaiting(ctx context.Context, workspaceID string, now time.Time) (bool, error)
	// CommitImportBatch writes b if b.Owner still holds the job, else
	// ErrLeaseLost; ErrDomainTaken (nothing written) when a custom domain
	// of its links is verified by another workspace.
	CommitImportBatch(ctx context.Context, b *Batch) error
	// FinishImportJob ends the job owner holds with status (Done or
	// Failed, with why) and drops its file; ErrLeaseLost when owner does
	// not hold it.
	FinishImportJob(ctx context.Context, id, owner string, status Status, why string, at time.Time) error
	// ReleaseImportJob ends owner's lease of the job at once (a worker
	// stopping), so that the next worker takes it without waiting; nothing
	// when owner does not hold it.
	ReleaseImportJob(ctx context.Context, id, owner string) error
	// ImportReport calls fn with each report line of the workspace's job, in
	// the file's order.
	ImportReport(ctx context.Context, workspaceID, id string, fn func(ReportLine) error) error
	// ExistingLinks returns the links that hold any of keys.
	ExistingLinks(ctx context.Context, keys []Key) (map[Key]Existing, error)
	// LinksWithDestinations returns which of keys (a domain and a
	// destination URL, in Key's Domain and Slug) the workspace has a link
	// of: rows without a slug match so.
	LinksWithDestinations(ctx context.Context, workspaceID string, keys []Key) (map[Key]bool, error)
}
