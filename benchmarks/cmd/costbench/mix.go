package main

import (
	"strconv"

	"github.com/valyala/fasthttp"
)

// The paced runs' mix of clients, as wrk's mix.lua (benchmarks/internal/wrk):
// browsers on desktop, mobile and tablet and a bot, common referrers, a
// tail of 5,000 others and a quarter none, a client address of its own.
var (
	mixAgents = []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
		"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36",
		"Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	}
	mixReferrers = []string{
		"", "", "", "", "", "", "https://www.google.com/", "https://www.google.com/", "https://www.google.com/",
		"https://t.co/", "https://t.co/", "https://www.facebook.com/", "https://www.facebook.com/",
		"https://www.linkedin.com/", "https://www.reddit.com/", "https://news.ycombinator.com/",
		"https://www.instagram.com/", "https://www.youtube.com/", "https://www.bing.com/",
	}
)

// mixIndex is the k-th pseudo-random draw for request i (SplitMix64).
func mixIndex(i int64, k uint64) uint64 {
	z := uint64(i)*0x9e3779b97f4a7c15 + k*0xbf58476d1ce4e5b9 + 0x94d049bb133111eb
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// mixHeader sets request i's User-Agent, Referer and X-Forwarded-For.
func mixHeader(i int64, h *fasthttp.RequestHeader) {
	h.SetUserAgent(mixAgents[mixIndex(i, 1)%uint64(len(mixAgents))])
	if r := mixIndex(i, 2) % uint64(len(mixReferrers)+4); r >= uint64(len(mixReferrers)) {
		h.Set("Referer", "https://site"+strconv.FormatUint(mixIndex(i, 3)%5000+1, 10)+".example/page")
	} else if mixReferrers[r] != "" {
		h.Set("Referer", mixReferrers[r])
	}
	a := mixIndex(i, 4)
	h.Set("X-Forwarded-For", strconv.FormatUint(a%223+1, 10)+"."+strconv.FormatUint(a>>8&255, 10)+"."+
		strconv.FormatUint(a>>16&255, 10)+"."+strconv.FormatUint(a>>24%254+1, 10))
}
