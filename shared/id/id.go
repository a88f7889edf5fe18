// Package id makes the platform's opaque identifiers, slugs and API key values
// from a cryptographic random source.
package id

import (
	"crypto/rand"
	"math/big"
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
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var max62 = big.NewInt(62)

// Base62 returns n random base62 characters.
func Base62(n int) string {
	b := make([]byte, n)
	for i := range b {
		v, err := rand.Int(rand.Reader, max62)
		if err != nil {
			// crypto/rand never fails on supported platforms (Go 1.24+).
			panic("id: crypto/rand failed: " + err.Error())
		}
		b[i] = base62[v.Int64()]
	}
	return string(b)
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
