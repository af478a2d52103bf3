package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// seedManifests adds an image with n tagged manifests (v1 oldest … vn
// newest) pushed three days ago to a container repository of the store.
func (s *server) seedManifests(t *testing.T, ns, repo, image string, n int) {
	t.Helper()
	ctx := context.Background()
	pool := s.Store.Pool()
	img := uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `
		INSERT INTO container_images (id, namespace_id, container_repository_id, name)
		SELECT $1, r.namespace_id, cr.id, $4 FROM repositories r
		JOIN namespaces n ON n.id = r.namespace_id AND n.slug = $2
		JOIN container_repositories cr ON cr.namespace_id = r.namespace_id AND cr.repository_id = r.id
		WHERE r.name = $3`, img, ns, repo, image); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		content := fmt.Sprintf("%s-%d", img, i)
		id := uuid.Must(uuid.NewV7())
		if _, err := pool.Exec(ctx, `
			WITH ns AS (SELECT namespace_id AS id FROM container_images WHERE id = $1),
			b AS (INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key)
			      SELECT ns.id, sha256(convert_to($2, 'UTF8')), 512, 'seed/' || $2 FROM ns),
			a AS (INSERT INTO blob_storage_attachments (namespace_id, sha256)
			      SELECT ns.id, sha256(convert_to($2, 'UTF8')) FROM ns RETURNING id, namespace_id, sha256),
			m AS (INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type,
			        blob_storage_attachment_id, blob_sha256, size, created_at)
			      SELECT $3, a.namespace_id, $1, a.sha256, 'application/vnd.oci.image.manifest.v1+json', a.id, a.sha256, 512,
			        now() - interval '3 days' + make_interval(mins => $4) FROM a)
			INSERT INTO container_tags (id, namespace_id, container_image_id, container_manifest_id, name)
			SELECT $5, ns.id, $1, $3, $6 FROM ns`,
			img, content, id, i, uuid.Must(uuid.NewV7()), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUILifecyclePolicy: the repository's policy editor; Save is offered
// only after the draft was previewed, the dry run lists what keep-last-2
// would delete, and the saved policy is what the API then returns.
func TestUILifecyclePolicy(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.graphql(t, `mutation { createRepository(input: {namespace: "acme", name: "img", format: OCI, visibility: PRIVATE}) { repository { id } } }`, nil)
	s.seedManifests(t, "acme", "img", "app", 5)

	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	b.open("/sign-in?next=%2Fn%2Facme%2Fr%2Fimg%2Flifecycle")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))
	b.see(heading("Lifecycle policy of img"))
	b.see(text("This repository has no override"))
	if b.eval(`String(document.querySelector('.form-actions .btn-primary').disabled)`) != "true" {
		t.Fatal("Save is offered before a preview")
	}
	b.click(`//label[contains(normalize-space(.), "Enabled")]/input`)
	b.click(button("Add rule"))
	b.typeInto(`[aria-label="Rule 1 count"]`, "2")
	b.click(button("Preview"))
	b.see(text("Would delete"))
	b.waitFor("three items previewed", `document.querySelectorAll('[data-testid="lifecycle-preview"] tbody tr').length === 3`)
	page := b.eval(`document.querySelector('[data-testid="lifecycle-preview"]').innerText`)
	for _, tag := range []string{"v1", "v2", "v3"} {
		if !strings.Contains(page, tag) {
			t.Errorf("the dry run does not list %s:\n%s", tag, page)
		}
	}
	if strings.Contains(page, "v4") || strings.Contains(page, "v5") {
		t.Errorf("the dry run lists a kept manifest:\n%s", page)
	}
	b.docShot("40-lifecycle-policy", "lifecycle-policy")
	b.click(button("Save"))
	b.see(text("Saved."))
	data := s.graphql(t, `{ repository(namespace: "acme", name: "img") { lifecyclePolicy { enabled minAgeDays rules { type count } } } }`, nil)
	if !strings.Contains(string(data), `"enabled":true`) || !strings.Contains(string(data), `"type":"KEEP_LAST_N","count":2`) {
		t.Fatalf("saved policy: %s", data)
	}
	// Editing again withdraws Save until the new draft is previewed.
	b.typeInto(`[aria-label="Rule 1 count"]`, "0")
	if b.eval(`String(document.querySelector('.form-actions .btn-primary').disabled)`) != "true" {
		t.Fatal("Save is offered for a draft that was not previewed")
	}
}
