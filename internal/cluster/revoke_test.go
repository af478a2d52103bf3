package cluster

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// testRevocation revokes a token through one instance's GraphQL API while
// the other instances have it cached, and checks that each of them refuses
// it within the documented bound (1 s): the invalidation travels between
// the serve processes through PostgreSQL, not through this test.
func testRevocation(t *testing.T, c *Cluster) {
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
	secret := out.CreateAccessToken.Secret
	ping := func(i int) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Instance(i).URL+"/v2/cl/oci/cached/tags/list", nil)
		must(t, err)
		req.SetBasicAuth("ci", secret)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := 1; i < c.Instances(); i++ {
		if code := ping(i); code == http.StatusUnauthorized { // cached now: 404 (no such image), not 401
			t.Fatalf("instance %d refused the new token", i)
		}
	}
	must(t, c.GraphQL(ctx, c.Instance(0).URL, c.AdminToken,
		`mutation($id: ID!) { revokeAccessToken(input: {namespace: "cl", id: $id}) { token { revokedAt } } }`,
		map[string]any{"id": out.CreateAccessToken.Token.ID}, nil))
	revoked := time.Now()
	for i := 1; i < c.Instances(); i++ {
		for ping(i) != http.StatusUnauthorized {
			if time.Since(revoked) > time.Second {
				t.Fatalf("instance %d still accepts the token revoked on instance 0 %s ago", i, time.Since(revoked))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("instance %d refuses the token %s after the revocation", i, time.Since(revoked).Round(time.Millisecond))
	}
}
