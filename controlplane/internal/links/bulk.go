package links

import (
	"context"
	"fmt"
	"slices"
	"time"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// MaxBulkUpdate is the most links one PATCH /links/bulk changes (Dub's limit).
const MaxBulkUpdate = 100

// BulkUpdate is the body of PATCH /links/bulk: the links, and the change
// made to each of them. Absent fields change nothing.
type BulkUpdate struct {
	LinkIDs []string `json:"linkIds"`
	// IsArchived archives (true) or restores (false) every link.
	IsArchived patch.Field[bool] `json:"isArchived"`
	// AddTags are added to each link's tags; RemoveTags taken out of them.
	AddTags    []string `json:"addTags"`
	RemoveTags []string `json:"removeTags"`
}

// UpdateMany applies u to each of the workspace's links it names, in one
// transaction: every link is changed, or (on any error) none. A link id
// the workspace does not have is NOT_FOUND, whether or not another
// workspace has it. The links come back in the order of u.LinkIDs, once
// each; one the change leaves as it was is not written again. When another
// write changed one of the links between their read and their write, it
// reads them all again and reapplies u (retryChanged), so that no write
// undoes another.
func (s *Service) UpdateMany(ctx context.Context, ws *workspace.Workspace, u BulkUpdate) ([]*link.Link, error) {
	ids, err := u.check()
	if err != nil {
		return nil, err
	}
	return retryChanged(func() ([]*link.Link, error) { return s.updateMany(ctx, ws, ids, u) })
}

// updateMany is one read-modify-write of UpdateMany, of the links ids.
func (s *Service) updateMany(ctx context.Context, ws *workspace.Workspace, ids []string, u BulkUpdate) ([]*link.Link, error) {
	out := make([]*link.Link, 0, len(ids))
	var (
		changedLinks []*link.Link
		readAt       []time.Time
		msgs         []webhook.Message
		changes      []bus.LinkChange
		entries      []audit.Entry
	)
	now, by := s.now(), actor(ctx)
	for _, id := range ids {
		l, err := s.Store.GetLink(ctx, ws.ID, id)
		if fault.Is(err, fault.NotFound) {
			return nil, fault.Field(fault.NotFound, "linkIds", fmt.Sprintf("no link %s in this workspace", id))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l)
		before := *l
		read := l.UpdatedAt
		l.Tags = withTags(l.Tags, u.AddTags, u.RemoveTags)
		if len(l.Tags) > link.MaxTags {
			return nil, fault.Field(fault.Validation, "addTags",
				fmt.Sprintf("link %s would have more than %d tags", id, link.MaxTags))
		}
		if u.IsArchived.Set {
			if l.IsArchived && !u.IsArchived.V {
				// Restored: its domain may have gone, or changed hands, since.
				var fe fault.FieldErrors
				if _, err := s.domains().Resolve(ctx, ws.ID, l.Domain, &fe); err != nil {
					return nil, err
				}
				if err := fe.Err(); err != nil {
					return nil, err
				}
			}
			l.IsArchived = u.IsArchived.V
		}
		if l.IsArchived == before.IsArchived && slices.Equal(l.Tags, before.Tags) {
			continue
		}
		if l.UpdatedAt = now; !now.After(read) {
			l.UpdatedAt = read.Add(time.Microsecond)
		}
		l.Editor = by
		m, err := webhook.NewMessage(ws.ID, webhook.EventLinkUpdated, convert.Link(l, s.Config), s.Now())
		if err != nil {
			return nil, fmt.Errorf("%s event: %w", webhook.EventLinkUpdated, err)
		}
		msgs = append(msgs, m)
		e, err := s.auditEntry(ws, "link.updated", &before, l)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
		changes = append(changes, bus.LinkChange{LinkID: l.ID, Domain: l.Domain, Slug: l.Slug})
		changedLinks = append(changedLinks, l)
		readAt = append(readAt, read)
	}
	if len(changedLinks) == 0 {
		return out, nil
	}
	wctx := audit.With(bus.WithChanges(webhook.WithMessages(ctx, msgs...), changes...), entries...)
	if err := s.Store.UpdateLinks(wctx, changedLinks, readAt, s.Config.LinkLimit(ws.Plan)); err != nil {
		return nil, err
	}
	return out, nil
}

// check validates u, cleaning its tags, and returns its link ids without
// repeats.
func (u *BulkUpdate) check() ([]string, error) {
	var fe fault.FieldErrors
	var ids []string
	switch {
	case len(u.LinkIDs) == 0:
		fe.Add(fault.Validation, "linkIds", fmt.Sprintf("must list 1 to %d link ids", MaxBulkUpdate))
	case len(u.LinkIDs) > MaxBulkUpdate:
		fe.Add(fault.Validation, "linkIds", fmt.Sprintf("lists %d links; send 1 to %d", len(u.LinkIDs), MaxBulkUpdate))
	default:
		for _, id := range u.LinkIDs {
			if id == "" {
				fe.Add(fault.Validation, "linkIds", "must not hold an empty id")
				break
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if u.IsArchived.Null {
		fe.Add(fault.Validation, "isArchived", "must be true or false")
	}
	if u.AddTags != nil {
		u.AddTags = cleanTags(u.AddTags, "addTags", &fe)
	}
	if u.RemoveTags != nil {
		u.RemoveTags = cleanTags(u.RemoveTags, "removeTags", &fe)
	}
	for _, t := range u.AddTags {
		if slices.Contains(u.RemoveTags, t) {
			fe.Add(fault.Validation, "removeTags", fmt.Sprintf("holds %q, which addTags adds", t))
			break
		}
	}
	if !u.IsArchived.Set && len(u.AddTags) == 0 && len(u.RemoveTags) == 0 {
		fe.Add(fault.Validation, "body", "must change something: isArchived, addTags or removeTags")
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	return ids, nil
}

// withTags is tags with add appended (those it lacks) and remove taken out.
func withTags(tags, add, remove []string) []string {
	out := make([]string, 0, len(tags)+len(add))
	for _, t := range append(slices.Clone(tags), add...) {
		if !slices.Contains(out, t) && !slices.Contains(remove, t) {
			out = append(out, t)
		}
	}
	return out
}
