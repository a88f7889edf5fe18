package cli

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"shortlink.dev/controlplane/client"
)

// runAnalytics runs `analytics --group-by G …`: the workspace's analytics.
func runAnalytics(e commandEnv, args []string) error {
	fs := newFlagSet("analytics")
	var (
		cf       clientFlags
		from, to string
		o        client.AnalyticsOptions
	)
	cf.register(fs)
	fs.StringVar(&o.GroupBy, "group-by", "", "country, city, device, browser, os, referrer, utm_source, utm_medium, utm_campaign, link, tag, domain or day (required)")
	fs.StringVar(&from, "from", "", "first day, YYYY-MM-DD (default: 29 days before --to)")
	fs.StringVar(&to, "to", "", "last day, YYYY-MM-DD (default: today, UTC)")
	fs.IntVar(&o.Limit, "limit", 0, "most rows, 1 to 1000 (default: the server's, 100)")
	fs.StringVar(&o.LinkID, "link", "", "only this link")
	fs.StringVar(&o.Tag, "tag", "", "only the links with this tag")
	fs.StringVar(&o.Domain, "domain", "", "only the links on this domain")
	fs.StringVar(&o.UTMSource, "utm-source", "", "only the links with this utmSource")
	fs.StringVar(&o.UTMMedium, "utm-medium", "", "only the links with this utmMedium")
	fs.StringVar(&o.UTMCampaign, "utm-campaign", "", "only the links with this utmCampaign")
	dims := []string{"country", "city", "device", "browser", "os", "referrer"}
	values := make([]string, len(dims))
	for i, d := range dims {
		fs.StringVar(&values[i], d, "", "only the clicks with this "+d+" (one such filter at most)")
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("analytics: %w", err)
	}
	if len(pos) != 0 {
		return errors.New("analytics: takes no arguments, only flags")
	}
	if o.GroupBy == "" {
		return errors.New("analytics: --group-by is required")
	}
	for _, d := range []struct {
		name, v string
		dst     *time.Time
	}{{"from", from, &o.From}, {"to", to, &o.To}} {
		if d.v == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, d.v)
		if err != nil {
			return fmt.Errorf("analytics: --%s %q: want YYYY-MM-DD", d.name, d.v)
		}
		*d.dst = t
	}
	for i, d := range dims {
		if values[i] != "" {
			if o.Filters == nil {
				o.Filters = map[string]string{}
			}
			o.Filters[d] = values[i]
		}
	}
	out, c, err := e.connect(cf)
	if err != nil {
		return err
	}
	a, err := c.Analytics(e.ctx, o)
	if err != nil {
		return err
	}
	return out.write(a, func(tw *tabwriter.Writer) {
		fmt.Fprintf(tw, "by %s\t%s … %s\n", a.GroupBy, a.From, a.To)
		fmt.Fprintf(tw, "clicks\t%d\nunique\t%d\n\n", a.TotalClicks, a.UniqueClicks)
		fmt.Fprintf(tw, "%s\tCLICKS\tUNIQUE\n", strings.ToUpper(a.GroupBy))
		for _, r := range a.Rows {
			fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Value, r.Clicks, r.UniqueClicks)
		}
	})
}
