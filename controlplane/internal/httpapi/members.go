package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	membership "shortlink.dev/controlplane/internal/members"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// JoinPrefix is the dashboard's page that accepts an invite: an invite's
// acceptUrl is JoinPrefix + token on the host the invite was made at.
const JoinPrefix = "/join/"

func (a *API) listMembers(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	ms, total, err := a.members.List(r.Context(), principalOf(r.Context()).Workspace, p.offset(), p.PerPage)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// Emails are personal: shown to callers that manage members, not to
	// every key of the workspace (a read-only key in a CI, say).
	withEmail := principalOf(r.Context()).Key.Has(workspace.MembersWrite)
	out := make([]api.Member, len(ms))
	for i, m := range ms {
		if withEmail {
			out[i] = convert.Member(m)
		} else {
			out[i] = convert.MemberWithoutEmail(m)
		}
	}
	writeList(w, out, p, total)
}

// createMember is POST /members: people join through invites, so it makes
// an invite (201, as POST /invites), the one way in that checks the email.
func (a *API) createMember(w http.ResponseWriter, r *http.Request) { a.createInvite(w, r) }

func (a *API) updateMember(w http.ResponseWriter, r *http.Request) {
	var in membership.RoleInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	m, err := a.members.SetRole(r.Context(), p.Workspace, p.Key, chi.URLParam(r, "id"), in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, convert.Member(m))
}

func (a *API) deleteMember(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if err := a.members.Remove(r.Context(), p.Workspace, p.Key, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) listInvites(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	invs, total, err := a.members.ListInvites(r.Context(), principalOf(r.Context()).Workspace, p.offset(), p.PerPage)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.Invite, len(invs))
	for i, inv := range invs {
		out[i] = convert.Invite(inv, "", "")
	}
	writeList(w, out, p, total)
}

// createInvite makes an invite and answers its token and accept URL, once.
func (a *API) createInvite(w http.ResponseWriter, r *http.Request) {
	var in membership.InviteInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	mailBase := ""
	if base := a.cfg.DashboardURL(); base != "" {
		mailBase = base + JoinPrefix
	}
	res, err := a.members.InviteAndSend(r.Context(), p.Workspace, p.Key, in, a.baseURL(r)+JoinPrefix, mailBase)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := convert.Invite(res.Invite, res.Token, res.AcceptURL)
	if a.members.Mailer != nil {
		out.EmailSent, out.EmailError = &res.Emailed, res.EmailError
		if res.EmailError != "" {
			a.log.WarnContext(r.Context(), "an invite's email was not sent", "invite", res.Invite.ID, "err", res.EmailError)
		}
	}
	writeData(w, http.StatusCreated, out)
}

func (a *API) deleteInvite(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if err := a.members.DeleteInvite(r.Context(), p.Workspace, p.Key, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// acceptInvite is public (the token is the credential), limited per client
// IP by guard like the other public routes.
func (a *API) acceptInvite(w http.ResponseWriter, r *http.Request) {
	var in membership.AcceptInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	m, err := a.members.Accept(r.Context(), chi.URLParam(r, "token"), in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, api.InviteAccepted{WorkspaceID: m.WorkspaceID, Member: convert.Member(m)})
}

// baseURL is the scheme and host the request was made to.
func (a *API) baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
