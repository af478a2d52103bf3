package soak

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// client sends the protocol requests with one token.
type client struct {
	http  *http.Client
	base  *url.URL
	token string
}

func newClient(base *url.URL, token string, workers int, timeout time.Duration) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = workers * 2
	return &client{http: &http.Client{Transport: tr, Timeout: timeout}, base: base, token: token}
}

// response is what one request got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

// failure is a failed step of an operation; label is what the report
// counts it by: the HTTP status, "conn" for a transport error, "timeout",
// "gql:<code>" for a GraphQL error, or "mismatch" for wrong content.
type failure struct {
	label  string
	detail string
	// retryAfter is the answer's Retry-After (0 if none).
	retryAfter time.Duration
}

func (f *failure) Error() string { return f.label + ": " + f.detail }

func fail(label, format string, args ...any) error {
	return &failure{label: label, detail: fmt.Sprintf(format, args...)}
}

// pause is how long a client waits after the error before its next
// request: the answer's Retry-After, at most maxPause, or a second after
// any other failure, as clients back off instead of spinning.
func pause(err error) time.Duration {
	const maxPause = 5 * time.Second
	var f *failure
	if errors.As(err, &f) && f.retryAfter > 0 {
		return min(f.retryAfter, maxPause)
	}
	return time.Second
}

// labelOf is the report label of an operation's error.
func labelOf(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return f.label
	}
	return "other"
}

// authorization is the header a protocol client would send: npm speaks
// bearer tokens, Docker and Maven clients send the token as a Basic
// password.
func (c *client) authorization(path string) string {
	if strings.HasPrefix(path, "/npm/") || path == "/graphql" {
		return "Bearer " + c.token
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("soak:"+c.token))
}

// resolve turns a path or a Location header into a URL of the base.
func (c *client) resolve(ref string) (string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", ref, err)
	}
	return c.base.ResolveReference(u).String(), nil
}

// do sends one request and fails unless the status is one of want; hdr
// alternates header names and values.
func (c *client) do(ctx context.Context, method, ref string, body []byte, want []int, hdr ...string) (response, error) {
	target, err := c.resolve(ref)
	if err != nil {
		return response{}, fail("other", "%v", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return response{}, fail("other", "new request %s %s: %v", method, ref, err)
	}
	req.Header.Set("Authorization", c.authorization(req.URL.Path))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return response{}, transportFailure(method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, transportFailure(method, req.URL.Path, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: b}
	if !slices.Contains(want, r.status) {
		f := &failure{label: strconv.Itoa(r.status), detail: fmt.Sprintf("%s %s: %s", method, req.URL.Path, snippet(b))}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			f.retryAfter = time.Duration(secs) * time.Second
		}
		return r, f
	}
	return r, nil
}

func transportFailure(method, path string, err error) error {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return fail("timeout", "%s %s: %v", method, path, err)
	}
	return fail("conn", "%s %s: %v", method, path, err)
}

// snippet keeps error bodies short in the report.
func snippet(b []byte) string {
	const max = 200
	s := strings.TrimSpace(string(b))
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
