package gc

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/lifecycle"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// TestCacheEvict: gc:cache-evict evicts the cached images of a remote not
// pulled within the namespace's KEEP_DOWNLOADED_WITHIN days, keeps the
// others, detaches the evicted blobs (GC candidates, nothing deleted from
// storage), leaves a namespace without the rule alone and stops when the
// kill switch is off.
func TestCacheEvict(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	on := true
	e := newEnv(t, Config{KillSwitch: switchFunc(func() (bool, error) { mu.Lock(); defer mu.Unlock(); return on, nil })})
	cs := container.New(e.st)
	policy := lifecycle.New(e.st, lifecycle.Options{})

	cache := func(slug, image string) [32]byte {
		t.Helper()
		tg, err := cs.ResolveTarget(e.ctx, slug, "mirror", image)
		if err != nil {
			t.Fatal(err)
		}
		p := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":2},"layers":[]}`,
			store.FormatSHA256(sha256.Sum256([]byte(slug+image)))))
		d := sha256.Sum256(p)
		if _, _, err := cs.CacheRemoteManifest(e.ctx, tg, container.RemoteManifestPut{Digest: d,
			MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: p, Tag: "latest"}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	setup := func(slug string, days int) {
		t.Helper()
		ns := testsupport.Namespace(t, e.st, slug)
		child, err := cs.NewRemote(container.RemoteInput{URL: "http://127.0.0.1:5999"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: slug, Name: "mirror", Format: enum.FormatOCI,
			Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate, Child: child}); err != nil {
			t.Fatal(err)
		}
		if days > 0 {
			if _, err := policy.Set(e.ctx, lifecycle.Scope{NamespaceID: ns.ID, NamespaceSlug: slug},
				lifecycle.Input{Enabled: true, MinAgeDays: 1, Rules: []lifecycle.Rule{{Type: lifecycle.KeepDownloadedWithin, Days: &days}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	setup("evicting", 2)
	setup("keeping", 0)
	old := cache("evicting", "old")
	cache("keeping", "old")
	e.clock.Advance(3 * 24 * time.Hour)
	cache("evicting", "fresh")

	// The kill switch stops the run before anything is evicted.
	mu.Lock()
	on = false
	mu.Unlock()
	res, err := e.g.CacheEvict(e.ctx)
	if err != nil || !res.Stopped || res.Images != 0 {
		t.Fatalf("stopped run: %+v %v", res, err)
	}
	mu.Lock()
	on = true
	mu.Unlock()

	res, err = e.g.CacheEvict(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Images != 1 || res.Candidates != 1 || res.Namespaces != 1 {
		t.Fatalf("run: %+v, want one image of one namespace evicted", res)
	}
	names := func(slug string) []string {
		var out []string
		rows, err := e.pool.Query(e.ctx, `SELECT i.name FROM container_remote_images i JOIN namespaces n ON n.id = i.namespace_id
			WHERE n.slug = $1 ORDER BY i.name`, slug)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	if got := names("evicting"); len(got) != 1 || got[0] != "fresh" {
		t.Fatalf("evicting namespace keeps %v, want [fresh]", got)
	}
	if got := names("keeping"); len(got) != 1 {
		t.Fatalf("a namespace without the rule lost its cache: %v", got)
	}
	var candidates int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM gc_blob_review_queue WHERE sha256 = $1`, old[:]).Scan(&candidates); err != nil {
		t.Fatal(err)
	}
	if candidates != 1 {
		t.Fatalf("the evicted manifest's blob is not a candidate (%d)", candidates)
	}
	// The bytes are still in storage: only gc:cleanup deletes them.
	var nsID uuid.UUID
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM namespaces WHERE slug = 'evicting'`).Scan(&nsID); err != nil {
		t.Fatal(err)
	}
	b, err := e.st.StatBlob(e.ctx, nsID, old)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := e.st.OpenBlobObject(e.ctx, b, 0, -1)
	if err != nil {
		t.Fatalf("evicted bytes gone from storage: %v", err)
	}
	rc.Close()
	// A second run has nothing left to do.
	if res, err := e.g.CacheEvict(e.ctx); err != nil || res.Images != 0 {
		t.Fatalf("second run: %+v %v", res, err)
	}
}

// TestCacheEvictNpm: gc:cache-evict evicts, in a namespace whose only
// cache is an npm remote, the cached npm versions not downloaded within
// KEEP_DOWNLOADED_WITHIN days: their tarballs are detached (GC
// candidates, bytes still in storage), the packuments stay, a version
// downloaded within the window stays, and a namespace without the rule
// keeps everything.
func TestCacheEvictNpm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	ns := npmstore.New(e.st)
	policy := lifecycle.New(e.st, lifecycle.Options{})

	setup := func(slug string, days int) *npmstore.Repository {
		t.Helper()
		n := testsupport.Namespace(t, e.st, slug)
		child, err := ns.NewRemote(nil, npmstore.RemoteInput{URL: "http://127.0.0.1:5999"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: slug, Name: "npmjs", Format: enum.FormatNpm,
			Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate, Child: child}); err != nil {
			t.Fatal(err)
		}
		if days > 0 {
			if _, err := policy.Set(e.ctx, lifecycle.Scope{NamespaceID: n.ID, NamespaceSlug: slug},
				lifecycle.Input{Enabled: true, MinAgeDays: 1, Rules: []lifecycle.Rule{{Type: lifecycle.KeepDownloadedWithin, Days: &days}}}); err != nil {
				t.Fatal(err)
			}
		}
		repo, err := ns.ResolveRegistry(e.ctx, slug, "npmjs")
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
	cache := func(repo *npmstore.Repository, name string) [32]byte {
		t.Helper()
		if _, _, err := ns.CacheRemotePackument(e.ctx, repo, npmstore.RemotePackumentPut{Name: name,
			Body: []byte(fmt.Sprintf(`{"name":%q,"versions":{"1.0.0":{}}}`, name))}); err != nil {
			t.Fatal(err)
		}
		body := []byte(repo.NamespaceSlug + " tarball of " + name)
		staged, err := ns.StageRemoteTarball(e.ctx, repo, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := ns.CommitRemoteTarball(e.ctx, repo, npmstore.RemoteTarballPut{Name: name, Version: "1.0.0", FileName: name + "-1.0.0.tgz",
			PackageJSON: []byte(fmt.Sprintf(`{"name":%q,"version":"1.0.0"}`, name))}, staged); err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(body)
	}
	evicting := setup("npm-evicting", 2)
	keeping := setup("npm-keeping", 0)
	old := cache(evicting, "old")
	used := cache(evicting, "used")
	cache(keeping, "old")
	e.clock.Advance(3 * 24 * time.Hour)
	cache(evicting, "fresh")
	// "used" was installed yesterday: its download, folded, keeps it.
	tb, err := ns.RemoteTarball(e.ctx, evicting, "used", "used-1.0.0.tgz")
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.RecordRemoteRequests(e.ctx, []npmstore.RemoteRequest{{NamespaceID: evicting.NamespaceID, RemoteID: evicting.Remote.ID,
		Hit: true, PackageID: tb.PackageID, VersionID: tb.VersionID, At: e.clock.Now().Add(-24 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.FoldCounterDeltas(e.ctx, evicting.NamespaceID, 0, 0); err != nil {
		t.Fatal(err)
	}

	res, err := e.g.CacheEvict(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.NpmVersions != 1 || res.Images != 0 || res.Candidates != 1 || res.Namespaces != 1 {
		t.Fatalf("run: %+v, want one npm version of one namespace evicted", res)
	}
	for _, c := range []struct {
		repo    *npmstore.Repository
		name    string
		present bool
	}{{evicting, "old", false}, {evicting, "used", true}, {evicting, "fresh", true}, {keeping, "old", true}} {
		_, err := ns.RemoteTarball(e.ctx, c.repo, c.name, c.name+"-1.0.0.tgz")
		if c.present != (err == nil) {
			t.Errorf("%s/%s: tarball cached %v (%v), want %v", c.repo.NamespaceSlug, c.name, err == nil, err, c.present)
		}
		if p, err := ns.RemotePackument(e.ctx, c.repo, c.name); err != nil || p == nil {
			t.Errorf("%s/%s: packument gone: %v", c.repo.NamespaceSlug, c.name, err)
		}
	}
	var candidates int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2`,
		evicting.NamespaceID, old[:]).Scan(&candidates); err != nil {
		t.Fatal(err)
	}
	if candidates != 1 {
		t.Fatalf("the evicted tarball's blob is not a candidate (%d)", candidates)
	}
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2`,
		evicting.NamespaceID, used[:]).Scan(&candidates); err != nil || candidates != 0 {
		t.Fatalf("a kept tarball became a candidate: %d %v", candidates, err)
	}
	b, err := e.st.StatBlob(e.ctx, evicting.NamespaceID, old)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := e.st.OpenBlobObject(e.ctx, b, 0, -1)
	if err != nil {
		t.Fatalf("evicted bytes gone from storage: %v", err)
	}
	rc.Close()
	if res, err := e.g.CacheEvict(e.ctx); err != nil || res.NpmVersions != 0 {
		t.Fatalf("second run: %+v %v", res, err)
	}
}
