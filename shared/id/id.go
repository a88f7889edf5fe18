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

// batchCount is how many base62 characters end an id of Batch: a count.
const batchCount = 4

// Batch returns a function that makes ids of prefix for a batch of rows
// written together (an import's batch of links): each is as long as New's,
// its first 16 characters drawn at random once for 62^4 ids and its last 4
// a count, so that the batch's rows sit side by side in an index on the id
// (a few B-tree pages written for a batch, not one each: with random ids
// every row of a large batch dirties a page of its own) while the ids stay
// unique (95 random bits each run of 62^4) and opaque to their users.
func Batch(prefix string) func() string {
	var base string
	n := 0
	return func() string {
		if n%(62*62*62*62) == 0 {
			base = Base62(20 - batchCount)
		}
		var c [batchCount]byte
		for i, v := batchCount-1, n%(62*62*62*62); i >= 0; i, v = i-1, v/62 {
			c[i] = base62[v%62]
		}
		n++
		return prefix + base + string(c[:])
	}
}
