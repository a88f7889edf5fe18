package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/qrcode"
)

// NewQRCode returns a static code of the workspace. It is not stored.
func NewQRCode(workspaceID, url string) *qrcode.Code {
	return &qrcode.Code{
		ID: id.New(id.QR), WorkspaceID: workspaceID, Name: "Poster «spring» ✓", URL: url, Size: 512,
		ForegroundColor: "#1A237E", BackgroundColor: "#FFF8E1", CornerRadius: 25, ErrorCorrection: "Q",
		CreatedAt: base, UpdatedAt: base,
	}
}

// QRCodes runs the contract suite of qrcode.Store against the stores open returns.
func QRCodes(t *testing.T, open func(t *testing.T) Stores) {
	ctx := context.Background()

	t.Run("OKStatic", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		c := NewQRCode(ws.ID, "https://example.com/menu?table=4")
		MustCreateQRCode(t, s, c)
		wantQRCode(t, "get", mustGetQRCode(t, s, ws.ID, c.ID), c)
	})

	t.Run("OKDynamicReadsItsLinkAddress", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		l := MustCreateLink(t, s, NewLink(ws.ID, dom, "menu"), -1)
		c := NewQRCode(ws.ID, "")
		c.LinkID = &l.ID
		MustCreateQRCode(t, s, c)
		got := mustGetQRCode(t, s, ws.ID, c.ID)
		if got.LinkDomain != dom || got.LinkSlug != "menu" {
			t.Fatalf("link address: got %q %q, want %q menu", got.LinkDomain, got.LinkSlug, dom)
		}
		want := *c
		want.LinkDomain, want.LinkSlug = dom, "menu"
		wantQRCode(t, "get", got, &want)

		// The address follows the link: a new slug is read with the code.
		l.Slug = "carte"
		MustUpdateLink(t, s, l, -1)
		if got := mustGetQRCode(t, s, ws.ID, c.ID); got.LinkSlug != "carte" {
			t.Fatalf("after the slug changed: got %q, want carte", got.LinkSlug)
		}
	})

	t.Run("OKUpdateKeepsScanCount", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		c := NewQRCode(ws.ID, "https://example.com/a")
		c.ScanCount = 7
		MustCreateQRCode(t, s, c)
		c.Name, c.URL, c.Size, c.CornerRadius, c.ErrorCorrection = "renamed", "https://example.com/b", 1024, 50, "H"
		c.ScanCount = 0
		c.UpdatedAt = at(60)
		if err := s.UpdateQRCode(ctx, c); err != nil {
			t.Fatalf("update: %v", err)
		}
		c.ScanCount = 7
		wantQRCode(t, "after update", mustGetQRCode(t, s, ws.ID, c.ID), c)
	})

	t.Run("OKLogoKept", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		c := NewQRCode(ws.ID, "https://example.com/logo")
		c.Logo, c.ErrorCorrection = "default", "H"
		MustCreateQRCode(t, s, c)
		wantQRCode(t, "get", mustGetQRCode(t, s, ws.ID, c.ID), c)
		// An uploaded logo is a data URL of up to 256 KiB of PNG.
		c.Logo = "data:image/png;base64," + strings.Repeat("iVBORw0K", 256<<10/6)
		c.UpdatedAt = at(60)
		if err := s.UpdateQRCode(ctx, c); err != nil {
			t.Fatalf("update: %v", err)
		}
		wantQRCode(t, "after update", mustGetQRCode(t, s, ws.ID, c.ID), c)
		c.Logo = ""
		if err := s.UpdateQRCode(ctx, c); err != nil {
			t.Fatalf("update: %v", err)
		}
		list, _, err := s.ListQRCodes(ctx, qrcode.Filter{WorkspaceID: ws.ID, Limit: 10})
		if err != nil || len(list) != 1 || list[0].Logo != "" {
			t.Fatalf("list after removing the logo: %v, %v", list, err)
		}
	})

	t.Run("ErrNotFoundOtherWorkspace", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		c := NewQRCode(ws.ID, "https://example.com/a")
		MustCreateQRCode(t, s, c)
		_, err := s.GetQRCode(ctx, other.ID, c.ID)
		wantCode(t, err, fault.NotFound, "get from another workspace")
		o := *c
		o.WorkspaceID, o.Name = other.ID, "stolen"
		wantCode(t, s.UpdateQRCode(ctx, &o), fault.NotFound, "update from another workspace")
		wantCode(t, s.DeleteQRCode(ctx, other.ID, c.ID), fault.NotFound, "delete from another workspace")
		wantQRCode(t, "untouched", mustGetQRCode(t, s, ws.ID, c.ID), c)
	})

	t.Run("OKDelete", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		c := NewQRCode(ws.ID, "https://example.com/a")
		MustCreateQRCode(t, s, c)
		if err := s.DeleteQRCode(ctx, ws.ID, c.ID); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err := s.GetQRCode(ctx, ws.ID, c.ID)
		wantCode(t, err, fault.NotFound, "get after delete")
		wantCode(t, s.DeleteQRCode(ctx, ws.ID, c.ID), fault.NotFound, "delete again")
	})

	t.Run("OKListPages", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		var made []*qrcode.Code
		for i := range 5 {
			c := NewQRCode(ws.ID, "https://example.com/"+id.Base62(4))
			c.CreatedAt = at(i)
			MustCreateQRCode(t, s, c)
			made = append(made, c)
		}
		MustCreateQRCode(t, s, NewQRCode(other.ID, "https://example.com/other"))
		page, total, err := s.ListQRCodes(ctx, qrcode.Filter{WorkspaceID: ws.ID, Offset: 1, Limit: 2})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if total != 5 || len(page) != 2 || page[0].ID != made[3].ID || page[1].ID != made[2].ID {
			t.Fatalf("page 2 of 2 newest first: got %d of %d, want %s %s", len(page), total, made[3].ID, made[2].ID)
		}
		n, err := s.CountQRCodes(ctx, ws.ID)
		if err != nil || n != 5 {
			t.Fatalf("count: got %d, %v, want 5", n, err)
		}
		empty, total, err := s.ListQRCodes(ctx, qrcode.Filter{WorkspaceID: MustCreateWorkspace(t, s).ID, Limit: 20})
		if err != nil || empty == nil || len(empty) != 0 || total != 0 {
			t.Fatalf("empty workspace: got %v (nil: %t), %d, %v; want an empty list", empty, empty == nil, total, err)
		}
	})
}

