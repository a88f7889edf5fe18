// Package id makes the platform's opaque identifiers, slugs and API key values
// from a cryptographic random source.
package id

import (
	"crypto/rand"
)

// Prefixes of the resource ids (CONTRACT §2).
const (
	Link     = "lnk_"
	QR       = "qr_"
	Gallery  = "gal_"
	Item     = "itm_"
	Webhook  = "wh_"
	Delivery = "dlv_"
	Domain   = "dom_"
	Key      = "key_"
	Message  = "msg_"
	Audit    = "aud_"
	User     = "usr_"
	Invite   = "inv_"
	Import   = "imp_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Base62 returns n random base62 characters, uniformly distributed: random
// bytes of 248 and above (4×62) are drawn again, so that byte % 62 has no bias.
func Base62(n int) string {
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		_, _ = rand.Read(buf[:]) // crypto/rand never fails on supported platforms (Go 1.24+)
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

// New returns a resource id: the prefix followed by 20 random base62 characters.
func New(prefix string) string {
	return prefix + Base62(20)
}

// Slug returns a generated slug: 7 random base62 characters (CONTRACT §4).
func Slug() string {
	return Base62(7)
}

// APIKey returns a new API key value: "sl_" followed by 40 random base62 characters.
func APIKey() string {
	return "sl_" + Base62(40)
}
