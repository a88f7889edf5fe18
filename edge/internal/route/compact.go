package route

import (
	"sort"
	"strings"
	"time"

	"shortlink.dev/shared/link"
)

// Link is a link compiled for the edge, in its compact form: one string,
// one allocation without pointers (the garbage collector never scans it),
// holding a small header and every text of the link back to back. A cached
// link of the usual shape is its text plus about 40 bytes (docs/edge.md).
// An absent link (no such slug) is cached too (Absent). The zero Link is no
// link at all (IsZero); Compile and NewAbsent make the others.
//
// Layout of s (integers little-endian):
//
//	[0:8)   CachedUntil, Unix nanoseconds
//	[8:16)  ExpiresAt, Unix nanoseconds (flagExpires says there is one)
//	[16]    flags
//	[17:19) number of geo targets, [19:21) of device targets
//	[21:…)  offsets in s, uint16 (uint32 with flagWide, for a link of
//	        more than 64 KiB): where the first field starts, then where
//	        each field ends (the fieldFixed fields, then the geo targets'
//	        and the device targets' keys and values)
//	…       the fields' bytes, each starting where the one before ends
//
// Its methods read fields out of s as substrings: a redirect reads a link
// without allocating, and the strings it hands on (the click's link id,
// the target) keep the link's one allocation alive, nothing more.
type Link struct{ s string }

// The fields of a Link, in order; the targets follow.
const (
	fieldDomain = iota
	fieldSlug
	fieldID
	fieldWorkspace
	fieldExpiredURL
	fieldPassword
	fieldIOS
	fieldAndroid
	fieldDestination
	fieldFixed // number of fixed fields
)

const (
	flagAbsent = 1 << iota
	flagArchived
	flagLimit
	flagExpires
	flagWide
)

const headerLen = 21

// Compile prepares l for the edge, to be served until until: every target
// gets the UTM parameters, the targets are normalised.
func Compile(l *link.Link, until time.Time) Link {
	utm := utmParams(l.UTM)
	f := make([]string, fieldFixed, fieldFixed+2*(len(l.GeoTargets)+len(l.DeviceTargets)))
	f[fieldDomain], f[fieldSlug], f[fieldID], f[fieldWorkspace] = l.Domain, l.Slug, l.ID, l.WorkspaceID
	f[fieldPassword] = l.PasswordHash
	f[fieldDestination] = withParams(l.DestinationURL, utm)
	if l.ExpiredURL != nil {
		f[fieldExpiredURL] = Normalize(*l.ExpiredURL)
	}
	if l.IOSURL != nil {
		f[fieldIOS] = withParams(*l.IOSURL, utm)
	}
	if l.AndroidURL != nil {
		f[fieldAndroid] = withParams(*l.AndroidURL, utm)
	}
	f, geo := appendTargets(f, l.GeoTargets, utm)
	f, device := appendTargets(f, l.DeviceTargets, utm)
	var flags byte
	if l.IsArchived {
		flags |= flagArchived
	}
	if l.ClickLimit != nil {
		flags |= flagLimit
	}
	var expires int64
	if l.ExpiresAt != nil {
		flags |= flagExpires
		expires = l.ExpiresAt.UnixNano()
	}
	return build(f, flags, until.UnixNano(), expires, geo, device)
}

// NewAbsent returns the cache entry, until until, of a slug that does not exist.
func NewAbsent(domain, slug string, until time.Time) Link {
	f := make([]string, fieldFixed)
	f[fieldDomain], f[fieldSlug] = domain, slug
	return build(f, flagAbsent, until.UnixNano(), 0, 0, 0)
}

// appendTargets appends the targets of m, their keys trimmed and sorted,
// their values with the UTM parameters, and returns how many it appended.
func appendTargets(f []string, m map[string]string, utm [][2]string) ([]string, int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f = append(f, strings.TrimSpace(k), withParams(m[k], utm))
	}
	return f, len(keys)
}

// build lays the fields out in one string.
func build(f []string, flags byte, until, expires int64, geo, device int) Link {
	text := 0
	for _, s := range f {
		text += len(s)
	}
	width := 2
	if headerLen+2*(len(f)+1)+text > 0xffff {
		width, flags = 4, flags|flagWide
	}
	table := headerLen + width*(len(f)+1)
	b := make([]byte, table, table+text)
	putUint(b[0:8], uint64(until))
	putUint(b[8:16], uint64(expires))
	b[16] = flags
	putUint(b[17:19], uint64(geo))
	putUint(b[19:21], uint64(device))
	putUint(b[headerLen:headerLen+width], uint64(table))
	for i, s := range f {
		b = append(b, s...)
		p := headerLen + width*(i+1)
		putUint(b[p:p+width], uint64(len(b)))
	}
	return Link{s: string(b)}
}

