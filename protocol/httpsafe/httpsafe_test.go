package httpsafe

import (
	"mime"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDisposition(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"lib-1.0.pom", "attachment; filename=lib-1.0.pom"},
		{"lib-1.0-notes.xml", "attachment; filename=lib-1.0-notes.xml"},
		{"a b.tgz", `attachment; filename="a b.tgz"`},
		{"sha256:abc", "attachment; filename=sha256_abc"},
		{`x"; filename=evil.html`, `attachment; filename="x_; filename=evil.html"`},
		{"dir/../../etc/passwd", "attachment; filename=passwd"},
		{`C:\tmp\a.jar`, "attachment; filename=a.jar"},
		{"évé.pom", "attachment; filename*=utf-8''%C3%A9v%C3%A9.pom"},
		{"a\r\nSet-Cookie: x=1.pom", `attachment; filename="a__Set-Cookie_ x=1.pom"`},
		{"rtl\u202egpj.html", "attachment; filename=rtl_gpj.html"},
		{"bad\xffutf8.xml", "attachment; filename=bad_utf8.xml"},
		{"", "attachment"},
		{"..", "attachment"},
		{"a/", "attachment"},
	} {
		got := Disposition(tc.in)
		if got != tc.want {
			t.Errorf("Disposition(%q) = %q, want %q", tc.in, got, tc.want)
			continue
		}
		// What a browser parses back is one attachment with, at most, one
		// file name.
		disp, params, err := mime.ParseMediaType(got)
		if err != nil || disp != "attachment" || len(params) > 1 {
			t.Errorf("Disposition(%q) = %q parses as %q %v %v", tc.in, got, disp, params, err)
		}
	}
}

func TestHandlerProtectsEveryAnswer(t *testing.T) {
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		http.Error(w, "<script>alert(1)</script>", http.StatusNotFound)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", got)
	}
	if got := rec.Header().Get("Content-Security-Policy"); got != "default-src 'none'; sandbox" {
		t.Errorf("Content-Security-Policy = %q", got)
	}
}

func TestAttachment(t *testing.T) {
	h := http.Header{}
	Attachment(h, "x.svg")
	if h.Get("Content-Disposition") != "attachment; filename=x.svg" || h.Get("X-Content-Type-Options") != "nosniff" ||
		h.Get("Content-Security-Policy") != ContentSecurityPolicy {
		t.Errorf("headers: %v", h)
	}
}
