package migrations_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

const accountingOwnerLookupVersion = 60

// hosted drives one hosted repository of each format through the inserts
// and deletes the accounting triggers see: blobs linked to images and
// manifests, npm versions, tarballs and packuments, Maven versions and
// files; first and second references to a digest, two in one statement,
// deletes of one reference and of the last.
func (r *accountingRun) hosted() {
	f, ns := r.f, r.ns
	cr := r.hostedRepository("hosted oci", 3, "container_repositories")
	img, img2 := r.id("hosted image"), r.id("hosted image2")
	r.ins("hosted image", "", "container_images", row{"id", img, "namespace_id", ns, "container_repository_id", cr, "name", "app"})
	r.ins("hosted image 2", "", "container_images", row{"id", img2, "namespace_id", ns, "container_repository_id", cr, "name", "other"})
	layer := digest("hosted layer")
	b1 := r.id("hosted b1")
	r.ins("hosted blob", "hosted blob insert", "container_blobs", row{"id", b1, "namespace_id", ns, "container_image_id", img,
		"digest", layer, "media_type", "x", "blob_storage_attachment_id", f.blob(ns, layer, 5000), "blob_sha256", layer})
	r.ins("hosted blob in another image", "hosted blob insert", "container_blobs", row{"id", r.id("hosted b2"), "namespace_id", ns,
		"container_image_id", img2, "digest", layer, "media_type", "x", "blob_storage_attachment_id", f.attach(ns, layer), "blob_sha256", layer})
	mf := digest("hosted manifest")
	m1 := r.id("hosted m1")
	r.ins("hosted manifest", "hosted manifest insert", "container_manifests", row{"id", m1, "namespace_id", ns, "container_image_id", img,
		"digest", mf, "media_type", "x", "blob_storage_attachment_id", f.blob(ns, mf, 40), "blob_sha256", mf, "size", int64(5040)})
	r.manifests(img, img2, layer)
	for i := range 12 {
		sha := digest(fmt.Sprintf("hosted timed %d", i))
		id := r.id(fmt.Sprintf("hosted timed %d", i))
		r.ins(fmt.Sprintf("hosted timed blob %d", i), "hosted blob insert", "container_blobs", row{"id", id, "namespace_id", ns,
			"container_image_id", img, "digest", sha, "media_type", "x", "blob_storage_attachment_id", f.blob(ns, sha, int64(2000+i)), "blob_sha256", sha})
		r.step(fmt.Sprintf("hosted timed delete %d", i), "hosted blob delete", `DELETE FROM container_blobs WHERE namespace_id = $1 AND id = $2`, ns, id)
	}
	r.step("hosted delete one of two references", "", `DELETE FROM container_blobs WHERE namespace_id = $1 AND id = $2`, ns, b1)
	r.step("hosted delete the manifest", "", `DELETE FROM container_manifests WHERE namespace_id = $1 AND id = $2`, ns, m1)
	r.step("hosted delete every blob", "", `DELETE FROM container_blobs WHERE namespace_id = $1`, ns)

	nr := r.hostedRepository("hosted npm", 2, "npm_repositories")
	pkg := r.id("hosted pkg")
	r.ins("hosted npm package", "", "npm_packages", row{"id", pkg, "namespace_id", ns, "npm_repository_id", nr, "name", "lib"})
	v1, v2 := r.id("hosted v1"), r.id("hosted v2")
	r.ins("hosted npm version", "", "npm_versions", row{"id", v1, "namespace_id", ns, "npm_package_id", pkg, "version", "1.0.0", "package_json", `{}`})
	r.ins("hosted npm version 2", "", "npm_versions", row{"id", v2, "namespace_id", ns, "npm_package_id", pkg, "version", "2.0.0", "package_json", `{}`})
	tgz := digest("hosted tgz")
	r.ins("hosted tarball", "hosted tarball insert", "npm_files", row{"id", r.id("hosted t1"), "namespace_id", ns, "npm_version_id", v1,
		"file_name", "lib-1.0.0.tgz", "blob_storage_attachment_id", f.blob(ns, tgz, 300), "blob_sha256", tgz})
	both := digest("hosted both")
	f.blob(ns, both, 33)
	r.step("hosted two tarballs in one statement", "", `INSERT INTO npm_files (id, namespace_id, npm_version_id, file_name,
			blob_storage_attachment_id, blob_sha256)
		VALUES ($1, $3, $4, 'a.tgz', $5, $7), ($2, $3, $4, 'b.tgz', $6, $7)`,
		r.id("hosted ta"), r.id("hosted tb"), ns, v2, f.attach(ns, both), f.attach(ns, both), both)
	doc := digest("hosted packument")
	r.ins("hosted packument", "", "npm_metadata_files", row{"id", r.id("hosted doc"), "namespace_id", ns, "npm_package_id", pkg, "kind", int16(0),
		"blob_storage_attachment_id", f.blob(ns, doc, 90), "blob_sha256", doc, "expires_at", "2030-01-01T00:00:00Z"})
	r.step("hosted delete the packument", "", `DELETE FROM npm_metadata_files WHERE namespace_id = $1`, ns)
	r.step("hosted delete the tarballs", "", `DELETE FROM npm_files WHERE namespace_id = $1`, ns)
	r.step("hosted delete the npm versions", "", `DELETE FROM npm_versions WHERE namespace_id = $1`, ns)

	mr := r.hostedRepository("hosted maven", 1, "maven_repositories")
	mpkg := r.id("hosted maven pkg")
	r.ins("hosted maven package", "", "maven_packages", row{"id", mpkg, "namespace_id", ns, "maven_repository_id", mr, "group_id", "g", "artifact_id", "a"})
	mv := r.id("hosted maven v1")
	r.ins("hosted maven version", "", "maven_versions", row{"id", mv, "namespace_id", ns, "maven_package_id", mpkg, "version", "1.0"})
	r.ins("hosted maven jar repeating the layer", "hosted maven file insert", "maven_files", row{"id", r.id("hosted jar"), "namespace_id", ns,
		"maven_package_id", mpkg, "maven_version_id", mv, "file_name", "a-1.0.jar", "blob_storage_attachment_id", f.attach(ns, layer),
		"blob_sha256", layer, "sha1", make([]byte, 20), "md5", make([]byte, 16), "sha512", make([]byte, 64)})
	r.step("hosted delete the maven files", "", `DELETE FROM maven_files WHERE namespace_id = $1`, ns)
	r.step("hosted delete the maven version", "", `DELETE FROM maven_versions WHERE namespace_id = $1`, ns)
}

