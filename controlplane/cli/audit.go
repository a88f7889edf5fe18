package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"shortlink.dev/controlplane/client"
)

// runAudit runs `audit [filters] [--csv]`: a page of the workspace's audit
// log, newest first, or with --csv its whole export.
func runAudit(e commandEnv, args []string) error {
	fs := newFlagSet("audit")
	var (
		cf       clientFlags
		o        client.AuditOptions
		from, to string
		csv      bool
	)
	cf.register(fs)
	fs.IntVar(&o.Page.Page, "page", 0, "page number (from 1)")
	fs.IntVar(&o.PerPage, "per-page", 0, "entries per page (1–100)")
	fs.StringVar(&o.Actor, "actor", "", "only the changes of this actor (an API key's id, key_…)")
	fs.StringVar(&o.ResourceType, "resource-type", "", "only this kind of resource: link, domain, qr, gallery, gallery_item, webhook, api_key, workspace")
	fs.StringVar(&o.ResourceID, "resource-id", "", "only this resource")
	fs.StringVar(&o.Action, "action", "", "only this action (link.created, link.updated, …)")
	fs.StringVar(&from, "from", "", "only changes at or after this time (RFC 3339 or YYYY-MM-DD)")
	fs.StringVar(&to, "to", "", "only changes before this time (RFC 3339, or YYYY-MM-DD for that whole day)")
	fs.BoolVar(&csv, "csv", false, "print every matching entry as CSV (the export) instead of a page")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if len(pos) != 0 {
		return errors.New("audit: takes no arguments, only flags")
	}
	for _, d := range []struct {
		name, v string
		dst     *time.Time
		end     bool
	}{{"from", from, &o.From, false}, {"to", to, &o.To, true}} {
		if d.v == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, d.v); err == nil {
			*d.dst = t
			continue
		}
		t, err := time.Parse(time.DateOnly, d.v)
		if err != nil {
			return fmt.Errorf("audit: --%s %q: want RFC 3339 or YYYY-MM-DD", d.name, d.v)
		}
		if d.end {
			t = t.AddDate(0, 0, 1)
		}
		*d.dst = t
	}
	if csv && (o.Page.Page != 0 || o.PerPage != 0) {
		return errors.New("audit: --csv exports every entry; it takes no --page or --per-page")
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	if csv {
		b, err := c.ExportAuditLog(e.ctx, o)
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(b)
		return err
	}
	entries, meta, err := c.AuditLog(e.ctx, o)
	if err != nil {
		return err
	}
	return out.write(entries, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "WHEN\tWHO\tACTION\tRESOURCE\tCHANGED")
		for _, en := range entries {
			fields := make([]string, 0, len(en.Changes))
			for k := range en.Changes {
				fields = append(fields, k)
			}
			slices.Sort(fields)
			fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s\n", en.CreatedAt.UTC().Format(time.RFC3339), en.Actor.Name,
				en.Actor.Type, en.Action, en.ResourceID, strings.Join(fields, ", "))
		}
		fmt.Fprintf(tw, "page %d of %d entries\n", meta.Page, meta.Total)
	})
}
