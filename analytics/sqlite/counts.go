package sqlite

import (
	"encoding/binary"
	"errors"
	"slices"
)

// keyCounts is a dimension's clicks per key on one day, as click_rollup's
// counts column stores them: for each key, in key order, uvarint(len(key)),
// the key's bytes and uvarint(clicks).
type keyCounts map[string]int64

// decodeCounts adds the encoded counts in b to into.
func decodeCounts(into keyCounts, b []byte) error {
	return eachCount(b, func(key []byte, n int64) {
		into[string(key)] += n // no allocation when the key is there already
	})
}

// eachCount calls fn with each key and count of the encoded counts in b;
// key is b's bytes, valid during the call only.
func eachCount(b []byte, fn func(key []byte, n int64)) error {
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return errors.New("rollup counts: truncated key")
		}
		key := b[w : w+int(n)]
		b = b[w+int(n):]
		c, w := binary.Uvarint(b)
		if w <= 0 {
			return errors.New("rollup counts: truncated count")
		}
		b = b[w:]
		fn(key, int64(c))
	}
	return nil
}

// nextCount decodes the first key and count of the encoded counts b, and
// returns them with the rest of b; key is b's bytes.
func nextCount(b []byte) (key []byte, n int64, rest []byte, err error) {
	l, w := binary.Uvarint(b)
	if w <= 0 || l > uint64(len(b)-w) {
		return nil, 0, nil, errors.New("rollup counts: truncated key")
	}
	key = b[w : w+int(l)]
	b = b[w+int(l):]
	c, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, 0, nil, errors.New("rollup counts: truncated count")
	}
	return key, int64(c), b[w:], nil
}

// encode returns the stored form, keys in order.
func (k keyCounts) encode() []byte {
	keys := make([]string, 0, len(k))
	size := 0
	for key := range k {
		keys = append(keys, key)
		size += len(key) + 2*binary.MaxVarintLen64
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	for _, key := range keys {
		b = binary.AppendUvarint(b, uint64(len(key)))
		b = append(b, key...)
		b = binary.AppendUvarint(b, uint64(k[key]))
	}
	return b
}
