package workspace

import "testing"

// TestDashPermissionGroupsHoldEveryPermissionOnce: the key form's rows
// offer every permission, none twice.
func TestDashPermissionGroupsHoldEveryPermissionOnce(t *testing.T) {
	seen := map[Permission]int{}
	for _, g := range PermissionGroups {
		for _, p := range g.Permissions {
			seen[p]++
		}
	}
	for _, p := range AllPermissions {
		if seen[p] != 1 {
			t.Errorf("%s is in %d groups, want 1", p, seen[p])
		}
		delete(seen, p)
	}
	for p := range seen {
		t.Errorf("%s is grouped but no permission", p)
	}
}