func putUint(b []byte, v uint64) {
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
}

// uint64At reads 8 bytes of s at i (the compiler makes it one load).
func uint64At(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func uint16At(s string, i int) int { return int(s[i]) | int(s[i+1])<<8 }

// field returns field i: the one read of a redirect, small enough to be
// inlined.
func (l Link) field(i int) string {
	if l.s[16]&flagWide == 0 {
		p := headerLen + 2*i
		return l.s[uint16At(l.s, p):uint16At(l.s, p+2)]
	}
	return l.wideField(i)
}

// wideField is field for a link with 4-byte offsets.
func (l Link) wideField(i int) string {
	p := headerLen + 4*i
	return l.s[uint32At(l.s, p):uint32At(l.s, p+4)]
}

func uint32At(s string, i int) int { return uint16At(s, i) | uint16At(s, i+2)<<16 }

// IsZero reports whether l is no link (the zero Link).
func (l Link) IsZero() bool { return l.s == "" }

// Size is the length of l's one allocation, in bytes.
func (l Link) Size() int { return len(l.s) }

// Is reports whether l is the link (or absence) of domain+slug.
func (l Link) Is(domain string, slug []byte) bool {
	return l.field(fieldDomain) == domain && l.field(fieldSlug) == string(slug)
}

// CachedUntil is when the edge's cache must read the link again.
func (l Link) CachedUntil() time.Time { return time.Unix(0, int64(uint64At(l.s, 0))) }

// Fresh reports whether the cached l may still be served at now.
func (l Link) Fresh(now time.Time) bool { return now.UnixNano() < int64(uint64At(l.s, 0)) }

// Domain is the link's domain.
func (l Link) Domain() string { return l.field(fieldDomain) }

// Slug is the link's slug.
func (l Link) Slug() string { return l.field(fieldSlug) }

// ID is the link's id; empty when Absent.
func (l Link) ID() string { return l.field(fieldID) }

// WorkspaceID is the id of the link's workspace.
func (l Link) WorkspaceID() string { return l.field(fieldWorkspace) }

// Absent reports whether l records that there is no such link.
func (l Link) Absent() bool { return l.s[16]&flagAbsent != 0 }

// Archived reports whether the link is archived.
func (l Link) Archived() bool { return l.s[16]&flagArchived != 0 }

// HasLimit reports whether the link has a click limit.
func (l Link) HasLimit() bool { return l.s[16]&flagLimit != 0 }

// ExpiresAt is the link's expiry, zero without one.
func (l Link) ExpiresAt() time.Time {
	if l.s[16]&flagExpires == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(uint64At(l.s, 8)))
}

// Expired reports whether the link is past its expiry at now.
func (l Link) Expired(now time.Time) bool {
	return l.s[16]&flagExpires != 0 && now.UnixNano() >= int64(uint64At(l.s, 8))
}

// ExpiredURL is where an expired link goes; empty for the 410 page.
func (l Link) ExpiredURL() string { return l.field(fieldExpiredURL) }

// PasswordHash is the argon2id hash; empty without a password.
func (l Link) PasswordHash() string { return l.field(fieldPassword) }

// HasPassword reports whether the link asks for a password.
func (l Link) HasPassword() bool { return l.field(fieldPassword) != "" }

// Choose returns the target for the client, first match wins: the iOS or
// Android deep link, the client's country, its device kind, the destination.
func (l Link) Choose(c Client) string {
	switch c.OS {
	case "iOS":
		if t := l.field(fieldIOS); t != "" {
			return t
		}
	case "Android":
		if t := l.field(fieldAndroid); t != "" {
			return t
		}
	}
	geo, device := uint16At(l.s, 17), uint16At(l.s, 19)
	if geo > 0 && c.Country != "" {
		if t, ok := l.target(fieldFixed, geo, c.Country); ok {
			return t
		}
	}
	if device > 0 {
		if t, ok := l.target(fieldFixed+2*geo, device, c.Device); ok {
			return t
		}
	}
	return l.field(fieldDestination)
}

// target returns the value of key among the n targets from field first.
func (l Link) target(first, n int, key string) (string, bool) {
	for i := range n {
		if l.field(first+2*i) == key {
			return l.field(first + 2*i + 1), true
		}
	}
	return "", false
}
