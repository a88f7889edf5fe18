// Package click is the click event: what the edge records of one visit to a
// short link, and what the analytics plane stores and counts.
package click

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"
)

// Version is the schema version of Event. A consumer reads every version it
// knows; fields are only ever added.
const Version = 1

// Trigger says how a visitor reached a link.
type Trigger string

// The triggers.
const (
	TriggerLink Trigger = "link"
	TriggerQR   Trigger = "qr"
)

// Device kinds.
const (
	DeviceDesktop = "desktop"
	DeviceMobile  = "mobile"
	DeviceTablet  = "tablet"
)

// Event is one click. It holds no raw IP address: Visitor is a hash of the IP
// and user agent with a salt that changes every day, enough to count distinct
// visitors per day and useless to find anyone.
type Event struct {
	V           int       `json:"v"`
	ID          EventID   `json:"id"`
	Time        time.Time `json:"time"`
	LinkID      string    `json:"linkId"`
	WorkspaceID string    `json:"workspaceId"`
	Domain      string    `json:"domain"`
	Slug        string    `json:"slug"`
	// Target is the URL the visitor was sent to.
	Target   string  `json:"target"`
	Country  string  `json:"country"` // ISO 3166-1 alpha-2, "" when unknown
	City     string  `json:"city"`
	Device   string  `json:"device"` // desktop, mobile, tablet
	Browser  string  `json:"browser"`
	OS       string  `json:"os"`
	Referrer string  `json:"referrer"` // the referrer's host name, "" for none
	Trigger  Trigger `json:"trigger"`
	QRID     string  `json:"qrId,omitempty"`
	Bot      bool    `json:"bot"`
	Visitor  Visitor `json:"visitor"`
}

// EventID identifies an event; consumers drop a second copy of an id.
type EventID [16]byte

// idPrefix is this process's random half of every event id it makes.
var idPrefix = func() (p [8]byte) {
	_, _ = rand.Read(p[:]) // crypto/rand.Read never fails (Go 1.24+)
	return p
}()

var idSeq atomic.Uint64

// NewEventID returns an event id unique across processes: 8 random bytes drawn
// once per process and an 8-byte sequence number. It costs an atomic add, not
// a read of the random source.
func NewEventID() EventID {
	var id EventID
	copy(id[:8], idPrefix[:])
	binary.BigEndian.PutUint64(id[8:], idSeq.Add(1))
	return id
}

// String returns the id in hex.
func (id EventID) String() string { return hex.EncodeToString(id[:]) }

// MarshalText implements encoding.TextMarshaler.
func (id EventID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: exactly 32 hex digits.
func (id *EventID) UnmarshalText(b []byte) error { return decodeHex16((*[16]byte)(id), b, "event id") }

// Visitor is the daily-salted hash of a visitor's IP and user agent.
type Visitor [16]byte

// String returns the hash in hex.
func (v Visitor) String() string { return hex.EncodeToString(v[:]) }

// MarshalText implements encoding.TextMarshaler.
func (v Visitor) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: exactly 32 hex digits.
func (v *Visitor) UnmarshalText(b []byte) error { return decodeHex16((*[16]byte)(v), b, "visitor") }

// decodeHex16 decodes 32 hex digits into dst; any other length is an error
// (hex.Decode would write past 16 bytes).
func decodeHex16(dst *[16]byte, b []byte, what string) error {
	if len(b) != 2*len(dst) {
		return fmt.Errorf("click: %s must be %d hex digits, not %d characters", what, 2*len(dst), len(b))
	}
	_, err := hex.Decode(dst[:], b)
	return err
}
