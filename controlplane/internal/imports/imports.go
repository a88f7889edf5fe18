// Package imports runs import jobs (issue 23): a file another product
// exported (read by package sources) becomes the workspace's links, in the
// background, in a control plane that holds the job's lease. A job goes on
// after a crash from the position its last batch recorded: the batch's
// links, report lines, counters and position commit together, so no link
// is created twice, and a row whose domain and slug a link of the same
// destination holds already is skipped, so importing a file twice creates
// nothing the second time.
package imports

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/workspace"
)

// Store is what jobs keep and read.
type Store interface {
	importjob.Store
	GetWorkspace(ctx context.Context, id string) (*workspace.Workspace, error)
	WorkspaceDomain(ctx context.Context, workspaceID, name string) (*domain.Domain, error)
	IsVerifiedDomain(ctx context.Context, name string) (bool, error)
	CountActiveLinks(ctx context.Context, workspaceID string) (int, error)
	ListAudit(ctx context.Context, f audit.Filter) ([]*audit.Entry, int, error)
	// GetAPIKey and GetMember tell whether a job's creator (a key, or a
	// person signed in to the dashboard) may still write links.
	GetAPIKey(ctx context.Context, workspaceID, id string) (*workspace.APIKey, error)
	GetMember(ctx context.Context, workspaceID, userID string) (*workspace.Membership, error)
}

// OpenReader opens a source's reader over an export (sources.NewReader).
type OpenReader func(source string, r io.Reader, opt sources.Options) (sources.Reader, error)

// Service creates, lists and cancels import jobs, and runs them (Run).
type Service struct {
	Store   Store
	Links   *links.Service
	Domains *domains.Service
	Config  *config.Config
	Log     *slog.Logger
	// NewReader opens the readers; sources.NewReader unless a test sets another.
	NewReader OpenReader
	// BatchSize is how many rows one transaction writes.
	BatchSize int
	// Pause is the rest between two batches, so that redirects and the API
	// keep their share of the database (SHORTLINK_IMPORT_PAUSE).
	Pause time.Duration
	// Lease is how long a worker holds a job past its last write
	// (SHORTLINK_IMPORT_LEASE): a killed worker's job is taken over then.
	Lease time.Duration
	// Poll is how often an idle worker looks for a job.
	Poll time.Duration
	// Slice is how long a worker works on a job before it lets a job of
	// another workspace waiting go first (the job goes on after it: jobs
	// are claimed fairly per workspace); <= 0 lets it after every batch.
	Slice time.Duration
	// Hash hashes a link password (links.HashPassword): a row's password
	// is hashed only once its link is sure to be created.
	Hash func(password string) (string, error)
	// Owner names this worker in the leases.
	Owner string
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// wake tells this process's worker that Create queued a job, so that
	// it starts it at once rather than at its next Poll.
	wake chan struct{}
}

// New returns the import service over st, creating links through ls and
// domains through ds.
func New(st Store, ls *links.Service, ds *domains.Service, cfg *config.Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{
		Store: st, Links: ls, Domains: ds, Config: cfg, Log: log, NewReader: sources.NewReader,
		BatchSize: 1000, Pause: cfg.ImportPause, Lease: cfg.ImportLease, Poll: time.Second, Slice: 5 * time.Second,
		Hash: links.HashPassword, Owner: "imports-" + id.Base62(12), Now: time.Now, wake: make(chan struct{}, 1),
	}
}

// Upload is a POST /imports.
type Upload struct {
	Source     string
	FileName   string
	File       []byte
	OnConflict string
	// Mapping is the generic CSV's column mapping (nil for none).
	Mapping map[string]string
}

