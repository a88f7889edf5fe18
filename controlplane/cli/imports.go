package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"shortlink.dev/controlplane/client"
)

// importPoll is how often `import` asks for its job's progress.
var importPoll = 500 * time.Millisecond

// runImport runs `import --from SOURCE FILE` and the verbs of import jobs.
func runImport(e commandEnv, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "list":
			return importList(e, args[1:])
		case "get", "cancel", "report":
			return importJobVerb(e, args[0], args[1:])
		}
	}
	fs := newFlagSet("import")
	var (
		cf                        clientFlags
		from, onConflict, mapping string
		noWait                    bool
	)
	cf.register(fs)
	fs.StringVar(&from, "from", "", "the export's source: bitly, dub, shlink, kutt, yourls or csv")
	fs.StringVar(&onConflict, "on-conflict", "", "skip (default) or suffix: what a slug taken by another link gets")
	fs.StringVar(&mapping, "mapping", "", `for --from csv: a JSON object from link fields to column headers, like {"destinationUrl":"URL"}`)
	fs.BoolVar(&noWait, "no-wait", false, "print the queued job and return at once")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if from == "" || len(pos) != 1 {
		return errors.New("import: usage: import --from bitly|dub|shlink|kutt|yourls|csv FILE [--on-conflict skip|suffix] [--mapping JSON] [--no-wait]")
	}
	in := client.ImportInput{Source: from, FileName: filepath.Base(pos[0]), OnConflict: onConflict}
	if mapping != "" {
		if err := json.Unmarshal([]byte(mapping), &in.Mapping); err != nil || in.Mapping == nil {
			return fmt.Errorf("import: --mapping must be a JSON object of strings: %v", err)
		}
	}
	if in.File, err = os.ReadFile(pos[0]); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	j, err := c.Import(e.ctx, in)
	if err != nil {
		return err
	}
	tty := isTerminal(e.stdout) && !out.json
	for !noWait && !final(j.Status) {
		if tty {
			fmt.Fprint(e.stdout, "\r"+progressLine(j))
		}
		select {
		case <-e.ctx.Done():
			return e.ctx.Err()
		case <-time.After(importPoll):
		}
		if j, err = c.ImportJob(e.ctx, j.ID); err != nil {
			return err
		}
	}
	if tty {
		fmt.Fprintln(e.stdout, "\r"+progressLine(j))
	}
	return out.write(j, func(tw *tabwriter.Writer) { jobTable(tw, []client.ImportJob{*j}) })
}

func final(status string) bool {
	return status == "done" || status == "failed" || status == "canceled"
}

// progressLine is a job's progress as a bar and its counters.
func progressLine(j *client.ImportJob) string {
	const width = 30
	done := 0
	if j.Total > 0 {
		done = int(j.Read * width / j.Total)
	}
	pct := int64(100)
	if j.Total > 0 {
		pct = j.Read * 100 / j.Total
	}
	return fmt.Sprintf("[%s%s] %3d%%  %d/%d rows  created %d  skipped %d  failed %d  %s  ",
		strings.Repeat("#", done), strings.Repeat(".", width-done), pct, j.Read, j.Total, j.Created, j.Skipped, j.Failed, j.Status)
}

func jobTable(tw *tabwriter.Writer, jobs []client.ImportJob) {
	fmt.Fprintln(tw, "ID\tSOURCE\tSTATUS\tROWS\tCREATED\tSKIPPED\tFAILED\tFILE")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%s\n", j.ID, j.Source, j.Status, j.Read, j.Total, j.Created, j.Skipped, j.Failed, j.FileName)
		if j.Error != nil {
			fmt.Fprintf(tw, "\terror: %s\n", *j.Error)
		}
	}
}

func importList(e commandEnv, args []string) error {
	fs := newFlagSet("import list")
	var (
		cf clientFlags
		p  client.Page
	)
	cf.register(fs)
	fs.IntVar(&p.Page, "page", 0, "page number (from 1)")
	fs.IntVar(&p.PerPage, "per-page", 0, "jobs per page (1–100)")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) != 0 {
		return fmt.Errorf("import list: takes only --page and --per-page (%v)", err)
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	jobs, _, err := c.Imports(e.ctx, p)
	if err != nil {
		return err
	}
	return out.write(jobs, func(tw *tabwriter.Writer) { jobTable(tw, jobs) })
}

func importJobVerb(e commandEnv, verb string, args []string) error {
	fs := newFlagSet("import " + verb)
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) != 1 {
		return fmt.Errorf("import %s: want one job id (%v)", verb, err)
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	var j *client.ImportJob
	switch verb {
	case "report":
		b, err := c.ImportReport(e.ctx, pos[0])
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(b)
		return err
	case "cancel":
		j, err = c.CancelImport(e.ctx, pos[0])
	default:
		j, err = c.ImportJob(e.ctx, pos[0])
	}
	if err != nil {
		return err
	}
	return out.write(j, func(tw *tabwriter.Writer) { jobTable(tw, []client.ImportJob{*j}) })
}

// linksExport runs `links export [--format csv|jsonl]`: every link to stdout.
func linksExport(e commandEnv, args []string) error {
	fs := newFlagSet("links export")
	var (
		cf     clientFlags
		format string
	)
	cf.register(fs)
	fs.StringVar(&format, "format", "csv", "csv or jsonl")
	if pos, err := parseArgs(fs, args); err != nil || len(pos) != 0 {
		return fmt.Errorf("links export: takes only --format (%v)", err)
	}
	c, err := e.client(cf)
	if err != nil {
		return err
	}
	b, err := c.ExportLinks(e.ctx, format)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(b)
	return err
}
