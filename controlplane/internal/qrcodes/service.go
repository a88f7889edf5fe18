package qrcodes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/qrcode"
	"shortlink.dev/shared/workspace"
)

// MaxNameLen bounds a saved code's name.
const MaxNameLen = 200

// The image formats.
const (
	FormatSVG = "svg"
	FormatPNG = "png"
)

// Style is the look of a code, as the API takes it; absent or null fields
// keep the value they have (the defaults on create).
type Style struct {
	Size            patch.Field[int]
	ForegroundColor patch.Field[string]
	BackgroundColor patch.Field[string]
	CornerRadius    patch.Field[int]
	ErrorCorrection patch.Field[string]
	// Logo is "default", an image's data URL, or "" or null for none.
	Logo patch.Field[string]
}

// apply sets the style's present fields on o.
func (st Style) apply(o *Options) {
	if st.Size.HasValue() {
		o.Size = st.Size.V
	}
	if st.ForegroundColor.HasValue() {
		o.ForegroundColor = st.ForegroundColor.V
	}
	if st.BackgroundColor.HasValue() {
		o.BackgroundColor = st.BackgroundColor.V
	}
	if st.CornerRadius.HasValue() {
		o.CornerRadius = st.CornerRadius.V
	}
	if st.ErrorCorrection.HasValue() {
		o.ErrorCorrection = st.ErrorCorrection.V
	}
	switch {
	case st.Logo.HasValue():
		o.Logo = st.Logo.V
	case st.Logo.Null:
		o.Logo = ""
	}
}

// GenerateInput is the body of POST /qr/generate (spec §2.4).
type GenerateInput struct {
	URL             patch.Field[string] `json:"url"`
	Size            patch.Field[int]    `json:"size"`
	ForegroundColor patch.Field[string] `json:"foregroundColor"`
	BackgroundColor patch.Field[string] `json:"backgroundColor"`
	CornerRadius    patch.Field[int]    `json:"cornerRadius"`
	ErrorCorrection patch.Field[string] `json:"errorCorrection"`
	Logo            patch.Field[string] `json:"logo"`
	Format          patch.Field[string] `json:"format"`
}

func (in *GenerateInput) style() Style {
	return Style{in.Size, in.ForegroundColor, in.BackgroundColor, in.CornerRadius, in.ErrorCorrection, in.Logo}
}

// Input is the body of POST /qr and PATCH /qr/:id (CONTRACT §7).
type Input struct {
	Name            patch.Field[string] `json:"name"`
	URL             patch.Field[string] `json:"url"`
	LinkID          patch.Field[string] `json:"linkId"`
	Size            patch.Field[int]    `json:"size"`
	ForegroundColor patch.Field[string] `json:"foregroundColor"`
	BackgroundColor patch.Field[string] `json:"backgroundColor"`
	CornerRadius    patch.Field[int]    `json:"cornerRadius"`
	ErrorCorrection patch.Field[string] `json:"errorCorrection"`
	Logo            patch.Field[string] `json:"logo"`
}

func (in *Input) style() Style {
	return Style{in.Size, in.ForegroundColor, in.BackgroundColor, in.CornerRadius, in.ErrorCorrection, in.Logo}
}

// Image is a rendered code.
type Image struct {
	Options Options
	Format  string
	// SVG is always set; PNG only for the png format.
	SVG, PNG []byte
}

// Store is what the service needs of storage.
type Store interface {
	qrcode.Store
	GetLink(ctx context.Context, workspaceID, id string) (*link.Link, error)
}

