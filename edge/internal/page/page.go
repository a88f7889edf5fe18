// Package page renders the edge's HTML pages: not found, gone (expired or used
// up), the password form and too many tries. Text is escaped by html/template;
// pages load nothing and run no script.
package page

import (
	"bytes"
	"html/template"
)

// CSP is the Content-Security-Policy of every page. It sets no form-action:
// browsers apply that to the redirect that answers the password form too, and
// that redirect goes to the link's target, on any host and scheme (app deep
// links included). The pages hold no content from users, so no form can be
// injected to send elsewhere.
const CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'"

var tmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}}</title>
<style>
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;
font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f6f7f9;color:#1f2328}
main{background:#fff;padding:2.5rem 2rem;border-radius:12px;box-shadow:0 1px 3px rgba(0,0,0,.08),0 8px 24px rgba(0,0,0,.06);max-width:24rem;width:90%;text-align:center}
h1{font-size:1.35rem;margin:0 0 .5rem}p{color:#57606a;margin:.25rem 0 1.25rem}
input{width:100%;box-sizing:border-box;padding:.65rem .8rem;border:1px solid #d0d7de;border-radius:8px;font-size:1rem}
button{margin-top:.75rem;width:100%;padding:.65rem;border:0;border-radius:8px;background:#1f6feb;color:#fff;font-size:1rem;cursor:pointer}
.err{color:#cf222e;font-size:.9rem;margin:.5rem 0 0}
</style></head>
<body><main>
<h1>{{.Title}}</h1>
<p>{{.Text}}</p>
{{if .Form}}<form method="post" autocomplete="off">
<label for="password" hidden>Password</label>
<input id="password" name="password" type="password" placeholder="Password" required autofocus>
{{if .Error}}<p class="err" role="alert">{{.Error}}</p>{{end}}
<button type="submit">Continue</button>
</form>{{end}}
</main></body></html>
`))

type data struct {
	Title, Text, Error string
	Form               bool
}

func render(d data) []byte {
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		panic("page: " + err.Error()) // the template and its data are ours
	}
	return b.Bytes()
}

// Fixed pages, rendered once.
var (
	NotFound      = render(data{Title: "Link not found", Text: "This short link does not exist or is no longer active."})
	Gone          = render(data{Title: "Link expired", Text: "This short link has expired and no longer redirects."})
	LimitReached  = render(data{Title: "Link unavailable", Text: "This short link has been used as many times as it may be and no longer redirects."})
	TooMany       = render(data{Title: "Too many attempts", Text: "Too many wrong passwords were tried for this link. Please wait a few minutes and try again."})
	Password      = render(data{Title: "Password required", Text: "This link is protected. Enter its password to continue.", Form: true})
	WrongPassword = render(data{Title: "Password required", Text: "This link is protected. Enter its password to continue.",
		Form: true, Error: "That password is not right. Please try again."})
)

// GalleryNotFound is the page of /bio/{slug} for a gallery that does not
// exist or is not published.
var GalleryNotFound = render(data{Title: "Page not found", Text: "This page does not exist or is not published."})

// Unavailable is the page of a lookup that failed (the store is unreachable).
var Unavailable = render(data{Title: "Temporarily unavailable", Text: "This link cannot be opened right now. Please try again in a moment."})

// Busy is the page of a password try the edge turned away because it was
// checking as many passwords as it may at once.
var Busy = render(data{Title: "Busy", Text: "Many passwords are being checked right now. Please go back and try again in a moment."})

// MethodNotAllowed is the page of a request with a method the edge does not answer.
var MethodNotAllowed = render(data{Title: "Method not allowed", Text: "Short links answer GET and HEAD (and POST for a password)."})
