package workspace

import (
	"slices"
	"testing"
)

func TestMembersRolePermissions(t *testing.T) {
	has := func(r Role, p Permission) bool { return slices.Contains(r.Permissions(), p) }
	for _, p := range AllPermissions {
		read := p.reads()
		if has(Viewer, p) != read {
			t.Errorf("viewer holds %s = %v, want %v", p, has(Viewer, p), read)
		}
		wantMember := read || p == LinksWrite || p == QRWrite || p == GalleriesWrite
		if has(Member, p) != wantMember {
			t.Errorf("member holds %s = %v, want %v", p, has(Member, p), wantMember)
		}
		if has(Admin, p) != (p != BillingWrite) {
			t.Errorf("admin holds %s = %v", p, has(Admin, p))
		}
		if !has(Owner, p) {
			t.Errorf("owner lacks %s", p)
		}
	}
	for _, r := range []Role{Viewer, Member} {
		if has(r, MembersWrite) || has(r, KeysWrite) || has(r, AuditRead) {
			t.Errorf("%s may manage members, keys or read the audit log", r)
		}
	}
	if !has(Admin, MembersWrite) || !has(Admin, AuditRead) {
		t.Error("admin lacks members:write or audit:read")
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error(`ParseRole("root") succeeded`)
	}
	if r, err := ParseRole("admin"); err != nil || r != Admin {
		t.Errorf(`ParseRole("admin") = %q, %v`, r, err)
	}
}
