package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// anonymousToken fetches a pull token of a public image and returns it
// with its kid.
func anonymousToken(t *testing.T, st *store.Store) (token, kid string) {
	t.Helper()
	a := auth.New(st, auth.Options{})
	r := httptest.NewRequest(http.MethodGet, "/v2/token?scope=repository:acme/pub/app:pull", nil)
	w := httptest.NewRecorder()
	a.TokenHandler(auth.ContainerResolver(st)).ServeHTTP(w, r)
	var body struct{ Token string }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 200 {
		t.Fatalf("token endpoint: %d %s", w.Code, w.Body)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(body.Token, ".")[0])
	var h struct{ Kid string }
	if err := json.Unmarshal(raw, &h); err != nil || h.Kid == "" {
		t.Fatalf("header %s: %v", raw, err)
	}
	return body.Token, h.Kid
}

// `admin signing-key rotate` makes a new key current for new instances;
// tokens of the previous key keep working.
func TestAdminSigningKeyRotate(t *testing.T) {
	ctx := context.Background()
	bin := buildBinary(t)
	dbURL := testdb.NewURL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool, objstore.NewMem(), store.Options{})
	if _, err := st.CreateNamespace(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRepository(ctx, store.NewRepository{Namespace: "acme", Name: "pub", Format: enum.FormatOCI,
		Kind: enum.KindHosted, Visibility: enum.VisibilityPublic}); err != nil {
		t.Fatal(err)
	}
	before, oldKid := anonymousToken(t, st)

	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(cmd.Environ(), "ARTIFACT_REGISTRY_ADMIN_TOKEN=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("admin", "signing-key", "rotate", "--database-url", dbURL)
	if err != nil {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	_, newKid := anonymousToken(t, st)
	if newKid == oldKid || !strings.Contains(out, "signing key "+newKid+" is current") {
		t.Fatalf("kid %s after the rotation (before %s); output %s", newKid, oldKid, out)
	}
	p, err := auth.New(st, auth.Options{}).Authenticate(bearerRequest(before))
	if err != nil || !p.IsAnonymous() {
		t.Fatalf("a token of the previous key after the rotation: %v", err)
	}
	if out, err := run("admin", "signing-key"); err == nil {
		t.Fatalf("incomplete command accepted: %s", out)
	}
}

func bearerRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v2/", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// serve refuses a short admin token before it starts anything.
func TestServeRefusesShortAdminToken(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen", "127.0.0.1:0")
	cmd.Env = append(cmd.Environ(), "ARTIFACT_REGISTRY_ADMIN_TOKEN=too-short-a-secret")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "at least 32") || strings.Contains(string(out), "too-short-a-secret") {
		t.Fatalf("serve with a short admin token: %v\n%s", err, out)
	}
}
