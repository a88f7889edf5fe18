package route

import (
	"sort"
	"strings"
	"time"
	"unsafe"

	"shortlink.dev/shared/link"
)

// Link is a link compiled for the edge, in its compact form: one string,
// one allocation without pointers (the garbage collector never scans it),
// holding a small header and the link's texts, each after its length. The
// domain and the workspace id, which many links share, are references to
// the process's table of names (names.go) rather than texts of their own.
// A cached link of the usual shape is its texts plus about 15 bytes
// (docs/edge.md). An absent link (no such slug) is cached too (Absent).
// The zero Link is no link at all (IsZero); Compile and NewAbsent make the
// others.
//
// Layout of s (integers little-endian, lengths and references uvarints):
//
//	[0:h)     the length of the rest, times 2, plus 1 for an absence (h is
//	          1 to 5 bytes, 2 for most links): Deref reads a Link back
//	          from its first byte's address (Ref)
//	[h:h+4)   CachedUntil, Unix seconds (rounded up: a cached link is
//	          served up to a second past its time to live)
//	[h+4]     flags, and which optional texts follow (optExpiredURL …)
//	[h+5:h+13) ExpiresAt, Unix nanoseconds, only with flagExpires
//	…       the domain, then the workspace id: each a name (see putName)
//	…       slug, id, destination, then the optional texts present, in
//	        opt order: each a length and its bytes
//	…       with flagTargets: the numbers of geo and device targets, then
//	        their keys and values as texts
//
// Its methods read fields out of s as substrings: a redirect reads a link
// without allocating, and the strings it hands on (the click's link id,
// the target) keep the link's one allocation alive, nothing more. The
// fields a redirect reads most (domain, slug, id, destination) come first.
type Link struct{ s string }

const (
	flagArchived = 1 << iota
	flagLimit
	flagExpires
	flagTargets
	// The optional texts, in their order after the destination.
	optExpiredURL
	optPassword
	optIOS
	optAndroid
)

// opts are the optional texts' bits, in order.
var opts = [...]byte{optExpiredURL, optPassword, optIOS, optAndroid}

// headerLen is the length of the header after the length of the rest.
const headerLen = 5

// Compile prepares l for the edge, to be served until until: every target
// gets the UTM parameters, the targets are normalised.
func Compile(l *link.Link, until time.Time) Link {
	utm := utmParams(l.UTM)
	f := fields{domain: l.Domain, workspace: l.WorkspaceID, slug: l.Slug, id: l.ID,
		destination: withParams(l.DestinationURL, utm), until: untilSecond(until)}
	if l.ExpiredURL != nil {
		f.set(optExpiredURL, Normalize(*l.ExpiredURL))
	}
	f.set(optPassword, l.PasswordHash)
	if l.IOSURL != nil {
		f.set(optIOS, withParams(*l.IOSURL, utm))
	}
	if l.AndroidURL != nil {
		f.set(optAndroid, withParams(*l.AndroidURL, utm))
	}
	f.targets, f.geo = appendTargets(nil, l.GeoTargets, utm)
	f.targets, f.device = appendTargets(f.targets, l.DeviceTargets, utm)
	if l.IsArchived {
		f.flags |= flagArchived
	}
	if l.ClickLimit != nil {
		f.flags |= flagLimit
	}
	if l.ExpiresAt != nil {
		f.flags |= flagExpires
		f.expires = l.ExpiresAt.UnixNano()
	}
	return f.build()
}

// NewAbsent returns the cache entry, until until, of a slug that does not exist.
func NewAbsent(domain, slug string, until time.Time) Link {
	f := fields{domain: domain, slug: slug, until: untilSecond(until), absent: true}
	return f.build()
}

// untilSecond is t in Unix seconds, rounded up.
func untilSecond(t time.Time) int64 {
	ns := t.UnixNano()
	sec := ns / 1e9
	if sec*1e9 < ns {
		sec++
	}
	return sec
}

// fields are a link's parts before build lays them out.
type fields struct {
	flags                 byte // with the optional texts' bits
	absent                bool
	until, expires        int64
	domain, workspace     string
	slug, id, destination string
	opt                   [4]string // by bit of opt…, in order
	targets               []string  // keys and values, geo then device
	geo, device           int
}