// Create checks u and queues its job. The whole file is read once here, so
// that a file the source cannot read (wrong format, bad UTF-8, a line too
// long) is refused at once with why, nothing imported, and so that the job
// knows its number of rows for its progress.
func (s *Service) Create(ctx context.Context, ws *workspace.Workspace, keyID string, u Upload) (*importjob.Job, error) {
	var fe fault.FieldErrors
	if !slices.Contains(sources.Names, u.Source) {
		fe.Add(fault.Validation, "source", "must be one of "+strings.Join(sources.Names, ", "))
	}
	switch u.OnConflict {
	case "":
		u.OnConflict = importjob.ConflictSkip
	case importjob.ConflictSkip, importjob.ConflictSuffix:
	default:
		fe.Add(fault.Validation, "onConflict", "must be skip or suffix")
	}
	if u.Mapping != nil && u.Source != sources.CSV {
		fe.Add(fault.Validation, "mapping", "is for source csv only")
	}
	for k, v := range u.Mapping {
		if !slices.Contains(sources.MappingFields, k) {
			fe.Add(fault.Validation, "mapping", fmt.Sprintf("%q is no field of a link; map any of %s", k, strings.Join(sources.MappingFields, ", ")))
			break
		}
		if strings.TrimSpace(v) == "" {
			fe.Add(fault.Validation, "mapping", fmt.Sprintf("%q must name a column", k))
			break
		}
	}
	if len(u.File) == 0 {
		fe.Add(fault.Validation, "file", "is required and must not be empty")
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	total, err := s.count(u)
	if err != nil {
		return nil, err
	}
	now := s.now()
	name := u.FileName
	if len(name) > 255 {
		name = name[:255]
	}
	j := &importjob.Job{
		ID: id.New(id.Import), WorkspaceID: ws.ID, Source: u.Source, FileName: name, FileSize: int64(len(u.File)),
		OnConflict: u.OnConflict, Mapping: u.Mapping, Status: importjob.Queued, Total: total,
		CreatedBy: keyID, CreatedAt: now, UpdatedAt: now,
	}
	e, err := audit.Of(ws.ID, "import.created", "import", j.ID, nil, map[string]any{
		"source": j.Source, "fileName": j.FileName, "fileSize": j.FileSize, "onConflict": j.OnConflict, "rows": total,
	})
	if err != nil {
		return nil, err
	}
	if err := s.Store.CreateImportJob(audit.With(ctx, e), j, u.File); err != nil {
		return nil, err
	}
	select {
	case s.wake <- struct{}{}:
	default: // the worker was told already, or is busy and looks again after its job
	}
	return j, nil
}

// count reads the whole file and returns its number of rows, or a
// VALIDATION_ERROR on field file saying why the source cannot read it.
func (s *Service) count(u Upload) (int64, error) {
	r, err := s.NewReader(u.Source, bytes.NewReader(u.File), sources.Options{Mapping: u.Mapping})
	if err != nil {
		return 0, fault.Field(fault.Validation, "file", readerProblem(err))
	}
	var n int64
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		var re *sources.RowError
		if err != nil && !errors.As(err, &re) {
			return 0, fault.Field(fault.Validation, "file", readerProblem(err))
		}
		n++
	}
}

func readerProblem(err error) string {
	if errors.Is(err, sources.ErrUnknownSource) {
		return "this server cannot read that source yet"
	}
	return err.Error()
}

// Get returns the workspace's job.
func (s *Service) Get(ctx context.Context, ws *workspace.Workspace, jobID string) (*importjob.Job, error) {
	return s.Store.GetImportJob(ctx, ws.ID, jobID)
}

// List returns a page of the workspace's jobs, newest first, and their total.
func (s *Service) List(ctx context.Context, f importjob.Filter) ([]*importjob.Job, int, error) {
	return s.Store.ListImportJobs(ctx, f)
}

// Cancel cancels the workspace's job: its worker stops at its next batch;
// the links created before stay. A job that ended is returned as it is.
func (s *Service) Cancel(ctx context.Context, ws *workspace.Workspace, jobID string) (*importjob.Job, error) {
	j, err := s.Store.GetImportJob(ctx, ws.ID, jobID)
	if err != nil || j.Status.Final() {
		return j, err
	}
	e, err := audit.Of(ws.ID, "import.canceled", "import", j.ID, map[string]any{"status": j.Status},
		map[string]any{"status": importjob.Canceled})
	if err != nil {
		return nil, err
	}
	return s.Store.CancelImportJob(audit.With(ctx, e), ws.ID, jobID, s.now())
}

