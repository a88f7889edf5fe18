package visitor

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/oschwald/geoip2-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2"

	"shortlink.dev/edge/internal/memo"
)

// Place is where an IP address is.
type Place struct {
	Country string // ISO 3166-1 alpha-2, "" when unknown
	City    string
}

// Geo looks IP addresses up in a MaxMind-format database: a MaxMind GeoIP2 or
// GeoLite2 file (country and city) through geoip2-golang, or any other
// MaxMind-format country file (such as the CC-licensed ip-location-db ones,
// whose records are {"country_code": "US"}) through maxminddb-golang. The file's
// metadata picks the reader. A nil *Geo knows no place.
type Geo struct {
	maxmind *geoip2.Reader
	generic *maxminddb.Reader
	cache   *memo.Cache[placeOf]
}

// placeOf is a cached answer: the key is a hash of the IP, so the entry
// keeps the IP to tell a collision from a hit.
type placeOf struct {
	ip    netip.Addr
	place Place
}

// OpenGeo opens the database at path.
func OpenGeo(path string) (*Geo, error) {
	db, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open GeoIP database %s: %w", path, err)
	}
	g := &Geo{}
	if t := db.Metadata.DatabaseType; strings.HasPrefix(t, "GeoIP2-") || strings.HasPrefix(t, "GeoLite2-") || strings.HasPrefix(t, "DBIP-") {
		db.Close()
		if g.maxmind, err = geoip2.Open(path); err != nil {
			return nil, fmt.Errorf("cannot open GeoIP database %s: %w", path, err)
		}
	} else {
		g.generic = db
	}
	g.cache = memo.New[placeOf](1 << 16)
	return g, nil
}

// Close closes the database.
func (g *Geo) Close() {
	if g == nil {
		return
	}
	g.cache.Clear()
	if g.maxmind != nil {
		g.maxmind.Close()
	}
	if g.generic != nil {
		g.generic.Close()
	}
}

// Lookup returns the place of ip ("" fields when unknown).
func (g *Geo) Lookup(ip netip.Addr) Place {
	if g == nil || !ip.IsValid() {
		return Place{}
	}
	a := ip.As16()
	key := xxhash.Sum64(a[:])
	if c, ok := g.cache.Get(key); ok && c.ip == ip {
		return c.place
	}
	var p Place
	if g.maxmind != nil {
		if rec, err := g.maxmind.City(ip); err == nil {
			p.Country, p.City = rec.Country.ISOCode, rec.City.Names.English
		}
	} else {
		var rec struct {
			CountryCode string `maxminddb:"country_code"`
			Country     struct {
				ISOCode string `maxminddb:"iso_code"`
			} `maxminddb:"country"`
		}
		if err := g.generic.Lookup(ip).Decode(&rec); err == nil {
			p.Country = rec.CountryCode
			if p.Country == "" {
				p.Country = rec.Country.ISOCode
			}
		}
	}
	p.Country = strings.ToUpper(p.Country)
	g.cache.Put(key, placeOf{ip, p}) // the database does not change while it is open
	return p
}
