package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
)

// endlessBody is a request body of n bytes that are never all in memory;
// it counts what the server consumed.
type endlessBody struct {
	left int64
	read atomic.Int64
}

func (b *endlessBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("endlessBody: exhausted")
	}
	n := min(int64(len(p)), b.left)
	for i := range p[:n] {
		p[i] = ' '
	}
	b.left -= n
	b.read.Add(n)
	return int(n), nil
}

func (b *endlessBody) Close() error { return nil }

// serveDirect runs the router in process, so what the handler consumed of
// a body is exactly what the body reports (no socket buffers between).
func (a *testAPI) serveDirect(req *http.Request) (*httptest.ResponseRecorder, *gqlResponse) {
	a.t.Helper()
	rec := httptest.NewRecorder()
	a.srv.Config.Handler.ServeHTTP(rec, req)
	out := &gqlResponse{Status: rec.Code}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		a.t.Fatalf("response is not JSON (%d): %s", rec.Code, rec.Body.Bytes())
	}
	return rec, out
}

// TestRequestSizeLimits: a body or a query string over the limit is refused
// with 413/414 and REQUEST_TOO_LARGE, having read no more than the limit.
func TestRequestSizeLimits(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)

	// A chunked body (no Content-Length) of 64 MiB: the handler stops
	// reading at the limit.
	body := &endlessBody{left: 64 << 20}
	req := httptest.NewRequest(http.MethodPost, "/graphql", body)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	_, r := a.serveDirect(req)
	if r.Status != http.StatusRequestEntityTooLarge || r.code() != CodeRequestTooLarge {
		t.Fatalf("chunked body: %d %+v", r.Status, r.Errors)
	}
	if got := body.read.Load(); got > DefaultMaxRequestBytes+1 {
		t.Fatalf("the handler read %d bytes of the body, limit %d", got, DefaultMaxRequestBytes)
	}

	// A declared length over the limit is refused before any byte is read.
	body = &endlessBody{left: DefaultMaxRequestBytes + 1}
	req = httptest.NewRequest(http.MethodPost, "/graphql", body)
	req.ContentLength = DefaultMaxRequestBytes + 1
	req.Header.Set("Content-Type", "application/json")
	if _, r := a.serveDirect(req); r.Status != http.StatusRequestEntityTooLarge || r.code() != CodeRequestTooLarge || body.read.Load() != 0 {
		t.Fatalf("declared length: %d %+v, read %d", r.Status, r.Errors, body.read.Load())
	}

	// Just under the limit is served: whitespace costs no token.
	q, _ := json.Marshal(map[string]any{"query": "{ viewer { kind } }"})
	padded := string(q[:len(q)-1]) + strings.Repeat(" ", DefaultMaxRequestBytes-len(q)) + "}"
	req = httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(padded))
	req.Header.Set("Content-Type", "application/json")
	if _, r := a.serveDirect(req); r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("body at the limit: %d %+v", r.Status, r.Errors)
	}

	// One byte over through a real connection.
	over := string(q[:len(q)-1]) + strings.Repeat(" ", DefaultMaxRequestBytes-len(q)+1) + "}"
	req, _ = http.NewRequest(http.MethodPost, a.srv.URL+"/graphql", strings.NewReader(over))
	req.Header.Set("Content-Type", "application/json")
	if r := a.send(req); r.Status != http.StatusRequestEntityTooLarge || r.code() != CodeRequestTooLarge {
		t.Fatalf("body one byte over: %d %+v", r.Status, r.Errors)
	}

	// GET: the query string is bounded alike.
	long := url.Values{"query": {"{ viewer { kind } }" + strings.Repeat(" ", DefaultMaxRequestBytes)}}
	req = httptest.NewRequest(http.MethodGet, "/graphql?"+long.Encode(), nil)
	if _, r := a.serveDirect(req); r.Status != http.StatusRequestURITooLong || r.code() != CodeRequestTooLarge {
		t.Fatalf("long query string: %d %+v", r.Status, r.Errors)
	}
}