// Report calls fn with each line of the job's report.
func (s *Service) Report(ctx context.Context, ws *workspace.Workspace, jobID string, fn func(importjob.ReportLine) error) error {
	return s.Store.ImportReport(ctx, ws.ID, jobID, fn)
}

// Run works jobs until ctx ends: it takes a job waiting (or one whose
// worker's lease ran out), fairly per workspace, and runs it to its end,
// or for a Slice when a job of another workspace waits.
func (s *Service) Run(ctx context.Context) {
	for {
		worked, err := s.RunOne(ctx)
		if err != nil && ctx.Err() == nil {
			s.Log.Error("import job", "err", err)
		}
		if worked && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-time.After(s.Poll):
		}
	}
}

// errYield ends a run that lets a job of another workspace go first.
var errYield = errors.New("yield to another workspace's import")

// RunOne claims one job and runs it, to its end or for a Slice when a job
// of another workspace waits; false when none was waiting.
func (s *Service) RunOne(ctx context.Context) (bool, error) {
	now := s.now()
	j, file, err := s.Store.ClaimImportJob(ctx, s.Owner, now, now.Add(s.Lease))
	if err != nil || j == nil {
		return false, err
	}
	err = s.run(ctx, j, file)
	if errors.Is(err, importjob.ErrLeaseLost) {
		return true, nil // canceled, or another worker has it
	}
	if errors.Is(err, errYield) {
		// The job waits again, at its position; the claims take the other
		// workspace's first.
		return true, s.Store.ReleaseImportJob(ctx, j.ID, s.Owner)
	}
	if ctx.Err() != nil {
		// Stopping (not killed): the next start, or another control plane,
		// takes the job at once and goes on from its position.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if rerr := s.Store.ReleaseImportJob(rctx, j.ID, s.Owner); rerr != nil {
			s.Log.Warn("import job: release the lease", "job", j.ID, "err", rerr)
		}
	}
	return true, err
}

// entry is one thing a reader gave: a row, or a row it could not read.
type entry struct {
	seq int64
	row sources.Row
	bad *sources.RowError
}

// run runs the claimed job j over its file.
func (s *Service) run(ctx context.Context, j *importjob.Job, file []byte) error {
	ws, err := s.Store.GetWorkspace(ctx, j.WorkspaceID)
	if fault.Is(err, fault.NotFound) {
		return s.finish(ctx, j, importjob.Failed, "the workspace is gone")
	}
	if err != nil {
		return err // the job is taken again when its lease ends
	}
	r, err := s.NewReader(j.Source, bytes.NewReader(file), sources.Options{Mapping: j.Mapping})
	if err != nil {
		return s.finish(ctx, j, importjob.Failed, readerProblem(err))
	}
	author, err := s.author(ctx, j)
	if err != nil {
		return err // the job is taken again when its lease ends
	}
	jr := &jobRun{Service: s, job: j, ws: ws, author: author, domains: map[string]domainAnswer{}}
	var seq int64
	turn := time.Now()
	// Where this run's time went, logged at the job's end.
	var reading, writing, pausing time.Duration
	began := time.Now()
	for {
		mark := time.Now()
		batch := make([]entry, 0, s.BatchSize)
		eof := false
		for len(batch) < s.BatchSize {
			row, err := r.Next()
			if err == io.EOF {
				eof = true
				break
			}
			var re *sources.RowError
			switch {
			case errors.As(err, &re):
				if seq >= j.Position {
					batch = append(batch, entry{seq: seq, bad: re})
				}
			case err != nil:
				return s.finish(ctx, j, importjob.Failed, readerProblem(err))
			default:
				if seq >= j.Position {
					batch = append(batch, entry{seq: seq, row: row})
				}
			}
			seq++
		}
		reading += time.Since(mark)
		mark = time.Now()
		if len(batch) > 0 {
			// The creator's rights are read again before each batch: a
			// revoked key, a member removed or lowered stops the job.
			why, err := s.creatorProblem(ctx, j)
			if err != nil {
				return err
			}
			if why != "" {
				return s.finish(ctx, j, importjob.Canceled, why)
			}
			if err := jr.write(ctx, batch, seq); err != nil {
				return err
			}
		}
		writing += time.Since(mark)
		if eof {
			s.Log.Info("import job: this run's time", "job", j.ID, "rows", seq-j.Position, "took", time.Since(began).Round(time.Millisecond),
				"reading", reading.Round(time.Millisecond), "checkingAndWriting", writing.Round(time.Millisecond), "pausing", pausing.Round(time.Millisecond))
			return s.finish(ctx, j, importjob.Done, "")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Since(turn) >= s.Slice {
			waiting, err := s.Store.ImportJobWaiting(ctx, j.WorkspaceID, s.now())
			if err != nil {
				return err
			}
			if waiting {
				return errYield
			}
			turn = time.Now()
		}
		if s.Pause > 0 {
			mark = time.Now()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(s.Pause):
			}
			pausing += time.Since(mark)
		}
	}
}

