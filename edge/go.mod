module shortlink.dev/edge

go 1.26.0

require (
	github.com/alexedwards/argon2id v1.0.0
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/dchest/siphash v1.2.3
	github.com/dgraph-io/ristretto/v2 v2.4.2
	github.com/maxmind/mmdbwriter v1.2.0
	github.com/medama-io/go-useragent v1.0.1
	github.com/oschwald/geoip2-golang/v2 v2.5.0
	github.com/oschwald/maxminddb-golang/v2 v2.8.0
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/valyala/fasthttp v1.74.0
	golang.org/x/sync v0.24.0
	shortlink.dev/shared v0.0.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/boyter/go-string v1.0.5 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/molecule-man/go-brrr v1.0.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nlnwa/whatwg-url v0.6.2 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go4.org/netipx v0.0.0-20231129151722-fdeea329fbba // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace shortlink.dev/shared => ../shared
