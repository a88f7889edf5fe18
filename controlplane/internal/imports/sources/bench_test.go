package sources

import (
	"io"
	"testing"
)

func BenchmarkSourceYOURLS(b *testing.B) {
	r := &rowsReader{n: b.N + 1, row: func(i int) string {
		if i == 0 {
			return "keyword,url,title,timestamp,ip,clicks\n"
		}
		return "k" + itoa(int64(i)) + ",https://example.com/" + itoa(int64(i)) + ",t,2020-01-01 00:00:00,::1,1\n"
	}}
	rd, err := NewReader(YOURLS, r, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for {
		if _, err := rd.Next(); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
	}
}