// creatorProblem says why job j may not go on ("" when it may): who
// started it (an API key, or a member signed in to the dashboard, whose
// key's id is the person's) no longer holds links:write in the workspace.
func (s *Service) creatorProblem(ctx context.Context, j *importjob.Job) (string, error) {
	if strings.HasPrefix(j.CreatedBy, id.User) {
		m, err := s.Store.GetMember(ctx, j.WorkspaceID, j.CreatedBy)
		switch {
		case fault.Is(err, fault.NotFound):
			return "stopped: the member who started the import is no longer a member of the workspace", nil
		case err != nil:
			return "", err
		case !slices.Contains(m.Role.Permissions(), workspace.LinksWrite):
			return "stopped: the member who started the import no longer holds " + string(workspace.LinksWrite), nil
		}
		return "", nil
	}
	k, err := s.Store.GetAPIKey(ctx, j.WorkspaceID, j.CreatedBy)
	switch {
	case fault.Is(err, fault.NotFound):
		return "stopped: the API key that started the import was revoked", nil
	case err != nil:
		return "", err
	case !k.Has(workspace.LinksWrite):
		// A personal key whose owner left, or whose role was lowered.
		return "stopped: the API key that started the import no longer holds " + string(workspace.LinksWrite), nil
	}
	return "", nil
}

// author is who started job j, as the audit log's import.created entry
// names them: the author of the links it creates. The system when the
// entry is gone (the audit log's retention pruned it).
func (s *Service) author(ctx context.Context, j *importjob.Job) (*audit.Actor, error) {
	es, _, err := s.Store.ListAudit(ctx, audit.Filter{WorkspaceID: j.WorkspaceID, ResourceType: "import",
		ResourceID: j.ID, Action: "import.created", Limit: 1})
	if err != nil {
		return nil, err
	}
	a := audit.System
	if len(es) > 0 && es[0].Actor.Type != "" {
		a = es[0].Actor
	}
	return &a, nil
}

// finish ends j with status, recording import.finished in the audit log.
func (s *Service) finish(ctx context.Context, j *importjob.Job, status importjob.Status, why string) error {
	cur, err := s.Store.GetImportJob(ctx, j.WorkspaceID, j.ID)
	if err != nil {
		return err
	}
	view := map[string]any{"status": status, "read": cur.Read, "created": cur.Created, "skipped": cur.Skipped, "failed": cur.Failed}
	if why != "" {
		view["error"] = why
	}
	e, err := audit.Of(j.WorkspaceID, "import.finished", "import", j.ID, nil, view)
	if err != nil {
		return err
	}
	if err := s.Store.FinishImportJob(audit.With(ctx, e), j.ID, s.Owner, status, why, s.now()); err != nil {
		return err
	}
	if why != "" {
		s.Log.Warn("import job "+string(status), "job", j.ID, "workspace", j.WorkspaceID, "why", why)
	}
	return nil
}

