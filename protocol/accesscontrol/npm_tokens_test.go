package accesscontrol

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestNpmLoginAndTokens: npm's login, whoami, logout and token endpoints
// over real tokens, each refusal in npm's {"error"} form.
func TestNpmLoginAndTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.repo("js", enum.FormatNpm, enum.VisibilityPrivate)
	reg := "/npm/acme/js/"
	admin, _ := e.mint("acme", "ci-admin", auth.TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})
	write, _ := e.mint("acme", "ci-write", auth.TokenSpec{Scopes: scopes(enum.TokenScopeWrite)})
	other, _ := e.mint("other", "elsewhere", auth.TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})
	check := func(method, path, authz string, body string, want int, contains string) response {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		r := e.do(method, reg+path, authz, b, "Content-Type", "application/json")
		if r.status != want || !strings.Contains(r.body, contains) {
			t.Errorf("%s %s: %d %s, want %d containing %q", method, path, r.status, r.body, want, contains)
		}
		if r.status >= 400 {
			if _, ok := npmError(r.body); !ok {
				t.Errorf("%s %s: error body %s is not npm's {\"error\"}", method, path, r.body)
			}
		}
		return r
	}

	// Login: the password is the token, which comes back as the npm token;
	// a stale Authorization header does not get in the way.
	check("PUT", "-/user/org.couchdb.user:alice", "", `{"name":"alice","password":"`+write+`"}`, 201, `"token":"`+write+`"`)
	check("PUT", "-/user/org.couchdb.user:alice", bearer("arp_stale"), `{"name":"alice","password":"`+write+`"}`, 201, `"token":"`+write+`"`)
	check("PUT", "-/user/org.couchdb.user:alice", "", `{"name":"alice","password":"hunter2"}`, 401, "incorrect username or password")
	check("PUT", "-/user/org.couchdb.user:alice", "", `{"name":`, 400, "malformed JSON")
	check("GET", "-/whoami", bearer(write), "", 200, `"username":"ci-write"`)
	check("GET", "-/whoami", "", "", 401, "authentication required")
	check("GET", "-/whoami", bearer("arp_nope"), "", 401, "invalid token")

	// npm token list needs ADMIN of the registry's namespace.
	r := check("GET", "-/npm/v1/tokens", bearer(admin), "", 200, `"name":"ci-write"`)
	var list struct {
		Objects []struct{ Key, Token, Name string }
	}
	if err := json.Unmarshal([]byte(r.body), &list); err != nil || len(list.Objects) != 2 {
		t.Fatalf("token list: %v %s", err, r.body)
	}
	if strings.Contains(r.body, write) || strings.Contains(r.body, admin) {
		t.Fatal("token list shows a secret")
	}
	check("GET", "-/npm/v1/tokens", bearer(write), "", 403, "ADMIN")
	check("GET", "-/npm/v1/tokens", bearer(other), "", 403, "cannot")
	check("GET", "-/npm/v1/tokens", "", "", 401, "authentication required")

	// npm token create: the password confirms the caller's own token.
	check("POST", "-/npm/v1/tokens", bearer(admin), `{"name":"made","password":"`+write+`"}`, 401, "incorrect password")
	check("POST", "-/npm/v1/tokens", bearer(write), `{"name":"made","password":"`+write+`"}`, 403, "ADMIN")
	check("POST", "-/npm/v1/tokens", bearer(admin), `{"name":"made","password":"`+admin+`","cidr_whitelist":["10.0.0.0/8"]}`, 400, "CIDR")
	check("POST", "-/npm/v1/tokens", bearer(admin), `{"name":"made","password":"`+admin+`","expires":-1}`, 400, "expires")
	r = check("POST", "-/npm/v1/tokens", bearer(admin), `{"name":"made","password":"`+admin+`","packages_and_scopes_permission":"read-only","expires":30}`, 201, `"readonly":true`)
	var made struct{ Token, Key string }
	if err := json.Unmarshal([]byte(r.body), &made); err != nil || !strings.HasPrefix(made.Token, auth.SecretPrefix) {
		t.Fatalf("created token: %v %s", err, r.body)
	}
	check("POST", "-/npm/v1/tokens", bearer(admin), `{"name":"made","password":"`+admin+`"}`, 409, "made")
	// The new token reads this registry only, and cannot write.
	check("GET", "-/whoami", bearer(made.Token), "", 200, `"username":"made"`)
	check("PUT", "-/package/x/dist-tags/latest", bearer(made.Token), `"1.0.0"`, 403, "WRITE")

	// npm token revoke by id, then by value; both stop the token at once.
	check("DELETE", "-/npm/v1/tokens/token/"+made.Key, bearer(write), "", 403, "ADMIN")
	check("DELETE", "-/npm/v1/tokens/token/"+made.Key, bearer(admin), "", 200, "revoked")
	check("GET", "-/whoami", bearer(made.Token), "", 401, "revoked")
	check("DELETE", "-/npm/v1/tokens/token/not-a-key", bearer(admin), "", 404, "no such token")

	// Logout revokes the token it is called with; afterwards it is
	// refused, and a second logout with it succeeds (nothing left to do).
	check("DELETE", "-/user/token/"+url.PathEscape(write), bearer(write), "", 200, "Logged out")
	check("GET", "-/whoami", bearer(write), "", 401, "revoked")
	check("DELETE", "-/user/token/"+url.PathEscape(write), bearer(write), "", 200, "Logged out")
	// A token may not log another one out.
	check("DELETE", "-/user/token/"+url.PathEscape(admin), bearer(other), "", 403, "cannot")
	check("GET", "-/whoami", bearer(admin), "", 200, "ci-admin")
	check("DELETE", "-/user/token/"+url.PathEscape(admin), bearer(admin), "", 200, "Logged out")
	check("GET", "-/whoami", bearer(admin), "", 401, "revoked")
	if n := e.count(`SELECT count(*) FROM access_tokens WHERE revoked_at IS NOT NULL`); n != 3 {
		t.Errorf("%d revoked tokens, want 3", n)
	}
}

func (e *env) count(sql string) int {
	e.t.Helper()
	var n int
	if err := e.st.Pool().QueryRow(e.ctx, sql).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
