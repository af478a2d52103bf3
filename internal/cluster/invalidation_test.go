package cluster

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// testInvalidation changes, through one instance's GraphQL API, what the
// other instances may have cached or just checked (a token revoked, the
// namespace suspended, a repository made private) and checks that each of
// them enforces the change within the documented bound (1 s): the
// invalidation travels between the serve processes through PostgreSQL,
// not through this test.
func testInvalidation(t *testing.T, c *Cluster, writeToken string) {
	ctx := context.Background()
	var out struct {
		CreateAccessToken struct {
			Secret string
			Token  struct{ ID string }
		} `json:"createAccessToken"`
	}
	must(t, c.GraphQL(ctx, c.URL, c.AdminToken,
		`mutation { createAccessToken(input: {namespace: "cl", name: "short-lived", scopes: [READ]}) { secret token { id } } }`,
		nil, &out))
	read := func(secret string) func(i int) int {
		return func(i int) int { return c.status(t, i, http.MethodGet, "/v2/cl/oci/cached/tags/list", secret) }
	}
	// Cached now on every instance: 404 (no such image), not 401.
	enforced(t, c, "revoking a token", http.StatusNotFound, read(out.CreateAccessToken.Secret), func() {
		must(t, c.GraphQL(ctx, c.Instance(0).URL, c.AdminToken,
			`mutation($id: ID!) { revokeAccessToken(input: {namespace: "cl", id: $id}) { token { revokedAt } } }`,
			map[string]any{"id": out.CreateAccessToken.Token.ID}, nil))
	}, http.StatusUnauthorized)

	write := func(i int) int {
		return c.status(t, i, http.MethodPost, "/v2/cl/oci/suspended/blobs/uploads/", writeToken)
	}
	enforced(t, c, "suspending the namespace", http.StatusAccepted, write, func() {
		must(t, c.GraphQL(ctx, c.Instance(0).URL, c.AdminToken,
			`mutation { setNamespaceCondition(slug: "cl", condition: SUSPENDED, active: true) { namespace { slug } } }`, nil, nil))
	}, http.StatusForbidden)
	if code := read(writeToken)(1); code != http.StatusNotFound {
		t.Errorf("a read in the suspended namespace answered %d, want 404 (reads are served)", code)
	}
	must(t, c.GraphQL(ctx, c.Instance(0).URL, c.AdminToken,
		`mutation { setNamespaceCondition(slug: "cl", condition: SUSPENDED, active: false) { namespace { slug } } }`, nil, nil))

	anonymous := func(i int) int {
		return c.status(t, i, http.MethodGet, "/maven/cl/snapshots/org/example/probe/1.0/probe-1.0.pom", "")
	}
	enforced(t, c, "making a repository private", http.StatusNotFound, anonymous, func() {
		must(t, c.GraphQL(ctx, c.Instance(0).URL, c.AdminToken,
			`mutation { updateRepository(input: {namespace: "cl", name: "snapshots", visibility: PRIVATE}) { repository { name } } }`, nil, nil))
	}, http.StatusUnauthorized)
}

// enforced checks that probe answers before on instances 1.., applies
// change through instance 0, and waits for every other instance to answer
// after, failing past 1 s.
func enforced(t *testing.T, c *Cluster, what string, before int, probe func(i int) int, change func(), after int) {
	t.Helper()
	for i := 1; i < c.Instances(); i++ {
		if code := probe(i); code != before {
			t.Fatalf("before %s: instance %d answered %d, want %d", what, i, code, before)
		}
	}
	change()
	changed := time.Now()
	for i := 1; i < c.Instances(); i++ {
		for {
			code := probe(i)
			if code == after {
				break
			}
			if time.Since(changed) > time.Second {
				t.Fatalf("instance %d still answers %d %s after %s on instance 0", i, code, time.Since(changed), what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("instance %d enforces %s %s after it was done on instance 0", i, what, time.Since(changed).Round(time.Millisecond))
	}
}

// status sends one request to instance i, as secret (basic auth) or
// anonymously, and returns the status code.
func (c *Cluster) status(t *testing.T, i int, method, path, secret string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, c.Instance(i).URL+path, nil)
	must(t, err)
	if secret != "" {
		req.SetBasicAuth("ci", secret)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
