package migrations_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const accountingPlpgsqlRefsVersion = 58

// refsFunctions are the functions 00058 turns into PL/pgSQL: the remote
// reference counts and the repository deltas every trigger records.
var refsFunctions = []string{"accounting_remote_repository_refs", "accounting_npm_remote_refs", "accounting_maven_remote_repository_refs",
	"accounting_repository_deltas"}

// refsLanguagesWant is the sorted "function language" list for lang.
func refsLanguagesWant(lang string) []string {
	out := make([]string, 0, len(refsFunctions))
	for _, f := range refsFunctions {
		out = append(out, f+" "+lang)
	}
	slices.Sort(out)
	return out
}

// accountingRun drives one remote repository of each caching format
// through inserts and deletes that exercise the reference counts: a first
// reference to a digest, a second one (in another package or image, and
// within one statement), deleting one of two references, deleting the
// last. After every statement it records the sums of counter_deltas of
// the namespace, with ids replaced by the labels of the rows they name,
// so two runs in different namespaces compare equal when the triggers
// account alike. It also times the statements that call a reference
// count once (timed, in milliseconds).
type accountingRun struct {
	t      *testing.T
	ctx    context.Context
	f      *fixture
	conn   *pgxpool.Conn
	ns     uuid.UUID
	labels map[uuid.UUID]string
	trace  []string
	timed  map[string][]float64
}

func newAccountingRun(t *testing.T, pool *pgxpool.Pool) *accountingRun {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx) // one connection: PL/pgSQL caches plans per connection
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	f := newFixture(t, conn)
	r := &accountingRun{t: t, ctx: ctx, f: f, conn: conn, labels: map[uuid.UUID]string{}, timed: map[string][]float64{}}
	r.ns = f.namespace()
	r.labels[r.ns] = "ns"
	return r
}

func (r *accountingRun) id(label string) uuid.UUID {
	id := v7(r.t)
	r.labels[id] = label
	return id
}

