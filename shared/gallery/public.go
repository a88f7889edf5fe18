package gallery

// Public is a published gallery as anyone may see it: what the edge renders
// at /bio/{slug} and what GET /public/galleries/:domain/:slug answers (as
// api.PublicGallery, by convert.PublicGallery). It holds no ids, workspace,
// publication state or times (CONTRACT §8), and its CustomCSS is sanitised
// (SanitizeCSS).
type Public struct {
	Slug        string
	Domain      string
	URL         string
	Title       *string
	Bio         *string
	AvatarURL   *string
	Theme       Theme
	CustomCSS   *string
	SocialLinks []SocialLink
	Items       []PublicItem
}

// PublicItem is an item of the public view. A link item's URL is its short
// link's address, so that a visit goes through the edge and is counted.
type PublicItem struct {
	Type         ItemType
	Title        *string
	URL          *string
	IconName     *string
	ThumbnailURL *string
	EmbedType    *string
	EmbedData    map[string]string
}

// PublicView returns the public view of g. pageURL is the page's address and
// shortURL makes a link item's short link address from its domain and slug.
func PublicView(g *Gallery, pageURL string, shortURL func(domain, slug string) string) *Public {
	p := &Public{
		Slug: g.Slug, Domain: g.Domain, URL: pageURL, Title: g.Title, Bio: g.Bio, AvatarURL: g.AvatarURL,
		Theme: g.Theme, CustomCSS: g.CustomCSS, SocialLinks: g.SocialLinks, Items: make([]PublicItem, 0, len(g.Items)),
	}
	if g.CustomCSS != nil {
		// Sanitised here too, so that no renderer of the public JSON can be
		// led to load or run anything by it.
		css := SanitizeCSS(*g.CustomCSS)
		p.CustomCSS = &css
	}
	if p.SocialLinks == nil {
		p.SocialLinks = []SocialLink{}
	}
	for _, it := range g.Items {
		if it.Type == ItemLink && it.LinkArchived {
			continue // its short link no longer redirects
		}
		pi := PublicItem{
			Type: it.Type, Title: it.Title, URL: it.URL, IconName: it.IconName,
			ThumbnailURL: it.ThumbnailURL, EmbedType: it.EmbedType, EmbedData: it.EmbedData,
		}
		if it.Type == ItemLink && it.LinkSlug != "" {
			u := shortURL(it.LinkDomain, it.LinkSlug)
			pi.URL = &u
		}
		p.Items = append(p.Items, pi)
	}
	return p
}

// PageURL returns the public address of a gallery: {scheme}://{domain}/bio/{slug}.
func PageURL(scheme, domain, slug string) string {
	return scheme + "://" + domain + "/bio/" + slug
}