func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// domainAnswer is what a job found for a domain name: the stored name, or
// why its rows cannot be imported.
type domainAnswer struct{ name, problem string }

// jobRun is one worker's run of a job.
type jobRun struct {
	*Service
	// links is Links, reading whether a name is a verified domain once
	// for verifiedFor (since verifiedAt).
	links      *links.Service
	verifiedAt time.Time
	job        *importjob.Job
	ws         *workspace.Workspace
	author     *audit.Actor
	domains    map[string]domainAnswer
}

// candidate is a row made a link, before its slug is checked.
type candidate struct {
	e         entry
	l         *link.Link
	generated bool
	// password is the row's password, hashed into l once the link is
	// sure to be created (within the plan's room, its slug free).
	password string
}

// maxWriteTries is how many times a batch is built and written again when
// a concurrent write took one of its slugs or its plan room meanwhile.
const maxWriteTries = 5

// write builds and commits the batch of entries, ending at position.
func (jr *jobRun) write(ctx context.Context, batch []entry, position int64) error {
	for try := 1; ; try++ {
		b, err := jr.build(ctx, batch, position)
		if err != nil {
			return err
		}
		err = jr.Store.CommitImportBatch(ctx, b)
		if errors.Is(err, importjob.ErrDomainTaken) && try < maxWriteTries {
			clear(jr.domains) // another workspace verified one: look again
			continue
		}
		if (fault.Is(err, fault.SlugExists) || fault.Is(err, fault.LimitReached)) && try < maxWriteTries {
			continue // a concurrent write: look again
		}
		return err
	}
}

