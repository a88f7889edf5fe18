package visitor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/click"
)

// Hasher makes the visitor hash: SHA-256 over a salt of the day, the IP and a
// hash of the user agent, cut to 16 bytes. The day's salt is an HMAC of the date
// under the deployment's secret, so every edge computes the same hash on the
// same day, and yesterday's hashes cannot be matched to today's.
type Hasher struct {
	secret []byte
	salt   atomic.Pointer[daySalt]
}

type daySalt struct {
	day  int64 // days since the epoch
	salt [32]byte
}

// NewHasher returns a hasher keyed with the deployment's secret.
func NewHasher(secret []byte) *Hasher {
	return &Hasher{secret: append([]byte(nil), secret...)}
}

// Visitor returns the visitor hash of an IP and a user-agent hash at now.
func (h *Hasher) Visitor(now time.Time, ip netip.Addr, uaHash uint64) click.Visitor {
	day := now.Unix() / 86400
	s := h.salt.Load()
	if s == nil || s.day != day {
		s = &daySalt{day: day}
		m := hmac.New(sha256.New, h.secret)
		m.Write([]byte(now.UTC().Format("2006-01-02")))
		copy(s.salt[:], m.Sum(nil))
		h.salt.Store(s)
	}
	var buf [32 + 16 + 8]byte
	copy(buf[:32], s.salt[:])
	a := ip.As16()
	copy(buf[32:48], a[:])
	binary.LittleEndian.PutUint64(buf[48:], uaHash)
	sum := sha256.Sum256(buf[:])
	var v click.Visitor
	copy(v[:], sum[:16])
	return v
}