// TestHostileDocumentsRefusedBeforeValidation: the documents that cost
// seconds of validation CPU are refused by the document limits, with a
// code, before gqlgen validates them. The log shows how long each took.
func TestHostileDocumentsRefusedBeforeValidation(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	var aliases strings.Builder
	aliases.WriteString("{")
	for i := range 50_000 {
		fmt.Fprintf(&aliases, " a%d: __typename", i)
	}
	aliases.WriteString(" }")
	// fan: ten fragments, each spreading the next twice: 1,024 copies.
	var fan strings.Builder
	fan.WriteString("{ ...F0 }")
	for i := range 10 {
		fmt.Fprintf(&fan, " fragment F%d on Query { ...F%d ...F%d }", i, i+1, i+1)
	}
	fan.WriteString(" fragment F10 on Query { viewer { kind } }")

	var distinct strings.Builder
	distinct.WriteString("{")
	for i := range DefaultMaxFields + 1 {
		fmt.Fprintf(&distinct, " a%d: __typename", i)
	}
	distinct.WriteString(" }")

	cases := []struct {
		name, query, code string
	}{
		// 20,000 repeated fields in 100 KB (25 s of CPU before).
		{"20000 repeated fields", "{ viewer {" + strings.Repeat(" name", 20_000) + " } }", CodeTokenLimit},
		// 50,000 aliases (12 s and 175 MB before).
		{"50000 aliases", aliases.String(), CodeTokenLimit},
		// Under the token limit, still quadratic: 2,000 repeats of a
		// field with a sub-selection (about 8,000 tokens).
		{"2000 repeated objects", "{" + strings.Repeat(" viewer { name }", 2_000) + " }", CodeFieldLimit},
		// Repeats spread over merged sub-selections: 20 × 20 "name".
		{"merged sub-selections", "{" + strings.Repeat(" viewer {"+strings.Repeat(" name", 20)+" }", 20) + " }", CodeFieldLimit},
		// More distinct fields than the limit, under the token limit.
		{"2001 distinct aliases", distinct.String(), CodeFieldLimit},
		// A small document whose fragments expand to thousands of fields.
		{"fragment fan-out", fan.String(), CodeFieldLimit},
	}
	for _, c := range cases {
		start := time.Now()
		r := a.expectError("", c.query, nil, c.code)
		t.Logf("%s (%d bytes): %s in %v: %s", c.name, len(c.query), c.code, time.Since(start), r.Errors[0].Message)
	}
	// What stays allowed: a name asked a few times, the introspection query.
	if r := a.post("", "{ viewer { kind name } ...V ...V } fragment V on Query { viewer { kind } }", nil); len(r.Errors) > 0 {
		t.Fatalf("repeated through fragments: %+v", r.Errors)
	}
	if r := a.post("", introspectionQuery, nil); len(r.Errors) > 0 {
		t.Fatalf("introspection: %+v", r.Errors)
	}
}

// TestOperationTimeout: an operation still running at its deadline is
// stopped (its database calls are cancelled) and answers TIMEOUT.
func TestOperationTimeout(t *testing.T) {
	t.Parallel()
	a := newTestAPIWith(t, Options{OperationTimeout: time.Nanosecond})
	r := a.expectError(adminToken, `{ namespaces { edges { node { slug } } } }`, nil, CodeTimeout)
	if !contains(r.Errors[0].Message, "time limit") {
		t.Fatalf("message: %s", r.Errors[0].Message)
	}
}

