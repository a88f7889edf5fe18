// Package logsafe keeps secrets that travel in URLs out of the control
// plane's logs. Invite tokens are in paths (/join/inv_…,
// /api/v1/invites/inv_…/accept): every log line that names a request's
// path, or an error that may quote one, goes through Redact.
package logsafe

import "regexp"

// tokenRE matches an invite token: "inv_" and its 40 base62 characters (an
// invite's id, inv_ and 20 characters, is no secret and stays).
var tokenRE = regexp.MustCompile(`inv_[A-Za-z0-9]{30,}`)

// Redact returns s with every invite token replaced by "inv_[redacted]".
func Redact(s string) string { return tokenRE.ReplaceAllString(s, "inv_[redacted]") }
