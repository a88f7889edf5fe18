-- A saved QR code's logo (issue 21): '' for none, 'default' for the built-in
-- link glyph, or the uploaded image as a PNG data URL, re-encoded by the
-- control plane (at most 512 pixels a side and 256 KiB).
ALTER TABLE qr_codes ADD COLUMN logo TEXT NOT NULL DEFAULT '';
