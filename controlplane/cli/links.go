package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/openapi"
)

// clientUsage is the help of the API client verbs.
const clientUsage = `API client commands (for scripts; key from SHORTLINK_API_KEY):
  links create --url URL [--slug S] [--domain D] [--title T] [--description T] [--tag T]…
               [--password P] [--expires RFC3339] [--click-limit N] [--expired-url URL] | --data JSON
  links list   [--page N] [--per-page N] [--all] [--search S] [--domain D] [--tag T] [--archived] [--sort created|clicks|updated]
  links get    ID
  links update ID [--url URL] [--slug S] [--title T] [--tag T]… [--password P] [--expires RFC3339]
               [--click-limit N] [--archived true|false] | --data JSON   (JSON null clears a field)
  links delete ID
  links export [--format csv|jsonl]   every link of the workspace, archived ones too (links:read)
  import       --from bitly|dub|shlink|kutt|yourls|csv FILE [--on-conflict skip|suffix] [--mapping JSON] [--no-wait]
               uploads an export and shows the job's progress until it ends (links:write)
  import       list [--page N] [--per-page N] | get ID | cancel ID | report ID
  stats        ID [--from YYYY-MM-DD] [--to YYYY-MM-DD]
  analytics    --group-by country|city|device|browser|os|referrer|utm_source|utm_medium|utm_campaign|link|tag|domain|day
               [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--limit N] [--link ID] [--tag T] [--domain D]
               [--utm-source S] [--utm-medium M] [--utm-campaign C] [--country|--city|--device|--browser|--os|--referrer V]
  audit        [--page N] [--per-page N] [--actor KEY_ID] [--resource-type T] [--resource-id ID] [--action A]
               [--from TIME] [--to TIME] [--csv]   the workspace's audit log (audit:read), newest first
  members      list [--page N] [--per-page N] | role USER_ID owner|admin|member|viewer | remove USER_ID
  invites      list | create --email E --role R | delete ID   (members:write)
  invites      accept TOKEN [--name N]   no key; the password from $SHORTLINK_PASSWORD
  openapi      [--payments]   print the API's OpenAPI 3.1 description (no server needed)
Every client command takes --api URL (default $SHORTLINK_API_URL, else http://$SHORTLINK_API_ADDR/api/v1,
else http://127.0.0.1:8080/api/v1) and --output json|table (default: table on a terminal, else json).`

// clientFlags are the flags every API client command takes.
type clientFlags struct {
	api    string
	output string
}

func (cf *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.api, "api", "", "API base URL (ending in /api/v1)")
	fs.StringVar(&cf.output, "output", "", "json or table (default: table on a terminal, else json)")
}

