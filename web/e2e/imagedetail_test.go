package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// pushPlatform pushes an image manifest for one platform: a config with
// the highlights the page shows (created, entrypoint, cmd, labels) and
// its layers. It returns the manifest's digest and payload size.
func (s *server) pushPlatform(t testing.TB, name, arch, variant string, labels map[string]string, layers ...[]byte) (string, int) {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{
		"created": "2026-10-30T08:00:00Z", "architecture": arch, "os": "linux", "variant": variant,
		"config": map[string]any{"Entrypoint": []string{"/usr/local/bin/api"}, "Cmd": []string{"--listen", ":8080"},
			"WorkingDir": "/srv", "User": "65532", "ExposedPorts": map[string]any{"8080/tcp": map[string]any{}}, "Labels": labels},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{}},
	})
	config := map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": s.pushBlob(t, name, cfg), "size": len(cfg)}
	var ls []any
	for _, l := range layers {
		ls = append(ls, map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": s.pushBlob(t, name, l), "size": len(l)})
	}
	return s.putManifest(t, name, "", map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": config, "layers": ls})
}

// putManifest pushes a manifest under ref ("" for its digest).
func (s *server) putManifest(t testing.TB, name, ref string, m map[string]any) (string, int) {
	t.Helper()
	b, _ := json.Marshal(m)
	d := digestOf(b)
	if ref == "" {
		ref = d
	}
	resp := s.ociDo(t, http.MethodPut, "/v2/"+name+"/manifests/"+ref, m["mediaType"].(string), b)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("push manifest %s:%s: %s %s", name, ref, resp.Status, body)
	}
	return d, len(b)
}

