package logsafe

import "testing"

func TestMemberSecRedact(t *testing.T) {
	for in, want := range map[string]string{
		"/join/inv_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcd":                       "/join/inv_[redacted]",
		"POST /api/v1/invites/inv_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcd/accept": "POST /api/v1/invites/inv_[redacted]/accept",
		"/api/v1/invites/inv_Ab12Cd34Ef56Gh78Ij90":                                 "/api/v1/invites/inv_Ab12Cd34Ef56Gh78Ij90",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
