package accesscontrol

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// caller is one column of the matrix: who sends the request.
type caller struct {
	name   string
	secret string // "" anonymous
}

// op is what a cell does.
type op string

const (
	pull op = "pull"
	push op = "push"
	del  op = "delete"
)

// expect is the independent statement of the access rules (auth/doc.go) the matrix
// checks the surfaces against: "ok", "401" or "403".
func expect(who string, vis enum.Visibility, o op, restrictedTo bool) string {
	switch who {
	case "admin":
		return "ok"
	case "anonymous":
		if o == pull && vis == enum.VisibilityPublic {
			return "ok"
		}
		return "401"
	case "expired", "revoked", "garbage":
		return "401" // a bad credential never degrades to anonymous
	case "other": // ADMIN token of another namespace
		if o == pull && vis != enum.VisibilityPrivate {
			return "ok"
		}
		return "403"
	case "restricted": // WRITE token of acme, limited to the *-listed repositories
		if o == pull && (vis == enum.VisibilityPublic || restrictedTo) {
			return "ok"
		}
		if o == push && restrictedTo {
			return "ok"
		}
		return "403"
	}
	scopes := map[string][]op{"read": {pull}, "write": {pull, push}, "delete": {pull, del}, "nsadmin": {pull, push, del}}[who]
	for _, s := range scopes {
		if s == o {
			return "ok"
		}
	}
	return "403"
}

type matrix struct {
	*env
	callers []caller
	// restricted lists the repositories the "restricted" token covers.
	restricted map[string]bool
}

func newMatrix(t *testing.T) *matrix {
	e := newEnv(t)
	m := &matrix{env: e, restricted: map[string]bool{}}
	vis := enum.VisibilityValues()
	for _, v := range vis {
		s := strings.ToLower(v.String())
		e.repo("oci-"+s, enum.FormatOCI, v)
		e.repo("npm-"+s, enum.FormatNpm, v)
		e.repo("mvn-"+s, enum.FormatMaven, v)
		e.repo("oci-"+s+"-listed", enum.FormatOCI, v)
		e.repo("npm-"+s+"-listed", enum.FormatNpm, v)
		e.repo("mvn-"+s+"-listed", enum.FormatMaven, v)
		for _, suffix := range []string{"", "-listed"} {
			e.pushImage("acme/oci-"+s+suffix+"/img", "v1")
			e.npmPublish("npm-"+s+suffix, "pkg", "1.0.0")
			e.mavenDeploy("mvn-"+s+suffix, "1.0")
			for _, f := range []string{"oci-", "npm-", "mvn-"} {
				if suffix != "" {
					m.restricted[f+s+suffix] = true
				}
			}
		}
	}
	// npm virtuals of each visibility over the private hosted repository,
	// deploying to it: read and written on the virtual's behalf, so the
	// cells follow the virtual's visibility and token listing.
	for _, v := range vis {
		for _, suffix := range []string{"", "-listed"} {
			name := "npmv-" + strings.ToLower(v.String()) + suffix
			child, err := store.VirtualChild(enum.FormatNpm, store.VirtualInput{
				Upstreams: []store.VirtualUpstreamInput{{Repository: "npm-private"}}, DeployTo: &[]string{"npm-private"}[0]})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: "acme", Name: name, Format: enum.FormatNpm,
				Kind: enum.KindVirtual, Visibility: v, Child: child}); err != nil {
				t.Fatal(err)
			}
			if suffix != "" {
				m.restricted[name] = true
			}
		}
	}
	var listed []string
	for name := range m.restricted {
		listed = append(listed, name)
	}
	sc := func(s ...enum.TokenScope) []enum.TokenScope { return s }
	mint := func(ns, name string, spec auth.TokenSpec) string { s, _ := e.mint(ns, name, spec); return s }
	m.callers = []caller{
		{"anonymous", ""},
		{"garbage", "arp_not-a-token"},
		{"admin", adminToken},
		{"read", mint("acme", "read", auth.TokenSpec{Scopes: sc(enum.TokenScopeRead)})},
		{"write", mint("acme", "write", auth.TokenSpec{Scopes: sc(enum.TokenScopeWrite)})},
		{"delete", mint("acme", "delete", auth.TokenSpec{Scopes: sc(enum.TokenScopeDelete)})},
		{"nsadmin", mint("acme", "nsadmin", auth.TokenSpec{Scopes: sc(enum.TokenScopeAdmin)})},
		{"other", mint("other", "other", auth.TokenSpec{Scopes: sc(enum.TokenScopeAdmin)})},
		{"restricted", mint("acme", "restricted", auth.TokenSpec{Scopes: sc(enum.TokenScopeWrite), Repositories: listed})},
	}
	exp := e.clock.Now().Add(time.Hour)
	m.callers = append(m.callers, caller{"expired", mint("acme", "expired", auth.TokenSpec{Scopes: sc(enum.TokenScopeAdmin), ExpiresAt: &exp})})
	revoked, tok := e.mint("acme", "revoked", auth.TokenSpec{Scopes: sc(enum.TokenScopeAdmin)})
	if _, err := e.authn.RevokeToken(e.ctx, auth.AdminPrincipal(""), auth.NamespaceOf(e.ns["acme"]), tok.ID); err != nil {
		t.Fatal(err)
	}
	m.callers = append(m.callers, caller{"revoked", revoked})
	e.clock.advance(2 * time.Hour) // "expired" is now past its expiry
	return m
}