// build makes the batch of entries: each row validated as the API
// validates a link, its domain found or added, its slug checked, the
// plan's room counted; only then are the passwords of the links it
// creates hashed (argon2id is the costly part of a row: a row the plan
// has no room for costs none).
func (jr *jobRun) build(ctx context.Context, batch []entry, position int64) (*importjob.Batch, error) {
	now := jr.now()
	// The rows are checked against the verified domains (a destination may
	// not loop back to a short domain) once a name for verifiedFor, not
	// once a row: a file's destinations have many hosts, each a query.
	if jr.links == nil || time.Since(jr.verifiedAt) >= verifiedFor {
		ls := *jr.Links
		ls.Store = &verifiedCache{Store: jr.Links.Store, names: map[string]bool{}}
		jr.links, jr.verifiedAt = &ls, time.Now()
	}
	b := &importjob.Batch{JobID: jr.job.ID, Owner: jr.Owner, Position: position, DefaultDomain: jr.Config.DefaultDomain,
		MaxActive:  jr.Config.LinkLimit(jr.ws.Plan),
		LeaseUntil: now.Add(jr.Lease), At: now}
	report := func(e entry, outcome, domain, slug, reason string) {
		line := int64(e.row.Line)
		if e.bad != nil {
			line = int64(e.bad.Line)
		}
		b.Report = append(b.Report, importjob.ReportLine{Seq: e.seq, Line: line, Outcome: outcome, Domain: domain, Slug: slug, Reason: reason})
		if outcome == importjob.OutcomeSkipped {
			b.Skipped++
		} else {
			b.Failed++
		}
	}
	var cands []candidate
	for _, e := range batch {
		if e.bad != nil {
			b.Read++
			report(e, importjob.OutcomeFailed, "", "", e.bad.Reason)
			continue
		}
		b.Read++
		l, problem, err := jr.prepare(ctx, e.row)
		if err != nil {
			return nil, err
		}
		if problem != "" {
			report(e, importjob.OutcomeFailed, e.row.Domain, e.row.Slug, problem)
			continue
		}
		cands = append(cands, candidate{e: e, l: l, generated: e.row.Slug == "", password: e.row.Password})
	}

	keys := make([]importjob.Key, len(cands))
	for i, c := range cands {
		keys[i] = importjob.Key{Domain: c.l.Domain, Slug: c.l.Slug}
	}
	existing, err := jr.Store.ExistingLinks(ctx, keys)
	if err != nil {
		return nil, err
	}
	// Rows without a slug are matched by their destination on their domain.
	var dests []importjob.Key
	for _, c := range cands {
		if c.generated {
			dests = append(dests, importjob.Key{Domain: c.l.Domain, Slug: c.l.DestinationURL})
		}
	}
	sameDest := map[importjob.Key]bool{}
	if len(dests) > 0 {
		if sameDest, err = jr.Store.LinksWithDestinations(ctx, jr.ws.ID, dests); err != nil {
			return nil, err
		}
	}
	nextID := id.Batch(id.Link)
	room := -1
	if b.MaxActive >= 0 {
		n, err := jr.Store.CountActiveLinks(ctx, jr.ws.ID)
		if err != nil {
			return nil, err
		}
		room = max(b.MaxActive-n, 0)
	}
	for _, c := range cands {
		l := c.l
		key := importjob.Key{Domain: l.Domain, Slug: l.Slug}
		if c.generated {
			dest := importjob.Key{Domain: l.Domain, Slug: l.DestinationURL}
			if sameDest[dest] {
				report(c.e, importjob.OutcomeSkipped, l.Domain, "", "exists: a link on this domain has this destination already")
				continue
			}
			for tries := 0; taken(existing, key); tries++ {
				if tries == 5 {
					return nil, fault.New(fault.SlugExists, "could not draw a free slug")
				}
				l.Slug = id.Slug()
				key.Slug = l.Slug
				more, err := jr.Store.ExistingLinks(ctx, []importjob.Key{key})
				if err != nil {
					return nil, err
				}
				maps(existing, more)
			}
		} else if e, ok := existing[key]; ok {
			if e.WorkspaceID == jr.ws.ID && e.DestinationURL == l.DestinationURL {
				report(c.e, importjob.OutcomeSkipped, l.Domain, l.Slug, "exists")
				continue
			}
			if jr.job.OnConflict != importjob.ConflictSuffix {
				report(c.e, importjob.OutcomeSkipped, l.Domain, l.Slug, conflictReason(e, jr.ws.ID))
				continue
			}
			slug, same, err := jr.suffixed(ctx, existing, l)
			if err != nil {
				return nil, err
			}
			switch {
			case same != "":
				report(c.e, importjob.OutcomeSkipped, l.Domain, l.Slug, "exists as "+same)
				continue
			case slug == "":
				report(c.e, importjob.OutcomeFailed, l.Domain, l.Slug, conflictReason(e, jr.ws.ID)+"; no free suffix")
				continue
			}
			l.Slug = slug
			key.Slug = slug
		}
		if !l.IsArchived {
			if room == 0 {
				report(c.e, importjob.OutcomeFailed, l.Domain, l.Slug,
					fmt.Sprintf("plan limit: your plan allows %d active links", b.MaxActive))
				continue
			}
			if room > 0 {
				room--
			}
		}
		if c.password != "" {
			hash := jr.Hash
			if hash == nil {
				hash = links.HashPassword
			}
			if l.PasswordHash, err = hash(c.password); err != nil {
				return nil, fmt.Errorf("hash password: %w", err)
			}
		}
		// The batch's links sit side by side in the index of their ids,
		// and their tags in link_tags' (id.Batch): a few pages written a
		// batch rather than one a link.
		l.ID = nextID()
		existing[key] = importjob.Existing{WorkspaceID: jr.ws.ID, DestinationURL: l.DestinationURL}
		if c.generated {
			sameDest[importjob.Key{Domain: l.Domain, Slug: l.DestinationURL}] = true
		}
		b.Links = append(b.Links, l)
		b.Created++
	}
	return b, nil
}

