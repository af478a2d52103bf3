package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// GraphQL runs query with vars at base (c.URL or an instance's URL) as
// token, and decodes the response's data into out (may be nil). GraphQL
// errors are returned as an error.
func (c *Cluster) GraphQL(ctx context.Context, base, token, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("graphql: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("graphql: read response: %w", err)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string         `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("graphql: %s: %s", resp.Status, raw)
	}
	if len(r.Errors) > 0 {
		msgs := make([]string, len(r.Errors))
		for i, e := range r.Errors {
			msgs[i] = fmt.Sprintf("%s (%v)", e.Message, e.Extensions["code"])
		}
		return fmt.Errorf("graphql: %s", strings.Join(msgs, "; "))
	}
	if out != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

// CreateNamespace creates namespace slug as the admin.
func (c *Cluster) CreateNamespace(ctx context.Context, slug string) error {
	return c.GraphQL(ctx, c.URL, c.AdminToken,
		`mutation($s: String!) { createNamespace(input: {slug: $s}) { namespace { slug } } }`,
		map[string]any{"s": slug}, nil)
}

// CreateRepository creates a hosted repository as the admin; format and
// visibility are the GraphQL enum values (OCI, NPM, MAVEN, DOCKER;
// PUBLIC, PRIVATE, INTERNAL).
func (c *Cluster) CreateRepository(ctx context.Context, namespace, name, format, visibility string) error {
	return c.GraphQL(ctx, c.URL, c.AdminToken,
		`mutation($ns: String!, $n: String!, $f: Format!, $v: Visibility!) {
			createRepository(input: {namespace: $ns, name: $n, format: $f, visibility: $v}) { repository { name } } }`,
		map[string]any{"ns": namespace, "n": name, "f": format, "v": visibility}, nil)
}

// CreateToken creates an access token of namespace with scopes (READ,
// WRITE, DELETE, ADMIN) as the admin and returns its secret.
func (c *Cluster) CreateToken(ctx context.Context, namespace, name string, scopes ...string) (string, error) {
	var out struct {
		CreateAccessToken struct{ Secret string } `json:"createAccessToken"`
	}
	err := c.GraphQL(ctx, c.URL, c.AdminToken,
		`mutation($ns: String!, $n: String!, $s: [AccessTokenScope!]!) {
			createAccessToken(input: {namespace: $ns, name: $n, scopes: $s}) { secret } }`,
		map[string]any{"ns": namespace, "n": name, "s": scopes}, &out)
	if err != nil {
		return "", err
	}
	return out.CreateAccessToken.Secret, nil
}
