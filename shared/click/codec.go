package click

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// RecordVersion is the version of the binary record format AppendRecord writes.
const RecordVersion = 1

// MaxRecordEvents is the most events one record holds: AppendRecord panics
// beyond it and DecodeRecord rejects a record that claims more.
const MaxRecordEvents = 1 << 20

// recordMagic opens every binary record. It is a byte that never starts JSON,
// nor any UTF-8 text: DecodeRecord tells the formats apart by the first byte.
const recordMagic = 0xC1

// minEventBytes is the size of the smallest event of a version 1 record: the
// id, a one-byte time delta, 13 back-references, the flags and the visitor.
const minEventBytes = 16 + 1 + stringFields + 1 + 16

// stringFields is how many string fields a version 1 event has.
const stringFields = 13

// flagBot marks a bot's click in an event's flags byte.
const flagBot = 1 << 0

// AppendRecord appends the binary encoding of events (one record) to dst and
// returns it. It allocates nothing when dst has room.
//
// A record of version 1 is, with uvarint and varint as in encoding/binary
// (varint is zigzag-encoded):
//
//	record = 0xC1, version (1 byte, 1), count (uvarint), count × event
//	event  = ID (16 bytes),
//	         time (varint: Unix microseconds minus the previous event's; the
//	               first event's are absolute),
//	         LinkID, WorkspaceID, Domain, Slug, Target, Country, City, Device,
//	         Browser, OS, Referrer, Trigger, QRID (13 × string),
//	         flags (1 byte: bit 0 Bot; the other bits are 0),
//	         Visitor (16 bytes)
//	string = 0x00: the same as this field of the previous event ("" for the first)
//	       | uvarint(length+1), length bytes
//
// Nothing follows the last event. Times keep microseconds; Event.V is not
// written: each record version implies its Event schema version. The format
// of a version never changes: a new Event field makes a new version, and
// DecodeRecord keeps reading the old ones.
//
// Consecutive events of the same link share most of their strings, so a
// record whose events are grouped by link is the smallest. events must hold
// at most MaxRecordEvents.
func AppendRecord(dst []byte, events []Event) []byte {
	return appendRecord(dst, len(events), func(i int) *Event { return &events[i] })
}

// AppendRecordOf is AppendRecord on events held by pointer: a writer that
// groups the events of a batch need not copy them.
func AppendRecordOf(dst []byte, events []*Event) []byte {
	return appendRecord(dst, len(events), func(i int) *Event { return events[i] })
}

// appendRecord appends the record of the n events that at returns.
func appendRecord(dst []byte, n int, at func(int) *Event) []byte {
	if n > MaxRecordEvents {
		panic(fmt.Sprintf("click: a record of %d events (the most is %d)", n, MaxRecordEvents))
	}
	dst = append(dst, recordMagic, RecordVersion)
	dst = binary.AppendUvarint(dst, uint64(n))
	var zero Event
	p := &zero
	var t0 int64
	for i := range n {
		e := at(i)
		dst = append(dst, e.ID[:]...)
		t := e.Time.UnixMicro()
		dst = binary.AppendVarint(dst, t-t0)
		t0 = t
		dst = appendString(dst, e.LinkID, p.LinkID)
		dst = appendString(dst, e.WorkspaceID, p.WorkspaceID)
		dst = appendString(dst, e.Domain, p.Domain)
		dst = appendString(dst, e.Slug, p.Slug)
		dst = appendString(dst, e.Target, p.Target)
		dst = appendString(dst, e.Country, p.Country)
		dst = appendString(dst, e.City, p.City)
		dst = appendString(dst, e.Device, p.Device)
		dst = appendString(dst, e.Browser, p.Browser)
		dst = appendString(dst, e.OS, p.OS)
		dst = appendString(dst, e.Referrer, p.Referrer)
		dst = appendString(dst, string(e.Trigger), string(p.Trigger))
		dst = appendString(dst, e.QRID, p.QRID)
		var flags byte
		if e.Bot {
			flags |= flagBot
		}
		dst = append(dst, flags)
		dst = append(dst, e.Visitor[:]...)
		p = e
	}
	return dst
}

