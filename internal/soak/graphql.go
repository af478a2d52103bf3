package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// gqlResult is a GraphQL response: data, or errors with extensions.code.
type gqlResult struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// graphql posts one query and decodes its data into out; a GraphQL error
// fails with "gql:<code>".
func (c *client) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fail("other", "encode query: %v", err)
	}
	r, err := c.do(ctx, http.MethodPost, "/graphql", body, []int{http.StatusOK}, "Content-Type", "application/json")
	if err != nil {
		return err
	}
	var res gqlResult
	if err := json.Unmarshal(r.body, &res); err != nil {
		return fail("mismatch", "graphql: decode %s: %v", snippet(r.body), err)
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		return fail("gql:"+e.Extensions.Code, "graphql: %s", e.Message)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res.Data, out); err != nil {
		return fail("mismatch", "graphql: decode data: %v", err)
	}
	return nil
}

// layout names what setup created.
type layout struct {
	namespace string
	oci       string
	npm       string
	maven     string
	token     string
}

// setup creates a namespace of its own for the run, one hosted repository
// per format and a WRITE token, through the API with the admin token.
func setup(ctx context.Context, admin *client, slug string) (layout, error) {
	l := layout{namespace: slug, oci: "images", npm: "js", maven: "releases"}
	if err := admin.graphql(ctx, `mutation($s: String!) { createNamespace(input: {slug: $s}) { namespace { id } } }`,
		map[string]any{"s": slug}, nil); err != nil {
		return l, fmt.Errorf("create namespace %s: %w", slug, err)
	}
	for name, format := range map[string]string{l.oci: "OCI", l.npm: "NPM", l.maven: "MAVEN"} {
		if err := admin.graphql(ctx, `mutation($ns: String!, $n: String!, $f: Format!) {
			createRepository(input: {namespace: $ns, name: $n, format: $f}) { repository { id } } }`,
			map[string]any{"ns": slug, "n": name, "f": format}, nil); err != nil {
			return l, fmt.Errorf("create repository %s/%s: %w", slug, name, err)
		}
	}
	var tok struct {
		CreateAccessToken struct{ Secret string } `json:"createAccessToken"`
	}
	if err := admin.graphql(ctx, `mutation($ns: String!) {
		createAccessToken(input: {namespace: $ns, name: "soak", scopes: [WRITE]}) { secret } }`,
		map[string]any{"ns": slug}, &tok); err != nil {
		return l, fmt.Errorf("create token in %s: %w", slug, err)
	}
	l.token = tok.CreateAccessToken.Secret
	return l, nil
}
