-- Single sign-on with OpenID Connect (issue 22, point 3). A user may be
-- linked to accounts at the OpenID provider: (issuer, subject) names one
-- account for ever, whatever its email becomes. A user signed up by SSO has
-- no password: users.password_hash is '' and password sign-in refuses it.
CREATE TABLE user_identities (
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX user_identities_user ON user_identities (user_id);
-- Sign-ins in flight at the provider: the state's SHA-256, the SHA-256 of
-- the browser's binding cookie, the nonce, the PKCE verifier and the page
-- to land on. The callback deletes the row it uses (each works once);
-- every replica reads the same rows.
CREATE TABLE sso_states (
    state_hash   TEXT PRIMARY KEY,
    binding_hash TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    verifier     TEXT NOT NULL,
    next_path    TEXT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX sso_states_expires ON sso_states (expires_at);
