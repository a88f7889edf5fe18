package links

import (
	"context"
	"fmt"
	"unicode/utf8"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/workspace"
)

// Prepare validates in as Create does and returns the new link, not
// stored, for an import (package imports), which stores links by the batch.
// in may not name a domain: an import decides the domain itself (it may
// be one not verified yet) and sets it on the link. A link without a slug
// gets a drawn one, which the import's store write may still find taken.
func (s *Service) Prepare(ctx context.Context, ws *workspace.Workspace, keyID string, in Input) (*link.Link, error) {
	if in.IsArchived.Set || in.Domain.Set {
		return nil, fault.New(fault.Validation, "an imported link's domain and archived state are set by the import")
	}
	l, err := s.newLink(ctx, ws, keyID, &in)
	if err != nil {
		return nil, err
	}
	if !in.Slug.HasValue() {
		l.Slug = id.Slug()
	}
	return l, nil
}

// PasswordProblem says what is wrong with an imported link's password, as
// Create reports it on field password ("" for none, or a good one), so
// that an import checks a row's password at once and hashes it
// (HashPassword) only once its link is sure to be created.
func PasswordProblem(password string) string {
	switch {
	case password == "":
		return ""
	case !link.PasswordLongEnough(password):
		return fmt.Sprintf("must be at least %d characters", link.MinPasswordLen)
	case utf8.RuneCountInString(password) > link.MaxPasswordLen:
		return fmt.Sprintf("must be at most %d characters", link.MaxPasswordLen)
	}
	return ""
}
