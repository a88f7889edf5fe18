package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
)

// Domains runs the contract suite of domain.Store against the stores open returns.
func Domains(t *testing.T, open func(t *testing.T) Stores) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		got := mustWorkspaceDomain(t, s, ws.ID, d.Name)
		wantDomain(t, "get", got, d)
	})

	t.Run("OKCaseInsensitiveName", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		wantDomain(t, "get in upper case", mustWorkspaceDomain(t, s, ws.ID, strings.ToUpper(d.Name)), d)
	})

	t.Run("ErrDomainExists", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())

		for _, name := range []string{d.Name, strings.ToUpper(d.Name)} {
			dup := &domain.Domain{ID: id.New(id.Domain), WorkspaceID: ws.ID, Name: name, Token: "other", CreatedAt: at(1)}
			wantCode(t, s.CreateDomain(ctx, dup), fault.DomainExists, fmt.Sprintf("add %s again", name))
		}
		wantDomain(t, "domain after the failed adds", mustWorkspaceDomain(t, s, ws.ID, d.Name), d)

		// Ownership is settled by verification: another workspace may add the name.
		o := MustCreateDomain(t, s, other.ID, d.Name)
		wantDomain(t, "the other workspace's domain", mustWorkspaceDomain(t, s, other.ID, d.Name), o)
	})

	t.Run("WorkspaceDomainErrNotFound", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		_, err := s.WorkspaceDomain(ctx, other.ID, d.Name)
		wantCode(t, err, fault.NotFound, "another workspace's domain")
		_, err = s.WorkspaceDomain(ctx, ws.ID, UniqueDomain())
		wantCode(t, err, fault.NotFound, "an unknown domain")
	})

	t.Run("OKMarkVerified", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		// Another workspace's claim on the same name, never verified.
		o := MustCreateDomain(t, s, other.ID, d.Name)
		wantVerified(t, s, d.Name, false)

		if err := s.MarkVerified(ctx, d.ID, at(60)); err != nil {
			t.Fatalf("mark verified: %v", err)
		}
		d.Verified, d.VerifiedAt = true, ptr(at(60))
		wantDomain(t, "verified domain", mustWorkspaceDomain(t, s, ws.ID, d.Name), d)
		wantDomain(t, "the other workspace's claim", mustWorkspaceDomain(t, s, other.ID, d.Name), o)
		wantVerified(t, s, d.Name, true)
		wantVerified(t, s, strings.ToUpper(d.Name), true)
		wantVerified(t, s, UniqueDomain(), false)
	})

	t.Run("MarkVerifiedErrNotFound", func(t *testing.T) {
		s := open(t)
		wantCode(t, s.MarkVerified(ctx, id.New(id.Domain), base), fault.NotFound, "verify an unknown domain")
	})
}

func mustWorkspaceDomain(t testing.TB, s domain.Store, workspaceID, name string) *domain.Domain {
	t.Helper()
	d, err := s.WorkspaceDomain(context.Background(), workspaceID, name)
	if err != nil {
		t.Fatalf("get domain %s: %v", name, err)
	}
	return d
}

func wantVerified(t testing.TB, s domain.Store, name string, want bool) {
	t.Helper()
	got, err := s.IsVerifiedDomain(context.Background(), name)
	if err != nil {
		t.Fatalf("is verified %s: %v", name, err)
	}
	if got != want {
		t.Fatalf("is verified %s: got %v, want %v", name, got, want)
	}
}

func wantDomain(t testing.TB, what string, got, want *domain.Domain) {
	t.Helper()
	show := func(d *domain.Domain, verifiedAt *string, created string) string {
		at := "nil"
		if verifiedAt != nil {
			at = *verifiedAt
		}
		return fmt.Sprintf("%s ws=%s %s verified=%v at=%s token=%q created=%s",
			d.ID, d.WorkspaceID, d.Name, d.Verified, at, d.Token, created)
	}
	var gotAt, wantAt *string
	if got.VerifiedAt != nil {
		gotAt = ptr(showTime(*got.VerifiedAt))
	}
	if want.VerifiedAt != nil {
		wantAt = ptr(showTime(stored(*want.VerifiedAt)))
	}
	g := show(got, gotAt, showTime(got.CreatedAt))
	w := show(want, wantAt, showTime(stored(want.CreatedAt)))
	if g != w {
		t.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}