func appendString(dst []byte, s, prev string) []byte {
	if s == prev {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	return append(dst, s...)
}

// DecodeRecord appends the events of one record to dst. It reads binary records of every
// version it knows, and the legacy JSON encoding of one Event (a record whose first
// non-space byte is '{'). Malformed input is an error, never a panic.
//
// Decoded times are in UTC; Event.V is the schema version the record's
// version implies (Version for version 1). The strings of the events of a
// binary record share one copy of b: keeping one of them keeps that copy, so
// clone (strings.Clone) what is kept long after the events. On error, dst is
// returned with its length as given.
func DecodeRecord(dst []Event, b []byte) ([]Event, error) {
	for _, c := range b {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if c == '{' {
			return decodeJSON(dst, b)
		}
		break
	}
	if len(b) < 2 || b[0] != recordMagic {
		return dst, errors.New("click record: neither a binary record nor a JSON event")
	}
	switch b[1] {
	case 1:
		return decodeV1(dst, b[2:])
	default:
		return dst, fmt.Errorf("click record: unknown version %d (this program reads up to %d)", b[1], RecordVersion)
	}
}

func decodeJSON(dst []Event, b []byte) ([]Event, error) {
	// The ids are read here, not by EventID's and Visitor's UnmarshalText,
	// which take hex longer than an id for a panic.
	type fields Event
	var e Event
	j := struct {
		*fields
		ID      string `json:"id"`
		Visitor string `json:"visitor"`
	}{fields: (*fields)(&e)}
	if err := json.Unmarshal(b, &j); err != nil {
		return dst, fmt.Errorf("click record: legacy JSON event: %w", err)
	}
	if err := decodeHex(e.ID[:], j.ID); err != nil {
		return dst, fmt.Errorf("click record: legacy JSON event: id: %w", err)
	}
	if err := decodeHex(e.Visitor[:], j.Visitor); err != nil {
		return dst, fmt.Errorf("click record: legacy JSON event: visitor: %w", err)
	}
	e.Time = e.Time.UTC()
	return append(dst, e), nil
}

// decodeHex decodes s into dst, which it must fit.
func decodeHex(dst []byte, s string) error {
	if hex.DecodedLen(len(s)) > len(dst) {
		return fmt.Errorf("%d hex digits for %d bytes", len(s), len(dst))
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}

var errTruncated = errors.New("click record: truncated or malformed")

// decoder reads a version 1 record's events: b are its bytes after the
// count, s the same bytes as the one string every decoded string is part of.
type decoder struct {
	b   []byte
	s   string
	pos int
	err error
}

func decodeV1(dst []Event, b []byte) ([]Event, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return dst, errTruncated
	}
	b = b[n:]
	if count > MaxRecordEvents {
		return dst, fmt.Errorf("click record: %d events (the most is %d)", count, MaxRecordEvents)
	}
	if count > uint64(len(b)/minEventBytes) {
		return dst, fmt.Errorf("click record: %d events cannot fit in %d bytes", count, len(b))
	}
	start := len(dst)
	dst = slices.Grow(dst, int(count))
	d := decoder{b: b, s: string(b)}
	var zero Event
	p := &zero
	var t int64
	for range count {
		dst = dst[:len(dst)+1]
		e := &dst[len(dst)-1]
		*e = Event{V: Version}
		d.fixed(e.ID[:])
		t += d.varint()
		e.Time = time.UnixMicro(t).UTC()
		e.LinkID = d.str(p.LinkID)
		e.WorkspaceID = d.str(p.WorkspaceID)
		e.Domain = d.str(p.Domain)
		e.Slug = d.str(p.Slug)
		e.Target = d.str(p.Target)
		e.Country = d.str(p.Country)
		e.City = d.str(p.City)
		e.Device = d.str(p.Device)
		e.Browser = d.str(p.Browser)
		e.OS = d.str(p.OS)
		e.Referrer = d.str(p.Referrer)
		e.Trigger = Trigger(d.str(string(p.Trigger)))
		e.QRID = d.str(p.QRID)
		flags := d.byte()
		d.fixed(e.Visitor[:])
		if d.err == nil && flags&^flagBot != 0 {
			d.err = fmt.Errorf("click record: unknown flags %#x", flags)
		}
		if d.err != nil {
			// Forget the strings of the events decoded so far, and their copy of b.
			clear(dst[start:])
			return dst[:start], d.err
		}
		e.Bot = flags&flagBot != 0
		p = e
	}
	if d.pos != len(b) {
		clear(dst[start:])
		return dst[:start], fmt.Errorf("click record: %d bytes after the last event", len(b)-d.pos)
	}
	return dst, nil
}

func (d *decoder) fixed(dst []byte) {
	if d.err != nil {
		return
	}
	if len(d.b)-d.pos < len(dst) {
		d.err = errTruncated
		return
	}
	d.pos += copy(dst, d.b[d.pos:])
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if d.pos >= len(d.b) {
		d.err = errTruncated
		return 0
	}
	d.pos++
	return d.b[d.pos-1]
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.pos:])
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.pos += n
	return v
}

// str reads a string field; prev is the previous event's.
func (d *decoder) str(prev string) string {
	if d.err != nil {
		return ""
	}
	if d.pos >= len(d.b) {
		d.err = errTruncated
		return ""
	}
	// Most fields are back-references or short: one byte says so.
	l, n := uint64(d.b[d.pos]), 1
	if l == 0 {
		d.pos++
		return prev
	}
	if l >= 0x80 {
		if l, n = binary.Uvarint(d.b[d.pos:]); n <= 0 {
			d.err = errTruncated
			return ""
		}
	}
	d.pos += n
	if l-1 > uint64(len(d.b)-d.pos) {
		d.err = errTruncated
		return ""
	}
	s := d.s[d.pos : d.pos+int(l-1)]
	d.pos += int(l - 1)
	return s
}
