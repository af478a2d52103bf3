package importer

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseManifestRecordsSubject: an imported manifest carries the
// subject and artifact type our push records (artifactType, else an OCI
// image manifest's config media type, none for Docker manifests), and an
// artifactType longer than a push accepts is refused like an unsupported
// manifest.
func TestParseManifestRecordsSubject(t *testing.T) {
	t.Parallel()
	d := func(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
	desc := func(mt string, c byte) string { return fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":2}`, mt, d(c)) }
	cases := []struct {
		name, body, artifactType string
		subject                  bool
	}{
		{"image", `{"schemaVersion":2,"mediaType":"` + mtOCIManifest + `","config":` + desc("application/vnd.oci.image.config.v1+json", 'a') + `,"layers":[]}`,
			"application/vnd.oci.image.config.v1+json", false},
		{"attached signature", `{"schemaVersion":2,"mediaType":"` + mtOCIManifest + `","artifactType":"application/vnd.example.sig","config":` +
			desc("application/vnd.oci.empty.v1+json", 'a') + `,"layers":[],"subject":` + desc(mtOCIManifest, 'b') + `}`, "application/vnd.example.sig", true},
		{"docker", `{"schemaVersion":2,"mediaType":"` + mtDockerManifest + `","config":` + desc("application/vnd.docker.container.image.v1+json", 'a') + `,"layers":[]}`,
			"", false},
		{"index", `{"schemaVersion":2,"mediaType":"` + mtOCIIndex + `","manifests":[]}`, "", false},
	}
	for _, c := range cases {
		p, err := parseManifest([]byte(c.body))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if p.ArtifactType != c.artifactType || (p.Subject != nil) != c.subject || (c.subject && p.Subject.String() != d('b')) {
			t.Errorf("%s: artifact type %q, subject %v", c.name, p.ArtifactType, p.Subject)
		}
	}
	long := `{"schemaVersion":2,"mediaType":"` + mtOCIIndex + `","artifactType":"application/` + strings.Repeat("x", 250) + `","manifests":[]}`
	if _, err := parseManifest([]byte(long)); err == nil || !strings.Contains(err.Error(), "artifactType") {
		t.Errorf("a 262-byte artifactType: %v", err)
	}
}