// step runs one statement, timed under kind when kind is not empty, and
// records the namespace's deltas after it.
func (r *accountingRun) step(name, kind, sql string, args ...any) {
	r.t.Helper()
	start := time.Now()
	if _, err := r.conn.Exec(r.ctx, sql, args...); err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	if kind != "" {
		r.timed[kind] = append(r.timed[kind], float64(time.Since(start).Microseconds())/1000)
	}
	rows, err := r.conn.Query(r.ctx, `SELECT target, target_id, field, coalesce(sum(delta), 0), count(observed_at) FROM counter_deltas
		WHERE namespace_id = $1 GROUP BY 1, 2, 3`, r.ns)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var sums []string
	for rows.Next() {
		var (
			target, field int16
			id            uuid.UUID
			sum, stamps   int64
		)
		if err := rows.Scan(&target, &id, &field, &sum, &stamps); err != nil {
			r.t.Fatal(err)
		}
		label, ok := r.labels[id]
		if !ok {
			label = "unknown " + id.String()
		}
		sums = append(sums, fmt.Sprintf("%d/%s/%d=%d,%d", target, label, field, sum, stamps))
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	slices.Sort(sums)
	r.trace = append(r.trace, name+": "+strings.Join(sums, " "))
}

func (r *accountingRun) ins(name, kind, table string, x row) {
	r.t.Helper()
	cols, ph, args := []string{}, []string{}, []any{}
	for i := 0; i < len(x); i += 2 {
		cols = append(cols, x[i].(string))
		args = append(args, x[i+1])
		ph = append(ph, fmt.Sprintf("$%d", len(args)))
	}
	r.step(name, kind, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "), strings.Join(ph, ", ")), args...)
}

func (r *accountingRun) npm() {
	f, ns := r.f, r.ns
	repo := r.id("npm repo")
	f.must("repositories", row{"id", repo, "namespace_id", ns, "name", "npm-" + repo.String(), "format", int16(2), "kind", int16(2), "visibility", int16(1)})
	remote := r.id("npm remote")
	f.must("npm_remote_repositories", row{"id", remote, "namespace_id", ns, "repository_id", repo, "url", "https://upstream.example.test"})
	pkg, pkg2 := r.id("npm pkg"), r.id("npm pkg2")
	r.ins("npm package", "", "npm_remote_packages", row{"id", pkg, "namespace_id", ns, "npm_remote_repository_id", remote, "name", "left-pad"})
	r.ins("npm package 2", "", "npm_remote_packages", row{"id", pkg2, "namespace_id", ns, "npm_remote_repository_id", remote, "name", "right-pad"})
	v1 := r.id("npm v1")
	r.ins("npm version", "", "npm_remote_versions", row{"id", v1, "namespace_id", ns, "npm_remote_package_id", pkg,
		"version", "1.0.0", "package_json", `{}`})
	shared := digest("npm shared")
	t1 := r.id("npm t1")
	r.ins("npm tarball", "npm tarball insert", "npm_remote_files", row{"id", t1, "namespace_id", ns, "npm_remote_version_id", v1,
		"file_name", "left-pad-1.0.0.tgz", "blob_storage_attachment_id", f.blob(ns, shared, 700), "blob_sha256", shared})
	doc := digest("npm packument")
	r.ins("npm packument", "npm packument insert", "npm_remote_metadata_files", row{"id", r.id("npm doc"), "namespace_id", ns,
		"npm_remote_package_id", pkg, "kind", int16(0), "blob_storage_attachment_id", f.blob(ns, doc, 90), "blob_sha256", doc})
	r.ins("npm packument sharing the tarball's digest", "npm packument insert", "npm_remote_metadata_files", row{"id", r.id("npm doc2"),
		"namespace_id", ns, "npm_remote_package_id", pkg2, "kind", int16(0), "blob_storage_attachment_id", f.attach(ns, shared), "blob_sha256", shared})
	// Two references to a new digest in one statement: counted once.
	both := digest("npm both")
	f.blob(ns, both, 33)
	v2 := r.id("npm v2")
	r.ins("npm version 2", "", "npm_remote_versions", row{"id", v2, "namespace_id", ns, "npm_remote_package_id", pkg,
		"version", "2.0.0", "package_json", `{}`})
	r.step("npm two tarballs in one statement", "", `INSERT INTO npm_remote_files (id, namespace_id, npm_remote_version_id, file_name,
			blob_storage_attachment_id, blob_sha256)
		VALUES ($1, $3, $4, 'a.tgz', $5, $7), ($2, $3, $4, 'b.tgz', $6, $7)`,
		r.id("npm ta"), r.id("npm tb"), ns, v2, f.attach(ns, both), f.attach(ns, both), both)
	var timed []uuid.UUID
	timedID := func(label string) uuid.UUID {
		id := r.id(label)
		timed = append(timed, id)
		return id
	}
	for i := range 12 {
		sha := digest(fmt.Sprintf("npm timed %d", i))
		r.ins(fmt.Sprintf("npm timed tarball %d", i), "npm tarball insert", "npm_remote_files", row{"id", timedID(fmt.Sprintf("npm timed %d", i)),
			"namespace_id", ns, "npm_remote_version_id", v2, "file_name", fmt.Sprintf("t%d.tgz", i),
			"blob_storage_attachment_id", f.blob(ns, sha, int64(1000+i)), "blob_sha256", sha})
	}
	for i, id := range timed {
		r.step(fmt.Sprintf("npm timed delete %d", i), "npm tarball delete", `DELETE FROM npm_remote_files WHERE namespace_id = $1 AND id = $2`, ns, id)
	}
	r.step("npm delete one of two references", "npm tarball delete 1", `DELETE FROM npm_remote_files WHERE namespace_id = $1 AND id = $2`, ns, t1)
	r.step("npm delete the last reference", "npm packument delete", `DELETE FROM npm_remote_metadata_files WHERE namespace_id = $1 AND npm_remote_package_id = $2`, ns, pkg2)
	r.step("npm delete every file", "", `DELETE FROM npm_remote_files WHERE namespace_id = $1`, ns)
	r.step("npm delete every packument", "", `DELETE FROM npm_remote_metadata_files WHERE namespace_id = $1`, ns)
	r.step("npm delete the versions", "", `DELETE FROM npm_remote_versions WHERE namespace_id = $1`, ns)
}

func (r *accountingRun) container() {
	f, ns := r.f, r.ns
	repo := r.id("oci repo")
	f.must("repositories", row{"id", repo, "namespace_id", ns, "name", "oci-" + repo.String(), "format", int16(3), "kind", int16(2), "visibility", int16(1)})
	remote := r.id("oci remote")
	f.must("container_remote_repositories", row{"id", remote, "namespace_id", ns, "repository_id", repo, "url", "https://upstream.example.test"})
	img, img2 := r.id("oci image"), r.id("oci image2")
	r.ins("oci image", "", "container_remote_images", row{"id", img, "namespace_id", ns, "container_remote_repository_id", remote, "name", "library/app"})
	r.ins("oci image 2", "", "container_remote_images", row{"id", img2, "namespace_id", ns, "container_remote_repository_id", remote, "name", "library/other"})
	mf := digest("oci manifest")
	m1 := r.id("oci m1")
	r.ins("oci manifest", "oci manifest insert", "container_remote_manifests", row{"id", m1, "namespace_id", ns, "container_remote_image_id", img,
		"digest", mf, "media_type", "application/vnd.oci.image.manifest.v1+json", "blob_storage_attachment_id", f.blob(ns, mf, 40),
		"blob_sha256", mf, "size", int64(40)})
	layer := digest("oci layer")
	b1 := r.id("oci b1")
	r.ins("oci blob", "oci blob insert", "container_remote_blobs", row{"id", b1, "namespace_id", ns, "container_remote_image_id", img,
		"digest", layer, "media_type", "application/vnd.oci.image.layer.v1.tar", "blob_storage_attachment_id", f.blob(ns, layer, 5000), "blob_sha256", layer})
	r.ins("oci blob shared by another image", "oci blob insert", "container_remote_blobs", row{"id", r.id("oci b2"), "namespace_id", ns,
		"container_remote_image_id", img2, "digest", layer, "media_type", "application/vnd.oci.image.layer.v1.tar",
		"blob_storage_attachment_id", f.attach(ns, layer), "blob_sha256", layer})
	var timed []uuid.UUID
	timedID := func(label string) uuid.UUID {
		id := r.id(label)
		timed = append(timed, id)
		return id
	}
	for i := range 12 {
		sha := digest(fmt.Sprintf("oci timed %d", i))
		r.ins(fmt.Sprintf("oci timed blob %d", i), "oci blob insert", "container_remote_blobs", row{"id", timedID(fmt.Sprintf("oci timed %d", i)),
			"namespace_id", ns, "container_remote_image_id", img, "digest", sha, "media_type", "application/octet-stream",
			"blob_storage_attachment_id", f.blob(ns, sha, int64(2000+i)), "blob_sha256", sha})
	}
	for i, id := range timed {
		r.step(fmt.Sprintf("oci timed delete %d", i), "oci blob delete", `DELETE FROM container_remote_blobs WHERE namespace_id = $1 AND id = $2`, ns, id)
	}
	r.step("oci delete one of two references", "", `DELETE FROM container_remote_blobs WHERE namespace_id = $1 AND id = $2`, ns, b1)
	r.step("oci delete the other image's blobs", "", `DELETE FROM container_remote_blobs WHERE namespace_id = $1 AND container_remote_image_id = $2`, ns, img2)
	r.step("oci delete the manifest", "oci manifest delete", `DELETE FROM container_remote_manifests WHERE namespace_id = $1 AND id = $2`, ns, m1)
	r.step("oci delete every blob", "", `DELETE FROM container_remote_blobs WHERE namespace_id = $1`, ns)
}

func (r *accountingRun) maven() {
	f, ns := r.f, r.ns
	repo := r.id("maven repo")
	f.must("repositories", row{"id", repo, "namespace_id", ns, "name", "mvn-" + repo.String(), "format", int16(1), "kind", int16(2), "visibility", int16(1)})
	remote := r.id("maven remote")
	f.must("maven_remote_repositories", row{"id", remote, "namespace_id", ns, "repository_id", repo, "url", "https://repo.example.test"})
	pkg := r.id("maven pkg")
	r.ins("maven package", "", "maven_remote_packages", row{"id", pkg, "namespace_id", ns, "maven_remote_repository_id", remote,
		"group_id", "com.example", "artifact_id", "lib"})
	v1, v2 := r.id("maven v1"), r.id("maven v2")
	r.ins("maven version", "", "maven_remote_versions", row{"id", v1, "namespace_id", ns, "maven_remote_package_id", pkg, "version", "1.0"})
	r.ins("maven version 2", "", "maven_remote_versions", row{"id", v2, "namespace_id", ns, "maven_remote_package_id", pkg, "version", "2.0"})
	file := func(label string, version any, name string, sha []byte, attachment int64) row {
		return row{"id", r.id(label), "namespace_id", ns, "maven_remote_package_id", pkg, "maven_remote_version_id", version,
			"file_name", name, "blob_storage_attachment_id", attachment, "blob_sha256", sha,
			"sha1", make([]byte, 20), "sha512", make([]byte, 64)}
	}
	jar := digest("maven jar")
	r.ins("maven jar", "maven file insert", "maven_remote_files", file("maven f1", v1, "lib-1.0.jar", jar, f.blob(ns, jar, 300)))
	r.ins("maven same bytes in another version", "maven file insert", "maven_remote_files", file("maven f2", v2, "lib-2.0.jar", jar, f.attach(ns, jar)))
	meta := digest("maven metadata")
	r.ins("maven metadata (no version)", "maven file insert", "maven_remote_files", file("maven meta", nil, "maven-metadata.xml", meta, f.blob(ns, meta, 50)))
	var timed []uuid.UUID
	for i := range 12 {
		sha := digest(fmt.Sprintf("maven timed %d", i))
		x := file(fmt.Sprintf("maven timed %d", i), v1, fmt.Sprintf("lib-1.0-%d.jar", i), sha, f.blob(ns, sha, int64(3000+i)))
		timed = append(timed, x[1].(uuid.UUID))
		r.ins(fmt.Sprintf("maven timed file %d", i), "maven file insert", "maven_remote_files", x)
	}
	for i, id := range timed {
		r.step(fmt.Sprintf("maven timed delete %d", i), "maven file delete", `DELETE FROM maven_remote_files WHERE namespace_id = $1 AND id = $2`, ns, id)
	}
	r.step("maven delete one of two references", "", `DELETE FROM maven_remote_files WHERE namespace_id = $1 AND maven_remote_version_id = $2`, ns, v2)
	r.step("maven delete the metadata", "", `DELETE FROM maven_remote_files WHERE namespace_id = $1 AND maven_remote_version_id IS NULL`, ns)
	r.step("maven delete every file", "", `DELETE FROM maven_remote_files WHERE namespace_id = $1`, ns)
	r.step("maven delete the versions", "", `DELETE FROM maven_remote_versions WHERE namespace_id = $1`, ns)
}

func runAccounting(t *testing.T, pool *pgxpool.Pool) *accountingRun {
	t.Helper()
	r := newAccountingRun(t, pool)
	r.npm()
	r.container()
	r.maven()
	return r
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func refsLanguages(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(ctx, t, pool, `SELECT p.proname || ' ' || l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.proname = ANY($1)`, refsFunctions)
}

// TestAccountingPlpgsqlRefsUpgrade: the same inserts and deletes of cached
// npm, container and Maven content, run at 00057 (SQL-language reference
// counts), after the upgrade to 00058 (PL/pgSQL) and after its Down, record
// the same counter_deltas after every statement; the functions change
// language both ways; and the statements whose triggers call a reference
// count get faster (the medians are logged, before and after, with -v).
func TestAccountingPlpgsqlRefsUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, accountingPlpgsqlRefsVersion)
	want := refsLanguagesWant("sql")
	if got := refsLanguages(ctx, t, pool); !slices.Equal(got, want) {
		t.Fatalf("functions before the upgrade: %v", got)
	}
	before := runAccounting(t, pool)
	if len(before.trace) < 40 || !strings.Contains(strings.Join(before.trace, "\n"), "=700,") {
		t.Fatalf("the workload recorded no size deltas:\n%s", strings.Join(before.trace, "\n"))
	}

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	want = refsLanguagesWant("plpgsql")
	if got := refsLanguages(ctx, t, pool); !slices.Equal(got, want) {
		t.Fatalf("functions after the upgrade: %v", got)
	}
	after := runAccounting(t, pool)
	if !slices.Equal(before.trace, after.trace) {
		t.Fatalf("accounting differs after the upgrade:\n%s", traceDiff(before.trace, after.trace))
	}
	kinds := make([]string, 0, len(before.timed))
	for k := range before.timed {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var sumBefore, sumAfter float64
	for _, k := range kinds {
		b, a := median(before.timed[k]), median(after.timed[k])
		if len(before.timed[k]) >= 10 { // single statements pay the connection's first plans
			sumBefore, sumAfter = sumBefore+b, sumAfter+a
		}
		t.Logf("%-22s median of %2d: %7.2f ms at 00057, %6.2f ms at 00058", k, len(before.timed[k]), b, a)
	}
	// About 50 ms of planning per call before, under a millisecond after;
	// the statements keep the rest of their triggers' cost, so the factor
	// is about 10: 3 leaves room for a loaded machine.
	if sumAfter*3 > sumBefore {
		t.Errorf("statements calling a reference count: medians sum %.1f ms at 00058 against %.1f ms at 00057", sumAfter, sumBefore)
	}

	downTo(t, pool, accountingPlpgsqlRefsVersion-1)
	want = refsLanguagesWant("sql")
	if got := refsLanguages(ctx, t, pool); !slices.Equal(got, want) {
		t.Fatalf("functions after the Down: %v", got)
	}
	down := runAccounting(t, pool)
	if !slices.Equal(before.trace, down.trace) {
		t.Fatalf("accounting differs after the Down:\n%s", traceDiff(before.trace, down.trace))
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("Up after the Down: %v", err)
	}
}

func traceDiff(a, b []string) string {
	var out []string
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			out = append(out, "- "+x, "+ "+y)
		}
	}
	return strings.Join(out, "\n")
}