// verifiedFor is how long a job run trusts what it read of the verified
// domains.
const verifiedFor = 30 * time.Second

// verifiedCache answers IsVerifiedDomain from what it read already.
type verifiedCache struct {
	links.Store
	names map[string]bool
}

// IsVerifiedDomain implements shortdomain.Store.
func (c *verifiedCache) IsVerifiedDomain(ctx context.Context, name string) (bool, error) {
	if v, ok := c.names[name]; ok {
		return v, nil
	}
	v, err := c.Store.IsVerifiedDomain(ctx, name)
	if err == nil {
		c.names[name] = v
	}
	return v, err
}

func taken(existing map[importjob.Key]importjob.Existing, k importjob.Key) bool {
	_, ok := existing[k]
	return ok
}

func maps(dst, src map[importjob.Key]importjob.Existing) {
	for k, v := range src {
		dst[k] = v
	}
}

func conflictReason(e importjob.Existing, wsID string) string {
	if e.WorkspaceID != wsID {
		return "conflict: another workspace uses this slug on this domain"
	}
	return "conflict: a link of this workspace with another destination uses this slug"
}

// maxSuffix is the highest suffix tried (slug-2 … slug-maxSuffix).
const maxSuffix = 100

// suffixed returns the first of l.Slug-2, l.Slug-3 … that is free, or
// (same) the first that the workspace holds with l's destination already,
// which an earlier import of the file made; "" and "" when none is.
func (jr *jobRun) suffixed(ctx context.Context, existing map[importjob.Key]importjob.Existing, l *link.Link) (slug, same string, err error) {
	for n := 2; n <= maxSuffix; n++ {
		cand := l.Slug + "-" + strconv.Itoa(n)
		if !link.ValidSlug(cand) {
			return "", "", nil
		}
		k := importjob.Key{Domain: l.Domain, Slug: cand}
		e, ok := existing[k]
		if !ok {
			more, err := jr.Store.ExistingLinks(ctx, []importjob.Key{k})
			if err != nil {
				return "", "", err
			}
			e, ok = more[k]
		}
		if !ok {
			return cand, "", nil
		}
		if e.WorkspaceID == jr.ws.ID && e.DestinationURL == l.DestinationURL {
			return "", cand, nil
		}
	}
	return "", "", nil
}