// apiBase is the API base the client commands call: the flag, else
// SHORTLINK_API_URL, else the address the server listens on by the same
// settings (SHORTLINK_API_ADDR), else the default.
func apiBase(flagValue string, getenv func(string) string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := getenv("SHORTLINK_API_URL"); v != "" {
		return v
	}
	if addr := getenv("SHORTLINK_API_ADDR"); addr != "" {
		host, port, err := net.SplitHostPort(addr)
		if err == nil {
			if host == "" || host == "0.0.0.0" || host == "::" {
				host = "127.0.0.1" // a wildcard listener answers on loopback
			}
			return "http://" + net.JoinHostPort(host, port) + "/api/v1"
		}
	}
	return client.DefaultBaseURL
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// commandEnv is what a client command runs with.
type commandEnv struct {
	ctx    context.Context
	stdout io.Writer
	getenv func(string) string
}

// parseArgs parses flags wherever they stand among the positional arguments
// (`links get ID --output json` as well as `links get --output json ID`).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// output writes v as JSON, or as a table with writeTable.
type output struct {
	json bool
	w    io.Writer
}

func (e commandEnv) newOutput(cf clientFlags) (output, error) {
	switch cf.output {
	case "json":
		return output{json: true, w: e.stdout}, nil
	case "table":
		return output{w: e.stdout}, nil
	case "":
		return output{json: !isTerminal(e.stdout), w: e.stdout}, nil
	}
	return output{}, fmt.Errorf("--output %q: want json or table", cf.output)
}

func (o output) write(v any, table func(tw *tabwriter.Writer)) error {
	if o.json {
		enc := json.NewEncoder(o.w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(o.w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// connect returns the output the flags chose and a client of the API.
func (e commandEnv) connect(cf clientFlags) (output, *client.Client, error) {
	out, err := e.newOutput(cf)
	if err != nil {
		return output{}, nil, err
	}
	c, err := e.client(cf)
	return out, c, err
}

func (e commandEnv) client(cf clientFlags) (*client.Client, error) {
	key := e.getenv("SHORTLINK_API_KEY")
	if key == "" {
		return nil, errors.New("no API key: set SHORTLINK_API_KEY (make one with `shortlink admin key create`)")
	}
	return client.New(apiBase(cf.api, e.getenv), key, client.WithUserAgent("shortlink-cli/1"))
}

// runLinks runs `links VERB …`.
func runLinks(e commandEnv, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("links: want a verb: create, list, get, update or delete\n%s", strings.TrimRight(clientUsage, "\n"))
	}
	verb, args := args[0], args[1:]
	switch verb {
	case "create":
		return linksCreate(e, args)
	case "list":
		return linksList(e, args)
	case "get", "delete":
		return linksOne(e, verb, args)
	case "update":
		return linksUpdate(e, args)
	case "export":
		return linksExport(e, args) // imports.go
	}
	return fmt.Errorf("links %s: unknown verb; want create, list, get, update or delete\n%s", verb, clientUsage)
}

// linkFields are the flags of a link's fields shared by create and update;
// each remembers whether it was given.
type linkFields struct {
	fs                                              *flag.FlagSet
	url, slug, domain, title, description, password string
	expires, expiredURL                             string
	clickLimit                                      int64
	tags                                            []string
	data                                            string
}

func (lf *linkFields) register(fs *flag.FlagSet) {
	lf.fs = fs
	fs.StringVar(&lf.url, "url", "", "destination URL")
	fs.StringVar(&lf.slug, "slug", "", "custom slug")
	fs.StringVar(&lf.domain, "domain", "", "custom domain (verified)")
	fs.StringVar(&lf.title, "title", "", "title")
	fs.StringVar(&lf.description, "description", "", "description")
	fs.StringVar(&lf.password, "password", "", "password (at least 4 characters)")
	fs.StringVar(&lf.expires, "expires", "", "expiry, RFC 3339")
	fs.StringVar(&lf.expiredURL, "expired-url", "", "where an expired link sends visitors")
	fs.Int64Var(&lf.clickLimit, "click-limit", 0, "maximum number of clicks")
	fs.Func("tag", "a tag (repeat for several)", func(s string) error {
		lf.tags = append(lf.tags, s)
		return nil
	})
	fs.StringVar(&lf.data, "data", "", "the whole JSON body instead of the field flags (- reads it from stdin)")
}

func (lf *linkFields) given(name string) bool {
	found := false
	lf.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// fieldFlagGiven reports whether any field flag was given beside --data.
func (lf *linkFields) fieldFlagGiven() bool {
	n := 0
	lf.fs.Visit(func(f *flag.Flag) {
		if f.Name != "data" && f.Name != "api" && f.Name != "output" {
			n++
		}
	})
	return n > 0
}

// body reads --data: a JSON object, or - for stdin.
func (lf *linkFields) body(stdin io.Reader, dst any) error {
	b := []byte(lf.data)
	if lf.data == "-" {
		var err error
		if b, err = io.ReadAll(stdin); err != nil {
			return fmt.Errorf("--data -: %w", err)
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	return nil
}

var stdin io.Reader = os.Stdin

func parseTime(flagName, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return t, fmt.Errorf("--%s %q: want an RFC 3339 date-time like 2030-01-31T12:00:00Z", flagName, v)
	}
	return t, nil
}

func linksCreate(e commandEnv, args []string) error {
	fs := newFlagSet("links create")
	var cf clientFlags
	var lf linkFields
	cf.register(fs)
	lf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("links create: %w", err)
	}
	if len(pos) > 0 {
		return fmt.Errorf("links create: unexpected argument %q", pos[0])
	}
	in, err := lf.createInput()
	if err != nil {
		return fmt.Errorf("links create: %w", err)
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	l, err := c.CreateLink(e.ctx, in)
	if err != nil {
		return err
	}
	return out.write(l, linkTable([]client.Link{*l}, nil))
}

// createInput is the body of links create from the flags or --data.
func (lf *linkFields) createInput() (client.LinkInput, error) {
	var in client.LinkInput
	if lf.data != "" {
		if lf.fieldFlagGiven() {
			return in, errors.New("--data replaces the field flags; give one or the other")
		}
		return in, lf.body(stdin, &in)
	}
	if lf.url == "" {
		return in, errors.New("--url is required")
	}
	in = client.LinkInput{
		DestinationURL: lf.url, Slug: lf.slug, Domain: lf.domain, Title: lf.title, Description: lf.description,
		Tags: lf.tags, Password: lf.password, ExpiredURL: lf.expiredURL, ClickLimit: lf.clickLimit,
	}
	if lf.expires != "" {
		t, err := parseTime("expires", lf.expires)
		if err != nil {
			return in, err
		}
		in.ExpiresAt = &t
	}
	return in, nil
}

// updateInput is the body of links update from the flags or --data.
func (lf *linkFields) updateInput(archived string) (client.LinkUpdate, error) {
	var up client.LinkUpdate
	if lf.data != "" {
		if lf.fieldFlagGiven() {
			return up, errors.New("--data replaces the field flags; give one or the other")
		}
		return up, lf.body(stdin, &up)
	}
	text := map[string]*client.Field[string]{
		"url": &up.DestinationURL, "slug": &up.Slug, "domain": &up.Domain, "title": &up.Title,
		"description": &up.Description, "password": &up.Password, "expired-url": &up.ExpiredURL,
	}
	values := map[string]string{
		"url": lf.url, "slug": lf.slug, "domain": lf.domain, "title": lf.title,
		"description": lf.description, "password": lf.password, "expired-url": lf.expiredURL,
	}
	for name, dst := range text {
		if lf.given(name) {
			*dst = client.Set(values[name])
		}
	}
	if lf.given("tag") {
		up.Tags = client.Set(lf.tags)
	}
	if lf.given("click-limit") {
		up.ClickLimit = client.Set(lf.clickLimit)
	}
	if lf.given("expires") {
		t, err := parseTime("expires", lf.expires)
		if err != nil {
			return up, err
		}
		up.ExpiresAt = client.Set(t)
	}
	if archived != "" {
		b, err := strconv.ParseBool(archived)
		if err != nil {
			return up, fmt.Errorf("--archived %q: want true or false", archived)
		}
		up.IsArchived = client.Set(b)
	}
	if b, _ := json.Marshal(up); string(b) == "{}" {
		return up, errors.New("nothing to change: give a field flag or --data")
	}
	return up, nil
}

func linksUpdate(e commandEnv, args []string) error {
	fs := newFlagSet("links update")
	var cf clientFlags
	var lf linkFields
	var archived string
	cf.register(fs)
	lf.register(fs)
	fs.StringVar(&archived, "archived", "", "true archives the link, false restores it")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("links update: %w", err)
	}
	if len(pos) != 1 {
		return errors.New("links update: want one link id")
	}
	up, err := lf.updateInput(archived)
	if err != nil {
		return fmt.Errorf("links update: %w", err)
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	l, err := c.UpdateLink(e.ctx, pos[0], up)
	if err != nil {
		return err
	}
	return out.write(l, linkTable([]client.Link{*l}, nil))
}

func linksOne(e commandEnv, verb string, args []string) error {
	fs := newFlagSet("links " + verb)
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("links %s: %w", verb, err)
	}
	if len(pos) != 1 {
		return fmt.Errorf("links %s: want one link id", verb)
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	if verb == "delete" {
		if err := c.DeleteLink(e.ctx, pos[0]); err != nil {
			return err
		}
		return out.write(map[string]any{"id": pos[0], "deleted": true}, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "%s\tdeleted (archived)\n", pos[0])
		})
	}
	l, err := c.GetLink(e.ctx, pos[0])
	if err != nil {
		return err
	}
	return out.write(l, linkTable([]client.Link{*l}, nil))
}

func linksList(e commandEnv, args []string) error {
	fs := newFlagSet("links list")
	var (
		cf  clientFlags
		o   client.ListLinksOptions
		all bool
	)
	cf.register(fs)
	fs.IntVar(&o.Page.Page, "page", 0, "page number (from 1)")
	fs.IntVar(&o.PerPage, "per-page", 0, "links per page (1–100)")
	fs.BoolVar(&all, "all", false, "every page")
	fs.StringVar(&o.Search, "search", "", "substring of slug, URL or title")
	fs.StringVar(&o.Domain, "domain", "", "only this domain")
	fs.StringVar(&o.Tag, "tag", "", "only this tag")
	fs.BoolVar(&o.Archived, "archived", false, "include archived links")
	fs.BoolVar(&o.OnlyArchived, "only-archived", false, "only archived links")
	fs.StringVar(&o.Sort, "sort", "", "created, clicks or updated")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("links list: %w", err)
	}
	if len(pos) > 0 {
		return fmt.Errorf("links list: unexpected argument %q", pos[0])
	}
	if all && o.Page.Page != 0 {
		return errors.New("links list: --all and --page exclude each other")
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	var links []client.Link
	var meta client.Meta
	if all {
		if o.PerPage == 0 {
			o.PerPage = 100
		}
		for o.Page.Page = 1; ; o.Page.Page++ {
			page, m, err := c.ListLinks(e.ctx, o)
			if err != nil {
				return err
			}
			links, meta = append(links, page...), m
			if !m.HasMore || len(page) == 0 {
				break
			}
		}
		meta.HasMore = false
	} else if links, meta, err = c.ListLinks(e.ctx, o); err != nil {
		return err
	}
	if links == nil {
		links = []client.Link{}
	}
	return out.write(links, linkTable(links, &meta))
}

// linkTable writes links as a table, with the page's line under it.
func linkTable(links []client.Link, meta *client.Meta) func(tw *tabwriter.Writer) {
	return func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "ID\tSHORT URL\tDESTINATION\tCLICKS\tTAGS\tCREATED")
		for _, l := range links {
			dest := l.DestinationURL
			if len(dest) > 60 {
				dest = dest[:57] + "..."
			}
			state := ""
			if l.IsArchived {
				state = " (archived)"
			}
			fmt.Fprintf(tw, "%s\t%s%s\t%s\t%d\t%s\t%s\n", l.ID, l.ShortURL, state, dest, l.ClickCount,
				strings.Join(l.Tags, ","), l.CreatedAt.UTC().Format(time.DateTime))
		}
		if meta != nil {
			more := ""
			if meta.HasMore {
				more = fmt.Sprintf("; next: --page %d", meta.Page+1)
			}
			fmt.Fprintf(tw, "\n%d of %d links%s\n", len(links), meta.Total, more)
		}
	}
}

// runStats runs `stats ID`.
func runStats(e commandEnv, args []string) error {
	fs := newFlagSet("stats")
	var (
		cf       clientFlags
		from, to string
	)
	cf.register(fs)
	fs.StringVar(&from, "from", "", "first day, YYYY-MM-DD (default: 29 days before --to)")
	fs.StringVar(&to, "to", "", "last day, YYYY-MM-DD (default: today, UTC)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	if len(pos) != 1 {
		return errors.New("stats: want one link id")
	}
	var r client.Range
	for _, d := range []struct {
		name, v string
		dst     *time.Time
	}{{"from", from, &r.From}, {"to", to, &r.To}} {
		if d.v == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, d.v)
		if err != nil {
			return fmt.Errorf("stats: --%s %q: want YYYY-MM-DD", d.name, d.v)
		}
		*d.dst = t
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	s, err := c.LinkStats(e.ctx, pos[0], r)
	if err != nil {
		return err
	}
	return out.write(s, func(tw *tabwriter.Writer) {
		last := "never"
		if s.LastClickedAt != nil {
			last = s.LastClickedAt.UTC().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s … %s\n", pos[0], s.From, s.To)
		fmt.Fprintf(tw, "clicks\t%d\nunique\t%d\nlast click\t%s\n", s.TotalClicks, s.UniqueClicks, last)
		section := func(title string, rows [][2]string) {
			if len(rows) == 0 {
				return
			}
			fmt.Fprintf(tw, "\n%s\tCLICKS\n", title)
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
			}
		}
		var rows [][2]string
		for _, c := range s.ByCountry {
			rows = append(rows, [2]string{c.Country, strconv.FormatInt(c.Count, 10)})
		}
		section("COUNTRY", rows)
		rows = nil
		for _, c := range s.ByDevice {
			rows = append(rows, [2]string{c.Device, strconv.FormatInt(c.Count, 10)})
		}
		section("DEVICE", rows)
		rows = nil
		for _, c := range s.ByBrowser {
			rows = append(rows, [2]string{c.Browser, strconv.FormatInt(c.Count, 10)})
		}
		section("BROWSER", rows)
		rows = nil
		for _, c := range s.ByReferrer {
			rows = append(rows, [2]string{c.Referrer, strconv.FormatInt(c.Count, 10)})
		}
		section("REFERRER", rows)
		rows = nil
		for _, d := range s.OverTime {
			if d.Count > 0 {
				rows = append(rows, [2]string{d.Date, strconv.FormatInt(d.Count, 10)})
			}
		}
		section("DAY", rows)
	})
}

// runOpenAPI runs `openapi [--payments]`: the description, as served.
func runOpenAPI(stdout io.Writer, args []string) error {
	fs := newFlagSet("openapi")
	payments := fs.Bool("payments", false, "only the payable operations")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return errors.New("usage: openapi [--payments]")
	}
	s, err := openapi.Load()
	if err != nil {
		return err
	}
	b := s.JSON
	if *payments {
		b = s.PaymentsJSON
	}
	_, err = stdout.Write(b)
	return err
}
