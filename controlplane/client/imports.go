package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"

	"shortlink.dev/api"
)

// ImportJob is an import of another product's export (POST /imports).
type ImportJob = api.ImportJob

// ImportInput is what Import sends.
type ImportInput struct {
	// Source is bitly, dub, shlink, kutt, yourls or csv.
	Source string
	// FileName is the name the file is sent with.
	FileName string
	// File is the export.
	File []byte
	// OnConflict is skip (the default when empty) or suffix.
	OnConflict string
	// Mapping maps link fields to the csv source's column headers.
	Mapping map[string]string
}

// Import sends an export to be imported (links:write) and returns the
// queued job; follow it with ImportJob.
func (c *Client) Import(ctx context.Context, in ImportInput) (*ImportJob, error) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fields := [][2]string{{"source", in.Source}, {"onConflict", in.OnConflict}}
	if in.Mapping != nil {
		m, err := json.Marshal(in.Mapping)
		if err != nil {
			return nil, fmt.Errorf("encode the mapping: %w", err)
		}
		fields = append(fields, [2]string{"mapping", string(m)})
	}
	for _, f := range fields {
		if f[1] == "" {
			continue
		}
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	name := in.FileName
	if name == "" {
		name = "export"
	}
	w, err := mw.CreateFormFile("file", name)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(in.File); err != nil {
		return nil, err
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	var out ImportJob
	err = c.do(ctx, call{method: http.MethodPost, path: "/imports", form: b.Bytes(), formType: mw.FormDataContentType(), data: &out})
	return &out, err
}

// Imports returns one page of the workspace's import jobs, newest first.
func (c *Client) Imports(ctx context.Context, p Page) ([]ImportJob, Meta, error) {
	q := url.Values{}
	p.query(q)
	var (
		out  []ImportJob
		meta Meta
	)
	err := c.do(ctx, call{method: http.MethodGet, path: "/imports", query: q, data: &out, meta: &meta})
	return out, meta, err
}

// ImportJob returns an import job and its progress.
func (c *Client) ImportJob(ctx context.Context, id string) (*ImportJob, error) {
	var out ImportJob
	err := c.do(ctx, call{method: http.MethodGet, path: path("imports", id), data: &out})
	return &out, err
}

// CancelImport cancels an import job (the links it created stay).
func (c *Client) CancelImport(ctx context.Context, id string) (*ImportJob, error) {
	var out ImportJob
	err := c.do(ctx, call{method: http.MethodDelete, path: path("imports", id), data: &out})
	return &out, err
}

// ImportReport returns the CSV of the rows an import job skipped or
// could not import.
func (c *Client) ImportReport(ctx context.Context, id string) ([]byte, error) {
	var raw rawBody
	if err := c.do(ctx, call{method: http.MethodGet, path: path("imports", id, "report"), raw: &raw}); err != nil {
		return nil, err
	}
	return raw.body, nil
}

// ExportLinks returns every link of the workspace (links:read), as CSV
// (format "csv" or "") or JSON lines ("jsonl").
func (c *Client) ExportLinks(ctx context.Context, format string) ([]byte, error) {
	q := url.Values{}
	if format != "" {
		q.Set("format", format)
	}
	var raw rawBody
	if err := c.do(ctx, call{method: http.MethodGet, path: "/links/export", query: q, raw: &raw}); err != nil {
		return nil, err
	}
	return raw.body, nil
}