// oras runs the oras CLI against the server as the admin, in its own home.
func (s *server) oras(t testing.TB, bin, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--plain-http", "-u", "e2e", "-p", adminToken)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "DOCKER_CONFIG="+filepath.Join(dir, ".docker"), "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestUIImageDetail pushes a two-platform index over the OCI API, attaches
// a signature to it and an SBOM to one platform with `oras attach`, and
// reads the image page: the tag shows its platforms and what is attached,
// the signature is listed as attached to the index (not as an unrelated
// untagged manifest), the index shows its platforms with their sizes and
// its signature, a platform shows its total size, layers, config
// highlights (labels as text, never markup) and its SBOM.
func TestUIImageDetail(t *testing.T) {
	requireChromium(t)
	orasBin := ocitools.Oras(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.graphql(t, `mutation { createRepository(input: {namespace: "acme", name: "app", format: OCI, visibility: PRIVATE}) { repository { id } } }`, nil)
	const name = "acme/app/team/api"
	hostile := `<img src=x onerror="window.__pwned=1">`
	labels := map[string]string{"org.opencontainers.image.source": "https://git.example.test/team/api", "org.example.note": hostile}
	amd, amdSize := s.pushPlatform(t, name, "amd64", "", labels,
		[]byte(strings.Repeat("base layer of the api image ", 2000)), []byte(strings.Repeat("api binary ", 900)))
	arm, armSize := s.pushPlatform(t, name, "arm64", "v8", labels, []byte(strings.Repeat("arm64 layer ", 3000)))
	index, _ := s.putManifest(t, name, "v1", map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		"manifests": []any{
			map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": amd, "size": amdSize,
				"platform": map[string]any{"os": "linux", "architecture": "amd64"}},
			map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": arm, "size": armSize,
				"platform": map[string]any{"os": "linux", "architecture": "arm64", "variant": "v8"}},
		}})
	s.tagManifest(t, name, index, "latest")

	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "api.sig"), []byte("signature of the api index"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "sbom.spdx.json"), []byte(`{"spdxVersion":"SPDX-2.3","name":"api"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := s.Host + "/" + name
	api := "--distribution-spec=v1.1-referrers-api"
	s.oras(t, orasBin, work, "attach", api, "--artifact-type", "application/vnd.cncf.notary.signature", ref+":v1", "api.sig")
	s.oras(t, orasBin, work, "attach", api, "--artifact-type", "application/spdx+json", ref+"@"+amd, "sbom.spdx.json:application/spdx+json")
	// What oras reads back through the referrers API.
	if disc := s.oras(t, orasBin, work, "discover", api, "--format", "json", ref+":v1"); !strings.Contains(disc, "application/vnd.cncf.notary.signature") {
		t.Fatalf("oras discover:\n%s", disc)
	}

	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, func(t *testing.T) {
			defer b.failOn(t)()
			f(t)
		}) {
			t.FailNow()
		}
	}
	step("sign in", func(t *testing.T) {
		b.open("/sign-in")
		b.typeInto("#token", adminToken)
		b.click(button("Sign in"))
		b.see(heading("Namespaces"))
	})

	step("tags show platforms and attachments; the signature is attached to its subject", func(t *testing.T) {
		b.open("/n/acme/r/app/images/team/api")
		b.see(`//tr[@data-tag="v1"]//*[normalize-space()="linux/amd64, linux/arm64/v8"]`)
		b.see(`//tr[@data-tag="v1"]//*[normalize-space()="1 signature"]`)
		b.see(`//tr[@data-tag="latest"]//*[normalize-space()="1 signature"]`)
		// The signature and the SBOM are marked with what they are attached to.
		b.see(`//tr[@data-digest][.//*[contains(normalize-space(), "signature attached to")]]//code[normalize-space()="application/vnd.cncf.notary.signature"]`)
		b.see(`//tr[@data-digest][.//*[contains(normalize-space(), "SBOM attached to")]]`)
		b.see(`//tr[@data-digest=` + xp(index) + `]//*[normalize-space()="2 children · 1 signature attached"]`)
		b.see(`//tr[@data-digest=` + xp(amd) + `]//*[contains(normalize-space(), "in index")]`)
		if got := b.eval(`String([...document.querySelectorAll("tr[data-digest]")].filter(r => r.innerText.includes("untagged")).length)`); got != "0" {
			t.Errorf("%s manifests shown as untagged, want none (each is tagged, a platform of the index or attached)", got)
		}
		b.docShot("30-image-tags-manifests", "image-tags-manifests")
	})

	step("the index shows its platforms with sizes and its signature", func(t *testing.T) {
		b.click(`//tr[@data-tag="v1"]//a[contains(@class, "mono")]`)
		b.waitFor("index in the URL", `new URLSearchParams(location.search).get("manifest") === `+jsString(index))
		b.see(`//section[@id="manifest-detail"]//h2[contains(., "OCI index")]`)
		b.see(`//table[@aria-label="Platforms"]//tr[@data-platform="linux/amd64"]`)
		b.see(`//table[@aria-label="Platforms"]//tr[@data-platform="linux/arm64/v8"]`)
		b.see(`//section[@id="manifest-detail"]//*[@data-kind="signature"]//code[normalize-space()="application/vnd.cncf.notary.signature"]`)
		b.see(text("Total size (all platforms)"))
		b.waitFor("the detail has the focus", `document.activeElement?.id === "manifest-detail-title"`)
		b.shot("31-index-detail")
	})

	step("a platform shows its size, layers, config and SBOM; labels are text", func(t *testing.T) {
		b.click(button("Open linux/amd64 manifest"))
		b.waitFor("platform in the URL", `new URLSearchParams(location.search).get("manifest") === `+jsString(amd))
		b.see(`//section[@id="manifest-detail"]//h2[contains(., "OCI manifest")]`)
		b.see(text("Total size (compressed)"))
		if n := b.count(`table[aria-label="Layers"] tbody tr`); n != 2 {
			t.Errorf("%d layers shown, want 2", n)
		}
		b.see(`//table[@aria-label="Layers"]//td[normalize-space()="application/vnd.oci.image.layer.v1.tar+gzip"]`)
		b.see(`//dd//code[normalize-space()='["/usr/local/bin/api"]']`)
		b.see(`//dd//code[normalize-space()='["--listen",":8080"]']`)
		b.see(`//table[@aria-label="Labels"]//td[normalize-space()=` + xp(hostile) + `]`)
		if got := b.eval(`String(document.querySelectorAll("#manifest-detail img").length) + "/" + String(window.__pwned)`); got != "0/undefined" {
			t.Errorf("a label was rendered as markup: %s", got)
		}
		b.see(`//section[@id="manifest-detail"]//*[@data-kind="sbom"]//code[normalize-space()="application/spdx+json"]`)
		b.see(`//section[@id="manifest-detail"]//h3[normalize-space()="Listed by"]`)
		b.docShot("32-manifest-detail", "manifest-detail")
	})

	step("the signature opens with its subject", func(t *testing.T) {
		b.click(`//tr[@data-digest][.//*[contains(normalize-space(), "signature attached to")]]//th//button`)
		b.see(`//*[@data-testid="attached-to"][contains(., "Attached to")][contains(., "v1")]`)
		b.see(`//table[@aria-label="Layers"]//th[contains(., "api.sig")]`)
		b.click(`//*[@data-testid="attached-to"]//button`)
		b.waitFor("subject in the URL", `new URLSearchParams(location.search).get("manifest") === `+jsString(index))
		b.shot("33-signature-subject")
	})
}