// set sets the optional text of bit to v, if any.
func (f *fields) set(bit byte, v string) {
	if v == "" {
		return
	}
	f.flags |= bit
	for i, b := range opts {
		if b == bit {
			f.opt[i] = v
		}
	}
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

// build lays the fields out in one string, of one allocation of the exact
// size.
func (f *fields) build() Link {
	if len(f.targets) > 0 {
		f.flags |= flagTargets
	}
	domain, dref := names.ref(f.domain)
	workspace, wref := names.ref(f.workspace)
	size := headerLen + nameSize(f.domain, dref, domain) + nameSize(f.workspace, wref, workspace) +
		textSize(f.slug) + textSize(f.id) + textSize(f.destination)
	if f.flags&flagExpires != 0 {
		size += 8
	}
	for i, v := range f.opt {
		if f.flags&opts[i] != 0 {
			size += textSize(v)
		}
	}
	if f.flags&flagTargets != 0 {
		size += uvarintLen(uint64(f.geo)) + uvarintLen(uint64(f.device))
		for _, v := range f.targets {
			size += textSize(v)
		}
	}
	prefix := uint64(size) << 1
	if f.absent {
		prefix |= 1
	}
	b := putUvarint(make([]byte, 0, uvarintLen(prefix)+size), prefix)
	b = appendUint(b, uint64(f.until))
	b = b[:len(b)-4] // 4 bytes: until the year 2106
	b = append(b, f.flags)
	if f.flags&flagExpires != 0 {
		b = appendUint(b, uint64(f.expires))
	}
	b = putName(b, f.domain, dref, domain)
	b = putName(b, f.workspace, wref, workspace)
	b = putText(putText(putText(b, f.slug), f.id), f.destination)
	for i, v := range f.opt {
		if f.flags&opts[i] != 0 {
			b = putText(b, v)
		}
	}
	if f.flags&flagTargets != 0 {
		b = putUvarint(putUvarint(b, uint64(f.geo)), uint64(f.device))
		for _, v := range f.targets {
			b = putText(b, v)
		}
	}
	// b is never written again: its bytes become the string's.
	return Link{s: unsafe.String(unsafe.SliceData(b), len(b))}
}

// A name is written as a uvarint v: with its low bit set, v>>1 is the
// name's reference in names; else v>>1 is the length of the text that
// follows (a name not in the table: it is full).
func putName(b []byte, s string, ok bool, ref uint32) []byte {
	if ok {
		return putUvarint(b, uint64(ref)<<1|1)
	}
	return append(putUvarint(b, uint64(len(s))<<1), s...)
}

func nameSize(s string, ok bool, ref uint32) int {
	if ok {
		return uvarintLen(uint64(ref)<<1 | 1)
	}
	return uvarintLen(uint64(len(s))<<1) + len(s)
}

func putText(b []byte, s string) []byte { return append(putUvarint(b, uint64(len(s))), s...) }

func textSize(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func putUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendUint appends v's 8 bytes.
func appendUint(b []byte, v uint64) []byte {
	for i := range 8 {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// uint64At reads 8 bytes of s at i (the compiler makes it one load).
func uint64At(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// reader reads a Link's fields in order.
type reader struct {
	s string
	i int
}

// h is where l's header starts, after the length of the rest.
func (l Link) h() int {
	h := 1
	for l.s[h-1] >= 0x80 {
		h++
	}
	return h
}

// flags is the flags byte of l's header.
func (l Link) flags() byte { return l.s[l.h()+4] }

// start returns a reader at l's domain.
func (l Link) start() reader {
	h := l.h()
	if l.s[h+4]&flagExpires != 0 {
		return reader{l.s, h + headerLen + 8}
	}
	return reader{l.s, h + headerLen}
}

// Ref is l as one pointer: the first byte of its one allocation, which
// keeps it alive and from which Deref reads it back. The zero Link's is nil.
func (l Link) Ref() *byte {
	if l.s == "" {
		return nil
	}
	return unsafe.StringData(l.s)
}

// Deref returns the Link whose Ref is p.
func Deref(p *byte) Link {
	if p == nil {
		return Link{}
	}
	// A Link is at least 11 bytes long; its first 1–5 are the length of
	// the rest.
	b := unsafe.Slice(p, 5)
	n, h := int(b[0]&0x7f), 1
	for b[h-1] >= 0x80 {
		n |= int(b[h]&0x7f) << (7 * h)
		h++
	}
	return Link{unsafe.String(p, h+n>>1)}
}

func (r *reader) uvarint() uint64 {
	if b := r.s[r.i]; b < 0x80 { // the usual case: one byte
		r.i++
		return uint64(b)
	}
	var v uint64
	for shift := 0; ; shift += 7 {
		b := r.s[r.i]
		r.i++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
}

func (r *reader) text() string {
	n := int(r.uvarint())
	t := r.s[r.i : r.i+n]
	r.i += n
	return t
}

func (r *reader) name() string {
	v := r.uvarint()
	if v&1 != 0 {
		return names.get(uint32(v >> 1))
	}
	t := r.s[r.i : r.i+int(v>>1)]
	r.i += int(v >> 1)
	return t
}

// slug returns a reader at l's slug.
func (l Link) slug() reader {
	r := l.start()
	r.name()
	r.name()
	return r
}

// optional returns the optional text of bit, "" when l has none.
func (l Link) optional(bit byte) string {
	flags := l.flags()
	if flags&bit == 0 {
		return ""
	}
	r := l.slug()
	r.text()
	r.text()
	r.text()
	for _, b := range opts {
		if b == bit {
			break
		}
		if flags&b != 0 {
			r.text()
		}
	}
	return r.text()
}

// IsZero reports whether l is no link (the zero Link).
func (l Link) IsZero() bool { return l.s == "" }

// Size is the length of l's one allocation, in bytes.
func (l Link) Size() int { return len(l.s) }

// Same reports whether l and o are links (or absences) of one domain and
// slug.
func (l Link) Same(o Link) bool {
	r, q := l.start(), o.start()
	if r.name() != q.name() {
		return false
	}
	r.name()
	q.name()
	return r.text() == q.text()
}

// Is reports whether l is the link (or absence) of domain+slug.
func (l Link) Is(domain string, slug []byte) bool {
	r := l.start()
	if r.name() != domain {
		return false
	}
	r.name()
	return r.text() == string(slug)
}

// until is CachedUntil in Unix seconds.
func (l Link) until() int64 { return int64(uint64At(l.s, l.h()) & (1<<32 - 1)) }

// CachedUntil is when the edge's cache must read the link again.
func (l Link) CachedUntil() time.Time { return time.Unix(l.until(), 0) }

// Fresh reports whether the cached l may still be served at now.
func (l Link) Fresh(now time.Time) bool { return now.UnixNano() < l.until()*1e9 }

// Domain is the link's domain.
func (l Link) Domain() string {
	r := l.start()
	return r.name()
}

// Slug is the link's slug.
func (l Link) Slug() string {
	r := l.slug()
	return r.text()
}

// ID is the link's id; empty when Absent.
func (l Link) ID() string {
	r := l.slug()
	r.text()
	return r.text()
}

// WorkspaceID is the id of the link's workspace.
func (l Link) WorkspaceID() string {
	r := l.start()
	r.name()
	return r.name()
}

// Absent reports whether l records that there is no such link.
func (l Link) Absent() bool { return l.s[0]&1 != 0 }

// Archived reports whether the link is archived.
func (l Link) Archived() bool { return l.flags()&flagArchived != 0 }

// HasLimit reports whether the link has a click limit.
func (l Link) HasLimit() bool { return l.flags()&flagLimit != 0 }

// ExpiresAt is the link's expiry, zero without one.
func (l Link) ExpiresAt() time.Time {
	if l.flags()&flagExpires == 0 {
		return time.Time{}
	}
	return time.Unix(0, l.expires())
}

// Expired reports whether the link is past its expiry at now.
func (l Link) Expired(now time.Time) bool {
	return l.flags()&flagExpires != 0 && now.UnixNano() >= l.expires()
}

func (l Link) expires() int64 { return int64(uint64At(l.s, l.h()+headerLen)) }

// ExpiredURL is where an expired link goes; empty for the 410 page.
func (l Link) ExpiredURL() string { return l.optional(optExpiredURL) }

// PasswordHash is the argon2id hash; empty without a password.
func (l Link) PasswordHash() string { return l.optional(optPassword) }

// HasPassword reports whether the link asks for a password.
func (l Link) HasPassword() bool { return l.flags()&optPassword != 0 }

// Choose returns the target for the client, first match wins: the iOS or
// Android deep link, the client's country, its device kind, the destination.
func (l Link) Choose(c Client) string {
	switch c.OS {
	case "iOS":
		if t := l.optional(optIOS); t != "" {
			return t
		}
	case "Android":
		if t := l.optional(optAndroid); t != "" {
			return t
		}
	}
	r := l.slug()
	r.text()
	r.text()
	destination := r.text()
	flags := l.flags()
	if flags&flagTargets == 0 {
		return destination
	}
	for _, b := range opts {
		if flags&b != 0 {
			r.text()
		}
	}
	geo, device := int(r.uvarint()), int(r.uvarint())
	for range geo {
		if k, v := r.text(), r.text(); c.Country != "" && k == c.Country {
			return v // a country match wins over a device one
		}
	}
	for range device {
		if k, v := r.text(), r.text(); k == c.Device {
			return v
		}
	}
	return destination
}