// TestAccessMatrix: every caller × visibility × operation × protocol,
// asserting the status and the protocol's own error format and challenge.
func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	cells := 0
	for _, c := range m.callers {
		for _, v := range enum.VisibilityValues() {
			for _, suffix := range []string{"", "-listed"} {
				s := strings.ToLower(v.String()) + suffix
				for _, o := range []op{pull, push, del} {
					name := fmt.Sprintf("%s/%s/%s", c.name, s, o)
					want := expect(c.name, v, o, suffix != "")
					m.checkOCI(t, name, c, "oci-"+s, o, want)
					m.checkNpm(t, name, c, "npm-"+s, o, want, http.StatusConflict)
					// Through a virtual, an allowed delete is refused.
					m.checkNpm(t, name, c, "npmv-"+s, o, want, http.StatusMethodNotAllowed)
					if o != del { // Maven has no delete
						m.checkMaven(t, name, c, "mvn-"+s, o, want, cells)
					}
					cells++
				}
			}
		}
	}
	t.Logf("%d matrix cells × 3 protocols (Maven without delete) and npm virtuals", cells)
}

func (m *matrix) checkOCI(t *testing.T, cell string, c caller, repo string, o op, want string) {
	t.Helper()
	name := "acme/" + repo + "/img"
	var r response
	var okStatus int
	var okCode string
	authz := ""
	if c.secret != "" {
		authz = basic(c.secret)
	}
	switch o {
	case pull:
		r, okStatus = m.do(http.MethodGet, "/v2/"+name+"/manifests/v1", authz, nil), http.StatusOK
	case push:
		r, okStatus = m.do(http.MethodPost, "/v2/"+name+"/blobs/uploads/", authz, nil), http.StatusAccepted
	case del:
		// An unknown tag: allowed callers learn it is unknown.
		r, okStatus, okCode = m.do(http.MethodDelete, "/v2/"+name+"/manifests/nope", authz, nil), http.StatusNotFound, "MANIFEST_UNKNOWN"
	}
	switch want {
	case "ok":
		if r.status != okStatus || (okCode != "" && ociError(r.body) != okCode) {
			t.Errorf("OCI %s: %d %s, want %d %s", cell, r.status, r.body, okStatus, okCode)
		}
	case "401":
		scope := map[op]string{pull: "pull", push: "pull,push", del: "delete"}[o]
		wantChallenge := fmt.Sprintf(`Bearer realm="%s/v2/token",service="artifact-registry",scope="repository:%s:%s"`, m.url, name, scope)
		if r.status != 401 || ociError(r.body) != "UNAUTHORIZED" || (c.secret == "" && r.header.Get("WWW-Authenticate") != wantChallenge) ||
			!strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer realm="`) {
			t.Errorf("OCI %s: %d %q %s, want 401 UNAUTHORIZED with %s", cell, r.status, r.header.Get("WWW-Authenticate"), r.body, wantChallenge)
		}
	case "403":
		if r.status != 403 || ociError(r.body) != "DENIED" {
			t.Errorf("OCI %s: %d %s, want 403 DENIED", cell, r.status, r.body)
		}
	}
}

func (m *matrix) checkNpm(t *testing.T, cell string, c caller, repo string, o op, want string, delStatus int) {
	t.Helper()
	reg := "/npm/acme/" + repo + "/"
	authz := ""
	if c.secret != "" {
		authz = bearer(c.secret)
	}
	var r response
	var okStatus int
	switch o {
	case pull:
		r, okStatus = m.do(http.MethodGet, reg+"pkg", authz, nil), http.StatusOK
	case push:
		r, okStatus = m.do(http.MethodPut, reg+"-/package/pkg/dist-tags/stable", authz, []byte(`"1.0.0"`), "Content-Type", "application/json"), http.StatusCreated
	case del:
		// A stale revision: allowed callers get the revision conflict.
		r, okStatus = m.do(http.MethodDelete, reg+"pkg/-rev/0-stale", authz, nil), delStatus
	}
	msg, isErr := npmError(r.body)
	switch want {
	case "ok":
		if r.status != okStatus || (okStatus >= 400 && !isErr) {
			t.Errorf("npm %s: %d %s, want %d", cell, r.status, r.body, okStatus)
		}
	case "401":
		if r.status != 401 || !isErr || r.header.Get("WWW-Authenticate") != auth.NpmChallenge {
			t.Errorf("npm %s: %d %q %s, want 401 {\"error\"} with %s", cell, r.status, r.header.Get("WWW-Authenticate"), r.body, auth.NpmChallenge)
		}
	case "403":
		if r.status != 403 || !isErr || msg == "" {
			t.Errorf("npm %s: %d %s, want 403 {\"error\"}", cell, r.status, r.body)
		}
	}
}

func (m *matrix) checkMaven(t *testing.T, cell string, c caller, repo string, o op, want string, n int) {
	t.Helper()
	authz := ""
	if c.secret != "" {
		authz = basic(c.secret)
	}
	var r response
	var okStatus int
	switch o {
	case pull:
		r, okStatus = m.do(http.MethodGet, mavenPom(repo, "1.0"), authz, nil), http.StatusOK
	case push:
		v := fmt.Sprintf("2.%d", n) // a new release per cell
		r, okStatus = m.do(http.MethodPut, mavenPom(repo, v), authz, pom(v)), http.StatusCreated
	}
	switch want {
	case "ok":
		if r.status != okStatus {
			t.Errorf("Maven %s: %d %s, want %d", cell, r.status, r.body, okStatus)
		}
	case "401":
		if r.status != 401 || r.header.Get("WWW-Authenticate") != auth.BasicChallenge || strings.TrimSpace(r.body) == "" {
			t.Errorf("Maven %s: %d %q %s, want 401 with %s", cell, r.status, r.header.Get("WWW-Authenticate"), r.body, auth.BasicChallenge)
		}
	case "403":
		if r.status != 403 || strings.TrimSpace(r.body) == "" {
			t.Errorf("Maven %s: %d %s, want 403 with a reason", cell, r.status, r.body)
		}
	}
}