// manifests drives the manifest rows' accounting beyond one push: a payload
// the repository already holds as a layer, one digest pushed to two images
// of the repository in one statement, one statement across two
// repositories, and deletes of one of two references and of the rest.
func (r *accountingRun) manifests(img, img2 uuid.UUID, layer []byte) {
	f, ns := r.f, r.ns
	insert := `INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type,
			blob_storage_attachment_id, blob_sha256, size)
		VALUES ($1, $3, $4, $5, 'x', $6, $5, 1), ($2, $3, $7, $8, 'x', $9, $8, 1)`
	r.ins("hosted manifest repeating the layer", "", "container_manifests", row{"id", r.id("hosted m layer"), "namespace_id", ns,
		"container_image_id", img2, "digest", layer, "media_type", "x", "blob_storage_attachment_id", f.attach(ns, layer),
		"blob_sha256", layer, "size", int64(1)})
	pair := digest("hosted manifest pair")
	f.blob(ns, pair, 70)
	pa, pb := r.id("hosted m pair a"), r.id("hosted m pair b")
	r.step("hosted one manifest in two images", "", insert, pa, pb, ns, img, pair, f.attach(ns, pair), img2, pair, f.attach(ns, pair))

	other := r.hostedRepository("hosted oci 2", 3, "container_repositories")
	img3 := r.id("hosted image3")
	r.ins("hosted image 3", "", "container_images", row{"id", img3, "namespace_id", ns, "container_repository_id", other, "name", "app"})
	m3, own := digest("hosted manifest 3"), digest("hosted manifest own")
	f.blob(ns, m3, 80)
	f.blob(ns, own, 90)
	r.step("hosted manifests in two repositories", "", insert, r.id("hosted m3 a"), r.id("hosted m3 b"), ns,
		img, m3, f.attach(ns, m3), img3, own, f.attach(ns, own))
	r.step("hosted delete one of a pair", "", `DELETE FROM container_manifests WHERE namespace_id = $1 AND id = $2`, ns, pa)
	r.step("hosted delete the manifests of two repositories", "",
		`DELETE FROM container_manifests WHERE namespace_id = $1 AND container_image_id IN ($2, $3)`, ns, img3, img2)
}

// hostedRepository inserts a hosted repository of format with its format
// row in table, labelled "<label> repo" and label; it returns the format
// row's id.
func (r *accountingRun) hostedRepository(label string, format int16, table string) uuid.UUID {
	repo := r.id(label + " repo")
	r.f.must("repositories", row{"id", repo, "namespace_id", r.ns, "name", "h-" + repo.String(),
		"format", format, "kind", int16(0), "visibility", int16(1)})
	id := r.id(label)
	r.f.must(table, row{"id", id, "namespace_id", r.ns, "repository_id", repo})
	return id
}

func runAllAccounting(t *testing.T, pool *pgxpool.Pool) *accountingRun {
	t.Helper()
	r := runAccounting(t, pool)
	r.hosted()
	r.requireShadow()
	return r
}