// TestListComplexityAttack: aliases over a public npm repository asking
// for every package's versions cost each list its page size and are
// refused; before, npmPackages and versions cost 1 and the same document
// returned 75 MB.
func TestListComplexityAttack(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	a.createNamespace("atk")
	a.createRepository("atk", "pub", "NPM", "PUBLIC")
	attack := func(n int) string {
		var b strings.Builder
		b.WriteString("query {")
		for i := range n {
			fmt.Fprintf(&b, ` r%d: repository(namespace: "atk", name: "pub") { ...P }`, i)
		}
		b.WriteString(` } fragment P on Repository { npmPackages(first: 100) { edges { node { name
			versions(first: 100) { edges { node { version } } } } } } }`)
		return b.String()
	}
	r := a.expectError("", attack(100), nil, "COMPLEXITY_LIMIT_EXCEEDED")
	t.Logf("100 aliases: %s", r.Errors[0].Message)
	// The 400-alias shape also exceeds the field limit, checked first.
	a.expectError("", attack(400), nil, CodeFieldLimit)
	// One alias is a page of a page: allowed.
	if r := a.post("", attack(1), nil); len(r.Errors) > 0 {
		t.Fatalf("one alias: %+v", r.Errors)
	}
}

// TestListsWithoutPagesAreCapped: a list that is not paginated never
// returns more than the bound its cost assumes.
func TestListsWithoutPagesAreCapped(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	nsID := a.createNamespace("caps")
	repoID := a.createRepository("caps", "img", "OCI", "PRIVATE")
	img := a.addImage(nsID, repoID, "app")
	m, _ := a.addManifest(nsID, img, "caps-m", 10)
	for i := range maxManifestTags + 1 {
		a.addTag(nsID, img, m, fmt.Sprintf("t%03d", i))
	}
	var out struct {
		Repository struct {
			Image struct {
				Manifests struct {
					Edges []struct{ Node struct{ Tags []string } }
				}
			}
		}
	}
	a.admin(`{ repository(namespace: "caps", name: "img") { image(name: "app") { manifests { edges { node { tags } } } } } }`, nil, &out)
	if e := out.Repository.Image.Manifests.Edges; len(e) != 1 || len(e[0].Node.Tags) != maxManifestTags {
		t.Fatalf("manifest tags: %+v", e)
	}
}

// TestEveryListHasACost walks the schema: every field returning a list or
// a connection has a complexity function, and it grows with its page size
// or its bound. A connection's edges are paid for by the connection field.
func TestEveryListHasACost(t *testing.T) {
	t.Parallel()
	cfg := Config{Resolvers: &Resolver{}}
	setComplexity(&cfg.Complexity)
	es := NewExecutableSchema(cfg)
	ctx := context.Background()
	checked := 0
	for _, typ := range es.Schema().Types {
		if typ.Kind != ast.Object || strings.HasPrefix(typ.Name, "__") {
			continue
		}
		for _, f := range typ.Fields {
			if strings.HasPrefix(f.Name, "__") || !returnsList(f.Type) {
				continue
			}
			if strings.HasSuffix(typ.Name, "Connection") && f.Name == "edges" {
				continue
			}
			checked++
			name := typ.Name + "." + f.Name
			cost, ok := es.Complexity(ctx, typ.Name, f.Name, 10, map[string]any{})
			if !ok {
				t.Errorf("%s returns a list but has no complexity function (graph/complexity.go)", name)
				continue
			}
			if cost <= 10 {
				t.Errorf("%s costs %d for children costing 10: its size is not counted", name, cost)
			}
			if f.Arguments.ForName("first") != nil {
				if cost, _ := es.Complexity(ctx, typ.Name, f.Name, 10, map[string]any{"first": 100}); cost < 1000 {
					t.Errorf("%s(first: 100) costs %d for children costing 10", name, cost)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d list fields found: the walk is broken", checked)
	}
}

func returnsList(t *ast.Type) bool {
	return t.Elem != nil || strings.HasSuffix(t.Name(), "Connection")
}

// TestComplexityCannotOverflow: nested connections with absurd page sizes
// saturate instead of wrapping below the limit.
func TestComplexityCannotOverflow(t *testing.T) {
	t.Parallel()
	huge := 1 << 40
	c := pageCost(pageCost(pageCost(pageCost(1, &huge), &huge), &huge), &huge)
	if c <= 0 || c < DefaultMaxComplexity {
		t.Fatalf("cost %d", c)
	}
	if got := listCost(1<<62, 1000); got <= 0 {
		t.Fatalf("listCost overflowed: %d", got)
	}
}
