package links

// The data of the link.updated and link.deleted events is the link as the
// API shows it (convert.Link); link.created carries less.

// createdData is the data of the link.created event (spec §6).
type createdData struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Domain         string `json:"domain"`
	DestinationURL string `json:"destinationUrl"`
	ShortURL       string `json:"shortUrl"`
	CreatedBy      string `json:"createdBy"`
}
