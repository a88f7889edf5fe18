package stats

import (
	"time"

	"shortlink.dev/shared/fault"
)

// MaxExportDays bounds the range of a click export (Reader.ExportClicks):
// a year, leap years included, both ends counted.
const MaxExportDays = 366

// ExportDays returns the range's first and last UTC days (midnight UTC) for
// an export, or a VALIDATION_ERROR when it ends before it starts or spans
// more than MaxExportDays.
func ExportDays(r Range) (from, to time.Time, err error) {
	from, to = utcDay(r.From), utcDay(r.To)
	if to.Before(from) {
		return from, to, fault.New(fault.Validation, "the export range ends (%s) before it starts (%s)",
			to.Format(time.DateOnly), from.Format(time.DateOnly))
	}
	if days := int(to.Sub(from).Hours()/24) + 1; days > MaxExportDays {
		return from, to, fault.New(fault.Validation, "the export range spans %d days; at most %d", days, MaxExportDays)
	}
	return from, to, nil
}

func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
