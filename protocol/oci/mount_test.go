package oci

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// asToken sends a request with an access token (HTTP Basic, as scripts do).
func (s *testServer) asToken(t *testing.T, secret, method, path string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("token", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// restrictedToken mints a token of ns limited to some repositories.
func (s *testServer) restrictedToken(t *testing.T, ns string, repos []string, scopes ...enum.TokenScope) string {
	t.Helper()
	ctx := context.Background()
	n, err := s.Store.NamespaceBySlug(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := s.Authn.CreateToken(ctx, auth.AdminPrincipal(""), auth.NamespaceOf(n),
		auth.TokenSpec{Name: "restricted", Scopes: scopes, Repositories: repos})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// A cross-repository mount reads the source's bytes, so it needs read
// permission on the source: a token limited to one repository can neither
// mount a PRIVATE layer of another repository of its namespace (with or
// without from) nor learn that it exists (202 like an unknown digest), and
// the layer stays unreadable through its own repository. Sources the
// token may read still mount (201).
func TestMountNeedsReadOnSource(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "mine", enum.FormatOCI, enum.VisibilityPrivate)
	s.repo(t, "acme", "secret", enum.FormatOCI, enum.VisibilityPrivate)
	s.repo(t, "acme", "open", enum.FormatOCI, enum.VisibilityPublic)
	secretLayer := newBenchClient(t, s, "acme/secret/app").putBlob([]byte("private layer of acme/secret"))
	openLayer := newBenchClient(t, s, "acme/open/app").putBlob([]byte("public layer of acme/open"))
	ownLayer := newBenchClient(t, s, "acme/mine/base").putBlob([]byte("layer of acme/mine/base"))
	missing := sha([]byte("never pushed"))

	tok := s.restrictedToken(t, "acme", []string{"mine"}, enum.TokenScopeWrite)
	post := func(query string) *http.Response {
		return s.asToken(t, tok, http.MethodPost, "/v2/acme/mine/app/blobs/uploads/?"+query, nil)
	}
	for _, q := range []string{
		"mount=" + secretLayer,
		"mount=" + secretLayer + "&from=acme/secret/app",
		"mount=" + missing,
		"mount=" + missing + "&from=acme/secret/app",
		"mount=" + secretLayer + "&from=acme/nope/app",
		"mount=" + secretLayer + "&from=other/secret/app",
	} {
		resp := post(q)
		wantStatus(t, resp, http.StatusAccepted)
		if resp.Header.Get("Docker-Upload-UUID") == "" || resp.Header.Get("Location") == "" {
			t.Fatalf("POST ?%s: 202 without an upload session: %v", q, resp.Header)
		}
	}
	for _, m := range []string{http.MethodHead, http.MethodGet} {
		wantStatus(t, s.asToken(t, tok, m, "/v2/acme/mine/app/blobs/"+secretLayer, nil), http.StatusNotFound)
		wantStatus(t, s.asToken(t, tok, m, "/v2/acme/secret/app/blobs/"+secretLayer, nil), http.StatusForbidden)
	}

	// What the token may read mounts: its own repository's image, and a
	// PUBLIC repository of the namespace (with and without from).
	for _, q := range []string{
		"mount=" + ownLayer,
		"mount=" + openLayer,
		"mount=" + ownLayer + "&from=acme/mine/base",
	} {
		wantStatus(t, post(q), http.StatusCreated)
	}
	wantStatus(t, s.asToken(t, tok, http.MethodGet, "/v2/acme/mine/app/blobs/"+openLayer, nil), http.StatusOK)

	// An unrestricted token of the namespace reads every repository of it,
	// so it mounts the private layer, from anywhere or named.
	full := s.token(t, "acme", "full", enum.TokenScopeWrite)
	wantStatus(t, s.asToken(t, full, http.MethodPost, "/v2/acme/mine/full/blobs/uploads/?mount="+secretLayer, nil), http.StatusCreated)
	wantStatus(t, s.asToken(t, full, http.MethodPost,
		"/v2/acme/mine/named/blobs/uploads/?mount="+secretLayer+"&from=acme/secret/app", nil), http.StatusCreated)
	wantStatus(t, s.asToken(t, full, http.MethodGet, "/v2/acme/mine/full/blobs/"+secretLayer, nil), http.StatusOK)
}