// Service generates QR images and keeps saved codes.
type Service struct {
	Store  Store
	Config *config.Config
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a QR service.
func New(st Store, cfg *config.Config) *Service {
	return &Service{Store: st, Config: cfg, Now: time.Now}
}

// Generate renders a code from a generate request.
func (s *Service) Generate(in GenerateInput) (*Image, error) {
	var o Options
	o.Defaults()
	if in.URL.HasValue() {
		o.URL = in.URL.V
	}
	in.style().apply(&o)
	format := FormatSVG
	var fe fault.FieldErrors
	if in.Format.HasValue() {
		format = in.Format.V
		if format != FormatSVG && format != FormatPNG {
			fe.Add(fault.Validation, "format", "must be svg or png")
		}
	}
	if why := checkTarget(o.URL); why != "" {
		fe.Add(fault.Validation, "url", why)
	}
	return render(o, format, &fe)
}

// render checks o (adding to fe's errors) and draws it in the format. A
// logo forces error correction H; an uploaded one is kept as NormalizeLogo
// makes it.
func render(o Options, format string, fe *fault.FieldErrors) (*Image, error) {
	o.logoLevel()
	if err := o.Check(); err != nil {
		if e, ok := fault.As(err); ok {
			for _, f := range sortedFields(e.Fields) {
				fe.Add(e.Code, f, e.Fields[f])
			}
		} else {
			return nil, err
		}
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	o.ForegroundColor, _ = NormalizeColor(o.ForegroundColor)
	o.BackgroundColor, _ = NormalizeColor(o.BackgroundColor)
	o.Logo, _ = NormalizeLogo(o.Logo)
	img := &Image{Options: o, Format: format}
	var err error
	if img.SVG, err = SVG(o); err != nil {
		return nil, fmt.Errorf("render QR SVG: %w", err)
	}
	if format == FormatPNG {
		if img.PNG, err = PNG(o); err != nil {
			return nil, fmt.Errorf("render QR PNG: %w", err)
		}
	}
	return img, nil
}

// checkTarget says why a url cannot be encoded, or "". Any absolute URL
// with a scheme is fine (https:, mailto:, tel:, an app's own), except the
// schemes that run code or read files.
func checkTarget(u string) string {
	if u == "" {
		return "is required"
	}
	return link.CheckAppURL(u)
}

// Create validates in and stores a new code of the workspace.
func (s *Service) Create(ctx context.Context, ws *workspace.Workspace, in Input) (*qrcode.Code, error) {
	now := s.now()
	c := &qrcode.Code{ID: id.New(id.QR), WorkspaceID: ws.ID, CreatedAt: now, UpdatedAt: now}
	if err := s.apply(ctx, c, &in, true); err != nil {
		return nil, err
	}
	actx, err := audited(ctx, "qr.created", nil, c)
	if err != nil {
		return nil, err
	}
	if err := s.Store.CreateQRCode(actx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Get returns the workspace's code.
func (s *Service) Get(ctx context.Context, ws *workspace.Workspace, codeID string) (*qrcode.Code, error) {
	return s.Store.GetQRCode(ctx, ws.ID, codeID)
}

// Update applies in to the workspace's code.
func (s *Service) Update(ctx context.Context, ws *workspace.Workspace, codeID string, in Input) (*qrcode.Code, error) {
	c, err := s.Store.GetQRCode(ctx, ws.ID, codeID)
	if err != nil {
		return nil, err
	}
	before := *c
	if err := s.apply(ctx, c, &in, false); err != nil {
		return nil, err
	}
	c.UpdatedAt = s.now()
	actx, err := audited(ctx, "qr.updated", &before, c)
	if err != nil {
		return nil, err
	}
	if err := s.Store.UpdateQRCode(actx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Delete removes the workspace's code.
func (s *Service) Delete(ctx context.Context, ws *workspace.Workspace, codeID string) error {
	c, err := s.Store.GetQRCode(ctx, ws.ID, codeID)
	if err != nil {
		return err
	}
	if ctx, err = audited(ctx, "qr.deleted", c, nil); err != nil {
		return err
	}
	return s.Store.DeleteQRCode(ctx, ws.ID, codeID)
}

// audited returns ctx carrying the audit entry of a change of a code from
// old to new (nil for none).
func audited(ctx context.Context, action string, old, new *qrcode.Code) (context.Context, error) {
	c := new
	if c == nil {
		c = old
	}
	e, err := audit.Of(c.WorkspaceID, action, "qr", c.ID, qrView(old), qrView(new))
	if err != nil {
		return nil, err
	}
	return audit.With(ctx, e), nil
}

// qrView is what the audit log compares of a code. An uploaded logo (a data
// URL of up to 256 KiB) is named by a digest of its bytes, not copied.
func qrView(c *qrcode.Code) map[string]any {
	if c == nil {
		return nil
	}
	logo := c.Logo
	if strings.HasPrefix(logo, "data:") {
		sum := sha256.Sum256([]byte(logo))
		logo = "uploaded image sha256:" + hex.EncodeToString(sum[:8])
	}
	return map[string]any{"name": c.Name, "url": c.URL, "linkId": c.LinkID, "size": c.Size,
		"foregroundColor": c.ForegroundColor, "backgroundColor": c.BackgroundColor,
		"cornerRadius": c.CornerRadius, "errorCorrection": c.ErrorCorrection, "logo": logo}
}

// List returns a page of the workspace's codes and their total.
func (s *Service) List(ctx context.Context, f qrcode.Filter) ([]*qrcode.Code, int, error) {
	return s.Store.ListQRCodes(ctx, f)
}

// URL returns what the code encodes: its url, or for a dynamic code its
// link's short URL with ?qr={id}, so that the edge counts the scan.
func (s *Service) URL(c *qrcode.Code) string {
	if c.LinkID == nil {
		return c.URL
	}
	return s.Config.ShortURL(c.LinkDomain, c.LinkSlug) + "?qr=" + c.ID
}

// Render draws a saved code in the format (svg or png).
func (s *Service) Render(c *qrcode.Code, format string) (*Image, error) {
	var fe fault.FieldErrors
	if format != FormatSVG && format != FormatPNG {
		fe.Add(fault.Validation, "format", "must be svg or png")
	}
	return render(s.options(c), format, &fe)
}

func (s *Service) options(c *qrcode.Code) Options {
	return Options{URL: s.URL(c), Size: c.Size, ForegroundColor: c.ForegroundColor, BackgroundColor: c.BackgroundColor,
		CornerRadius: c.CornerRadius, ErrorCorrection: c.ErrorCorrection, Logo: c.Logo}
}

// apply validates every field present in in and sets it on c.
func (s *Service) apply(ctx context.Context, c *qrcode.Code, in *Input, creating bool) error {
	var fe fault.FieldErrors
	switch {
	case in.Name.HasValue():
		n := utf8.RuneCountInString(in.Name.V)
		if n == 0 || n > MaxNameLen || !utf8.ValidString(in.Name.V) || patch.HasControl(in.Name.V) {
			fe.Add(fault.Validation, "name", fmt.Sprintf("must be 1 to %d characters", MaxNameLen))
		}
		c.Name = in.Name.V
	case in.Name.Null || creating:
		fe.Add(fault.Validation, "name", "is required")
	}

	switch {
	case in.LinkID.HasValue():
		c.URL = ""
		if in.URL.HasValue() {
			fe.Add(fault.Validation, "url", "must not be given with linkId: a dynamic code encodes its link's short URL")
			break
		}
		l, err := s.Store.GetLink(ctx, c.WorkspaceID, in.LinkID.V)
		if fault.Is(err, fault.NotFound) {
			fe.Add(fault.Validation, "linkId", "is not a link of this workspace")
			break
		}
		if err != nil {
			return err
		}
		if l.IsArchived {
			fe.Add(fault.Validation, "linkId", "is an archived link; restore it first")
			break
		}
		if c.LinkID == nil || *c.LinkID != l.ID {
			c.ScanCount = 0 // the store starts counting again for another link
		}
		c.LinkID, c.URL, c.LinkDomain, c.LinkSlug = &l.ID, "", l.Domain, l.Slug
	case in.LinkID.Null:
		if c.LinkID != nil {
			c.ScanCount = 0
		}
		c.LinkID, c.LinkDomain, c.LinkSlug = nil, "", ""
	}
	if c.LinkID == nil && !in.LinkID.HasValue() {
		switch {
		case in.URL.HasValue():
			if why := checkTarget(in.URL.V); why != "" {
				fe.Add(fault.Validation, "url", why)
			}
			c.URL = in.URL.V
		case c.URL == "":
			fe.Add(fault.Validation, "url", "is required unless linkId is given")
		}
	} else if in.URL.HasValue() && !in.LinkID.Set {
		fe.Add(fault.Validation, "url", "of a dynamic code is its link's short URL; set linkId to null to encode another url")
	}

	o := s.options(c)
	if creating {
		o = Options{URL: s.URL(c)}
		o.Defaults()
	}
	in.style().apply(&o)
	// A url or linkId error is reported above; the first error of a field wins.
	img, err := render(o, FormatSVG, &fe)
	if err != nil {
		return err
	}
	c.Size, c.ForegroundColor, c.BackgroundColor = img.Options.Size, img.Options.ForegroundColor, img.Options.BackgroundColor
	c.CornerRadius, c.ErrorCorrection, c.Logo = img.Options.CornerRadius, img.Options.ErrorCorrection, img.Options.Logo
	return nil
}

func sortedFields(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *Service) now() time.Time {
	return s.Now().UTC().Truncate(time.Microsecond)
}
