package client

import (
	"context"
	"net/http"

	"shortlink.dev/api"
)

// Member is a person of the workspace and their role.
type Member = api.Member

// Invite asks someone to join; Token and AcceptURL are set only when it was just made.
type Invite = api.Invite

// InviteAccepted is the answer of an accepted invite.
type InviteAccepted = api.InviteAccepted

// ListMembers returns one page of the workspace's members, oldest first (any key).
func (c *Client) ListMembers(ctx context.Context, p Page) ([]Member, Meta, error) {
	var (
		out  []Member
		meta Meta
	)
	return out, meta, c.list(ctx, "/members", p, &out, &meta)
}

// SetMemberRole changes a member's role (members:write); the last owner
// cannot be demoted (409 LAST_OWNER).
func (c *Client) SetMemberRole(ctx context.Context, userID, role string) (*Member, error) {
	var m Member
	return &m, c.do(ctx, call{method: http.MethodPatch, path: path("members", userID), body: api.MemberUpdate{Role: role}, data: &m})
}

// RemoveMember takes a member out of the workspace (members:write).
func (c *Client) RemoveMember(ctx context.Context, userID string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("members", userID)})
}

// ListInvites returns one page of the workspace's pending invites (members:write).
func (c *Client) ListInvites(ctx context.Context, p Page) ([]Invite, Meta, error) {
	var (
		out  []Invite
		meta Meta
	)
	return out, meta, c.list(ctx, "/invites", p, &out, &meta)
}

// CreateInvite invites email to join with role (members:write); the answer
// holds the token and accept URL, shown once.
func (c *Client) CreateInvite(ctx context.Context, email, role string) (*Invite, error) {
	var inv Invite
	return &inv, c.do(ctx, call{method: http.MethodPost, path: "/invites", body: api.InviteInput{Email: email, Role: role}, data: &inv})
}

// DeleteInvite withdraws an invite (members:write).
func (c *Client) DeleteInvite(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("invites", id)})
}

// AcceptInvite accepts an invite with its token (no key needed): name and
// password make a new account, or password is the existing account's.
func (c *Client) AcceptInvite(ctx context.Context, token, name, password string) (*InviteAccepted, error) {
	return c.AcceptInviteWith(ctx, token, api.InviteAcceptance{Name: name, Password: password})
}

// AcceptInviteWith accepts an invite with the whole body (ClaimEmail too).
func (c *Client) AcceptInviteWith(ctx context.Context, token string, in api.InviteAcceptance) (*InviteAccepted, error) {
	var out InviteAccepted
	return &out, c.do(ctx, call{method: http.MethodPost, path: path("invites", token, "accept"), body: in, data: &out})
}
