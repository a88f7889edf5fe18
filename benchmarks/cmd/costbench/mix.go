package main

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"shortlink.dev/benchmarks/internal/wrk"
)

// mixIndex is the k-th pseudo-random draw for request i (SplitMix64).
func mixIndex(i int64, k uint64) uint64 {
	z := uint64(i)*0x9e3779b97f4a7c15 + k*0xbf58476d1ce4e5b9 + 0x94d049bb133111eb
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// mixHeader sets request i's User-Agent, Referer and X-Forwarded-For: the
// mix of clients of wrk's mix.lua (benchmarks/internal/wrk), drawn from the
// same lists, with a client address of its own.
func mixHeader(i int64, h *fasthttp.RequestHeader) {
	agents, referrers := wrk.MixAgents, wrk.MixReferrers
	h.SetUserAgent(agents[mixIndex(i, 1)%uint64(len(agents))])
	if r := mixIndex(i, 2) % uint64(len(referrers)+4); r >= uint64(len(referrers)) {
		h.Set("Referer", "https://site"+strconv.FormatUint(mixIndex(i, 3)%5000+1, 10)+".example/page")
	} else if referrers[r] != "" {
		h.Set("Referer", referrers[r])
	}
	a := mixIndex(i, 4)
	h.Set("X-Forwarded-For", strconv.FormatUint(a%223+1, 10)+"."+strconv.FormatUint(a>>8&255, 10)+"."+
		strconv.FormatUint(a>>16&255, 10)+"."+strconv.FormatUint(a>>24%254+1, 10))
}
