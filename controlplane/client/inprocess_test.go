package client

import (
	"context"
	"io"
	"net/http"
	"testing"
)

type ctxMark struct{}

func TestDashWithHandlerServesInProcess(t *testing.T) {
	var got struct {
		method, path, query, requestURI, host, body, mark, auth string
		urlHost                                                 string
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.path, got.query, got.requestURI = r.Method, r.URL.Path, r.URL.RawQuery, r.RequestURI
		got.host, got.urlHost, got.body, got.auth = r.Host, r.URL.Host, string(b), r.Header.Get("Authorization")
		got.mark, _ = r.Context().Value(ctxMark{}).(string)
		if r.Method == http.MethodPost {
			reply(422, `{"success":false,"error":{"code":"VALIDATION_ERROR","message":"name: required","details":{"fields":{"name":"required"}}}}`)(w, r)
			return
		}
		reply(200, `{"success":true,"data":[],"meta":{"page":2,"perPage":5,"total":7,"hasMore":false}}`)(w, r)
	})
	c, err := New("http://in-process/api/v1", "", WithHandler(h))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxMark{}, "carried")
	_, meta, err := c.ListDomains(ctx, Page{Page: 2, PerPage: 5})
	if err != nil {
		t.Fatal(err)
	}
	if meta.Total != 7 || meta.Page != 2 {
		t.Errorf("meta %+v", meta)
	}
	if got.method != "GET" || got.path != "/api/v1/domains" || got.query != "page=2&perPage=5" ||
		got.requestURI != "/api/v1/domains?page=2&perPage=5" || got.host != "in-process" || got.urlHost != "" ||
		got.mark != "carried" || got.auth != "" || got.body != "" {
		t.Errorf("the handler saw %+v", got)
	}

	_, err = c.CreateDomain(ctx, "")
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %T %v, want *Error", err, err)
	}
	if e.Status != 422 || e.Code != CodeValidation || e.Message != "name: required" || e.Fields["name"] != "required" {
		t.Errorf("error %+v", e)
	}
	if got.body != `{"name":""}` {
		t.Errorf("body %q", got.body)
	}
}

func TestDashDownloadQRCodeKeepsTheFilename(t *testing.T) {
	f, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Disposition", `attachment; filename="menu card.png"`)
		io.WriteString(w, "\x89PNG")
	})
	img, err := c.DownloadQRCode(context.Background(), "qr_1", "png")
	if err != nil {
		t.Fatal(err)
	}
	if img.Format != "png" || img.Filename != "menu card.png" || string(img.Data) != "\x89PNG" {
		t.Errorf("image %+v", img)
	}
	if f.last.path != "/api/v1/qr/qr_1/download" || f.last.query != "format=png" {
		t.Errorf("request %+v", f.last)
	}
}
