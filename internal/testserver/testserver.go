// Package testserver is for tests only: one registry server with every
// surface mounted as serve mounts it (internal/routes), over real
// PostgreSQL (internal/testdb) and a file bucket (internal/testsupport), with two namespaces and
// helpers to mint tokens, create repositories and push content through the
// protocols. The access-control and security suites share it.
package testserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/invalidate"
	"github.com/artifact-registry/artifact-registry/internal/routes"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// AdminToken is the super-user token of every test server.
const AdminToken = "access-matrix-admin-token"

// Namespaces every server starts with: the one under test and a stranger.
const (
	Home  = "acme"
	Other = "other"
)

// Options adjust a test server.
type Options struct {
	// Pool replaces the fresh test database (e.g. one pointing at a closed
	// port); no namespaces are created on it.
	Pool *pgxpool.Pool
	// FailureLimit is the authenticator's (auth.Options.FailureLimit).
	FailureLimit int
	// Objects replaces the file bucket (Instance shares it); RedirectDownloads
	// is the store's (store.Options.RedirectDownloads).
	Objects           *objstore.Store
	RedirectDownloads bool
	// Logger replaces the discarding logger of every surface.
	Logger *slog.Logger
	// Listen gives the authenticator an invalidate.Listener, run until the
	// test ends, as serve does; New returns once it is fresh.
	Listen bool
}

// Env is one running server.
type Env struct {
	T        testing.TB
	Ctx      context.Context
	Store    *store.Store
	Auth     *auth.Authenticator
	Listener *invalidate.Listener // with Options.Listen
	Clock    *fakeclock.Clock     // shared by the store and the authenticator
	URL      string
	Server   *httpserver.Server
	NS       map[string]*store.Namespace
}

// New starts a server for the test and stops it when the test ends.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx := context.Background()
	c := fakeclock.New(time.Now().UTC())
	st := testsupport.Store(t, testsupport.StoreOptions{Pool: opts.Pool, Objects: opts.Objects,
		Store: store.Options{Clock: c, RedirectDownloads: opts.RedirectDownloads}})
	log := opts.Logger
	if log == nil {
		log = testsupport.Discard()
	}
	var listener *invalidate.Listener
	if opts.Listen {
		listener = listen(t, st.Pool())
	}
	authn := auth.New(st, auth.Options{AdminToken: AdminToken, Clock: c, Logger: log, FailureLimit: opts.FailureLimit, Listener: listener})
	hs := httpserver.New(httpserver.Options{Logger: log})
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	npmOpts := npm.Options{Auth: authn, PublicURL: base, Logger: log}
	closeUpstreams := routes.Mount(hs.Router(), st, routes.Options{
		OCI:   oci.Options{Auth: authn, Logger: log},
		Npm:   npmOpts,
		Maven: maven.Options{Auth: authn, Logger: log},
		Graph: graph.Options{Auth: authn, Logger: log, NpmWriteHook: npm.WriteHook(npmOpts)},
	})
	srv.Config.Handler = hs.Handler()
	srv.Start()
	testsupport.CloseAtCleanup(t, closeUpstreams)
	t.Cleanup(srv.Close)
	e := &Env{T: t, Ctx: ctx, Store: st, Auth: authn, Listener: listener, Clock: c, URL: base, Server: hs, NS: map[string]*store.Namespace{}}
	if opts.Pool == nil {
		for _, slug := range []string{Home, Other} {
			e.NS[slug] = testsupport.Namespace(t, st, slug)
		}
	}
	return e
}

// Instance starts another server on e's database, with a pool of its own,
// e's bucket and a Listener: a second serve process of one deployment. Its
// NS are e's.
func (e *Env) Instance() *Env {
	e.T.Helper()
	pool, err := pgxpool.NewWithConfig(e.Ctx, e.Store.Pool().Config().Copy())
	if err != nil {
		e.T.Fatalf("pool of a second instance: %v", err)
	}
	e.T.Cleanup(pool.Close)
	o := New(e.T, Options{Pool: pool, Objects: e.Store.Objects(), Listen: true})
	maps.Copy(o.NS, e.NS)
	return o
}

// listen runs a Listener on pool's database until the test ends and
// waits until it is fresh.
func listen(t testing.TB, pool *pgxpool.Pool) *invalidate.Listener {
	t.Helper()
	l := invalidate.New(pool.Config().ConnConfig, invalidate.Options{Logger: testsupport.Discard()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(30 * time.Second); !l.Fresh(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the invalidation listener did not connect within 30s")
		}
	}
	return l
}

// Repo creates a hosted repository of the home namespace.
func (e *Env) Repo(name string, f enum.Format, v enum.Visibility) *store.Repository {
	e.T.Helper()
	return testsupport.Repository(e.T, e.Store, Home, name, f, v)
}

// Remote creates a container pull-through cache (OCI, no upstream
// credentials) of upstreamURL in the home namespace.
func (e *Env) Remote(name, upstreamURL string, v enum.Visibility) *store.Repository {
	e.T.Helper()
	child, err := container.New(e.Store).NewRemote(container.RemoteInput{URL: upstreamURL})
	if err != nil {
		e.T.Fatal(err)
	}
	r, err := e.Store.CreateRepository(e.Ctx, store.NewRepository{Namespace: Home, Name: name, Format: enum.FormatOCI,
		Kind: enum.KindRemote, Visibility: v, Child: child})
	if err != nil {
		e.T.Fatalf("create remote %s: %v", name, err)
	}
	return r
}

// NpmRemote creates an npm pull-through cache (no upstream credentials)
// of the registry at upstreamURL in the home namespace.
func (e *Env) NpmRemote(name, upstreamURL string, v enum.Visibility) *store.Repository {
	e.T.Helper()
	child, err := npmstore.New(e.Store).NewRemote(nil, npmstore.RemoteInput{URL: upstreamURL})
	if err != nil {
		e.T.Fatal(err)
	}
	r, err := e.Store.CreateRepository(e.Ctx, store.NewRepository{Namespace: Home, Name: name, Format: enum.FormatNpm,
		Kind: enum.KindRemote, Visibility: v, Child: child})
	if err != nil {
		e.T.Fatalf("create npm remote %s: %v", name, err)
	}
	return r
}

// Mint creates an access token of namespace ns as the super-user.
func (e *Env) Mint(ns, name string, spec auth.TokenSpec) (string, *store.AccessToken) {
	e.T.Helper()
	spec.Name = name
	tok, secret, err := e.Auth.CreateToken(e.Ctx, auth.AdminPrincipal(""), auth.NamespaceOf(e.NS[ns]), spec)
	if err != nil {
		e.T.Fatalf("mint %s: %v", name, err)
	}
	return secret, tok
}

// Response is what a request got back.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a request; authorization is the whole header value ("" none)
// and hdr alternates header names and values.
func (e *Env) Do(method, path, authorization string, body []byte, hdr ...string) Response {
	e.T.Helper()
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		e.T.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return Response{resp.StatusCode, resp.Header, string(b)}
}

// Basic is an HTTP Basic header value with the token as password.
func Basic(secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("ci:"+secret))
}

// Bearer is a bearer header value.
func Bearer(secret string) string { return "Bearer " + secret }