// prepare makes row a link of the job's workspace, or says why it cannot
// be one. Every field a row carries (slug, destination, title,
// description, tags, password, click limit, expired URL, geo and device
// targets, app URLs, UTM parameters) is validated as POST /links validates
// it (links.Service.Prepare), but for
// what an import keeps as the source had it: the creation time, an expiry
// in the past (the link is expired), the archived state, and a domain that
// is not verified yet (added to the workspace when missing; the edge serves
// its links once it is verified).
func (jr *jobRun) prepare(ctx context.Context, row sources.Row) (*link.Link, string, error) {
	if row.HasPassword && row.Password == "" {
		return nil, "the source's link has a password its export does not include; create it by hand with a new password", nil
	}
	d, err := jr.domain(ctx, row.Domain)
	if err != nil {
		return nil, "", err
	}
	if d.problem != "" {
		return nil, "domain " + row.Domain + ": " + d.problem, nil
	}
	in := links.Input{DestinationURL: patch.Value(row.DestinationURL)}
	if row.Slug != "" {
		in.Slug = patch.Value(row.Slug)
	}
	if row.Title != "" {
		in.Title = patch.Value(row.Title)
	}
	if len(row.Tags) > 0 {
		in.Tags = patch.Value(row.Tags)
	}
	// The password is checked here and hashed by build, once the link is
	// sure to be created.
	pwProblem := links.PasswordProblem(row.Password)
	if row.ClickLimit != nil {
		in.ClickLimit = patch.Value(*row.ClickLimit)
	}
	text := func(f *patch.Field[string], v string) {
		if v != "" {
			*f = patch.Value(v)
		}
	}
	text(&in.Description, row.Description)
	text(&in.ExpiredURL, row.ExpiredURL)
	text(&in.IOSURL, row.IOSURL)
	text(&in.AndroidURL, row.AndroidURL)
	text(&in.UTMSource, row.UTMSource)
	text(&in.UTMMedium, row.UTMMedium)
	text(&in.UTMCampaign, row.UTMCampaign)
	text(&in.UTMTerm, row.UTMTerm)
	text(&in.UTMContent, row.UTMContent)
	if len(row.GeoTargets) > 0 {
		in.GeoTargets = patch.Value(row.GeoTargets)
	}
	if len(row.DeviceTargets) > 0 {
		in.DeviceTargets = patch.Value(row.DeviceTargets)
	}
	l, err := jr.links.Prepare(ctx, jr.ws, jr.job.CreatedBy, in)
	if err != nil {
		if e, ok := fault.As(err); ok && e.Code.Status() < 500 {
			if pwProblem != "" && e.Fields != nil {
				e.Fields["password"] = pwProblem
			}
			return nil, rowProblem(e), nil
		}
		return nil, "", err
	}
	if pwProblem != "" {
		return nil, "password " + pwProblem, nil
	}
	l.Domain = d.name
	l.Author = jr.author
	if row.CreatedAt != nil {
		l.CreatedAt = row.CreatedAt.UTC().Truncate(time.Microsecond)
	}
	if row.ExpiresAt != nil {
		t := row.ExpiresAt.UTC().Truncate(time.Microsecond)
		l.ExpiresAt = &t
	}
	l.IsArchived = row.Archived
	l.ImportedClicks = max(row.Clicks, 0)
	return l, "", nil
}

// rowProblem says in one line what is wrong with a row's fields.
func rowProblem(e *fault.Error) string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	names := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + e.Fields[k]
	}
	return strings.Join(parts, "; ")
}

// domain finds the stored name of a row's domain: the default domain for
// none, else the workspace's domain of that name, which is added (not
// verified) when the workspace lacks it.
func (jr *jobRun) domain(ctx context.Context, name string) (domainAnswer, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || name == jr.Config.DefaultDomain {
		return domainAnswer{name: jr.Config.DefaultDomain}, nil
	}
	if a, ok := jr.domains[name]; ok {
		return a, nil
	}
	a, err := jr.findDomain(ctx, name)
	if err != nil {
		return a, err
	}
	jr.domains[name] = a
	return a, nil
}

func (jr *jobRun) findDomain(ctx context.Context, name string) (domainAnswer, error) {
	stored, why := domains.NormalizeName(name, jr.Config.DefaultDomain)
	if why != "" {
		return domainAnswer{problem: why}, nil
	}
	d, err := jr.Store.WorkspaceDomain(ctx, jr.ws.ID, stored)
	if err == nil && !d.Verified {
		// Added before another workspace verified the name: that
		// workspace's slugs are its own (docs/migration.md, "Domains").
		taken, err := jr.Store.IsVerifiedDomain(ctx, stored)
		if err != nil {
			return domainAnswer{}, err
		}
		if taken {
			return domainAnswer{problem: "name is already verified by another workspace"}, nil
		}
	}
	if err == nil {
		return domainAnswer{name: d.Name}, nil
	}
	if !fault.Is(err, fault.NotFound) {
		return domainAnswer{}, err
	}
	d, err = jr.Domains.Create(ctx, jr.ws, domains.Input{Name: patch.Value(stored)})
	if err != nil {
		if e, ok := fault.As(err); ok && e.Code.Status() < 500 {
			return domainAnswer{problem: rowProblem(e)}, nil
		}
		return domainAnswer{}, err
	}
	return domainAnswer{name: d.Name}, nil
}
