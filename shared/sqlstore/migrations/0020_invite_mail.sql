-- Invites by email and proof of an email (docs/teams.md, "Invites"): an
-- invite sent by SMTP has a second token, only in the email
-- (mail_token_hash, its SHA-256); an account made or joined with that
-- token proved it reads the email's mailbox (email_verified). Accounts made
-- before, or with the link shown to the inviter, stay unverified.
ALTER TABLE users ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE invites ADD COLUMN mail_token_hash TEXT;
CREATE UNIQUE INDEX invites_mail_token ON invites (mail_token_hash);