// requireShadow fails unless the namespace's blob rows and their copies in
// blob_storage_blobs_by_namespace are the same (digest and size), and
// there are some.
func (r *accountingRun) requireShadow() {
	r.t.Helper()
	var blobs, copies, missing int
	err := r.conn.QueryRow(r.ctx, `SELECT
			(SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1),
			(SELECT count(*) FROM blob_storage_blobs_by_namespace WHERE namespace_id = $1),
			(SELECT count(*) FROM blob_storage_blobs b
			 WHERE b.namespace_id = $1 AND NOT EXISTS (SELECT 1 FROM blob_storage_blobs_by_namespace s
			     WHERE s.namespace_id = b.namespace_id AND s.sha256 = b.sha256 AND s.size = b.size))`, r.ns).
		Scan(&blobs, &copies, &missing)
	if err != nil {
		r.t.Fatal(err)
	}
	if blobs == 0 || copies != blobs || missing != 0 {
		r.t.Fatalf("%d blob rows, %d copies in blob_storage_blobs_by_namespace, %d without their copy", blobs, copies, missing)
	}
}

// TestAccountingOwnerLookupUpgrade: the same inserts and deletes of hosted
// and cached content of every format, run at 00059 (owners found by a join
// over every partition), after the upgrade to 00060 (accounting_owner) and
// after its Down, record the same counter_deltas after every statement;
// the medians of the timed statements are logged with -v.
func TestAccountingOwnerLookupUpgrade(t *testing.T) {
	accountingRoundTrip(t, accountingOwnerLookupVersion, "accounting_owner")
}

// accountingRoundTrip runs the accounting workload of runAllAccounting on
// a database before version, after the upgrade to it and after its Down,
// and requires the same counter_deltas after every statement each time;
// the medians of the timed statements are logged with -v. functions are
// those the migration adds: none exists before it and after its Down, all
// after it.
func accountingRoundTrip(t *testing.T, version int64, functions ...string) {
	t.Helper()
	ctx := context.Background()
	pool := databaseBefore(t, version)
	want := len(functions)
	requireAdded := func(n int, when string) {
		t.Helper()
		got := queryStrings(ctx, t, pool, `SELECT proname::text FROM pg_proc WHERE proname = ANY($1)`, functions)
		if len(got) != n {
			t.Fatalf("%s: %d of the migration's %d functions exist (%v), want %d", when, len(got), want, got, n)
		}
	}
	requireAdded(0, "before the upgrade")
	// The accounting's functions and triggers as they were: the Down must
	// give them back exactly.
	was := accountingDefinitions(ctx, t, pool)
	before := runAllAccounting(t, pool)
	joined := strings.Join(before.trace, "\n")
	if len(before.trace) < 80 || !strings.Contains(joined, "=5000,") || !strings.Contains(joined, "=300,") {
		t.Fatalf("the workload recorded no hosted size deltas:\n%s", joined)
	}
	requireSameAccounting := func(when string) *accountingRun {
		t.Helper()
		r := runAllAccounting(t, pool)
		if !slices.Equal(before.trace, r.trace) {
			t.Fatalf("accounting differs %s:\n%s", when, traceDiff(before.trace, r.trace))
		}
		return r
	}

	upTo(t, pool, version)
	requireAdded(want, "after the upgrade")
	after := requireSameAccounting("after the upgrade")
	prev := previousVersion(t, version)
	for _, k := range sortedKeys(before.timed) {
		t.Logf("%-26s median of %2d: %6.2f ms at %05d, %6.2f ms at %05d", k, len(before.timed[k]),
			median(before.timed[k]), prev, median(after.timed[k]), version)
	}

	downTo(t, pool, prev)
	requireAdded(0, "after the Down")
	if now := accountingDefinitions(ctx, t, pool); !slices.Equal(was, now) {
		t.Fatalf("the Down left other accounting functions or triggers:\n%s", traceDiff(was, now))
	}
	requireSameAccounting("after the Down")
	upTo(t, pool, version)
}

// accountingDefinitions lists the accounting's functions (by a digest of
// their source) and triggers.
func accountingDefinitions(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(ctx, t, pool, `SELECT p.proname || ' ' || md5(p.prosrc) FROM pg_proc p
		WHERE p.proname LIKE 'accounting%' OR p.proname LIKE 'blob_storage_blobs%'
		UNION ALL SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgfoid::regproc || ' ' || encode(tgargs, 'hex')
		FROM pg_trigger WHERE NOT tgisinternal AND tgfoid::regproc::text LIKE ANY (ARRAY['accounting%', 'blob_storage_blobs%'])
		ORDER BY 1`)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// downTo runs the Down migrations of pool's database to version.
func downTo(t *testing.T, pool *pgxpool.Pool, version int64) {
	t.Helper()
	withProvider(t, pool, func(p *goose.Provider) error {
		if _, err := p.DownTo(context.Background(), version); err != nil {
			return fmt.Errorf("down to %d: %w", version, err)
		}
		return nil
	})
}

// upTo applies the migrations of pool's database up to version.
func upTo(t *testing.T, pool *pgxpool.Pool, version int64) {
	t.Helper()
	withProvider(t, pool, func(p *goose.Provider) error {
		if _, err := p.UpTo(context.Background(), version); err != nil {
			return fmt.Errorf("up to %d: %w", version, err)
		}
		return nil
	})
}

// withProvider runs fn with a goose provider on pool's database.
func withProvider(t *testing.T, pool *pgxpool.Pool, fn func(*goose.Provider) error) {
	t.Helper()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(p); err != nil {
		t.Fatal(err)
	}
}