// MustCreateDynamicQRCode stores a new dynamic code of the link and returns its id.
func MustCreateDynamicQRCode(t testing.TB, s qrcode.Store, workspaceID, linkID string) string {
	t.Helper()
	c := NewQRCode(workspaceID, "")
	c.LinkID = &linkID
	MustCreateQRCode(t, s, c)
	return c.ID
}

// MustCreateQRCode stores c.
func MustCreateQRCode(t testing.TB, s qrcode.Store, c *qrcode.Code) {
	t.Helper()
	if err := s.CreateQRCode(context.Background(), c); err != nil {
		t.Fatalf("create QR code: %v", err)
	}
}

func mustGetQRCode(t testing.TB, s qrcode.Store, workspaceID, id string) *qrcode.Code {
	t.Helper()
	c, err := s.GetQRCode(context.Background(), workspaceID, id)
	if err != nil {
		t.Fatalf("get QR code %s: %v", id, err)
	}
	return c
}

// wantQRCode fails the test unless got is want as the store gives it back.
func wantQRCode(t testing.TB, what string, got, want *qrcode.Code) {
	t.Helper()
	w := *want
	w.CreatedAt, w.UpdatedAt = stored(w.CreatedAt), stored(w.UpdatedAt)
	wantSameJSON(t, what, got, &w)
}

// wantSameJSON fails the test unless got and want have the same JSON, which
// shows pointers by their values and times with their location.
func wantSameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}
