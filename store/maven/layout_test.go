package maven

import (
	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store"
	"strings"
	"testing"
	"time"
)

func TestMavenFileRefValidate(t *testing.T) {
	t.Parallel()
	good := []FileRef{
		{"com.example", "lib", "1.0", "lib-1.0.jar"},
		{"com.example", "lib", "1.0", "lib-1.0-sources.jar"},
		{"com.example", "lib", "1.0", "lib-1.0.pom"},
		{"com.example", "lib", "1.0", "lib-1.0.jar.asc"},
		{"com.example", "lib", "1.0-SNAPSHOT", "lib-1.0-20260101.120000-1.jar"},
		{"com.example", "lib", "1.0-SNAPSHOT", "lib-1.0-SNAPSHOT.jar"},
		{"com.example", "lib", "1.0-SNAPSHOT", "maven-metadata.xml"},
		{"com.example", "lib", "", "maven-metadata.xml"},
		{"x", "lib_2", "1.0+build.5", "lib_2-1.0+build.5.zip"},
	}
	for _, r := range good {
		if err := r.Validate(); err != nil {
			t.Errorf("%v: %v", r, err)
		}
	}
	bad := []FileRef{
		{"", "lib", "1.0", "lib-1.0.jar"},
		{"com..example", "lib", "1.0", "lib-1.0.jar"},
		{".com", "lib", "1.0", "lib-1.0.jar"},
		{"com.example", "", "1.0", "lib-1.0.jar"},
		{"com.example", "li b", "1.0", "li b-1.0.jar"},
		{"com.example", "lib", "..", "lib-...jar"},
		{"com.example", "lib", "1.0", "other-1.0.jar"},
		{"com.example", "lib", "1.0", "lib-1.0"},
		{"com.example", "lib", "1.0", "lib-1.0."},
		{"com.example", "lib", "1.0", "lib-1.0x.jar"},
		{"com.example", "lib", "1.0", "lib-1.0.jar/x"},
		{"com.example", "lib", "1.0", "lib-1.0.j%ar"},
		{"com.example", "lib", "", "lib-1.0.jar"},
		{"com.example", "lib", "1:0", "lib-1:0.jar"},
		{"com.example", strings.Repeat("a", 256), "1.0", "x"},
	}
	for _, r := range bad {
		if err := r.Validate(); !store.HasCode(err, CodeInvalid) {
			t.Errorf("%v: got %v, want CodeInvalid", r, err)
		}
	}
}

func TestParseMavenChecksumBody(t *testing.T) {
	t.Parallel()
	const sha1 = "2495887e4b3a2f8b2c1e7a9f0c1b2d3e4f5a6b7c"
	for _, body := range []string{sha1, sha1 + "\n", strings.ToUpper(sha1), sha1 + "  anchor-lib-1.0.0.jar\n", "  " + sha1} {
		got, err := ParseChecksumBody(mavenlayout.SHA1, []byte(body))
		if err != nil || got != sha1 {
			t.Errorf("%q: %q %v", body, got, err)
		}
	}
	for _, body := range []string{"", "\n", sha1[:39], sha1 + "0", strings.Replace(sha1, "2", "g", 1)} {
		if _, err := ParseChecksumBody(mavenlayout.SHA1, []byte(body)); !store.HasCode(err, CodeInvalid) {
			t.Errorf("%q: %v", body, err)
		}
	}
}

func TestMavenPackageMetadata(t *testing.T) {
	t.Parallel()
	got := string(packageMetadata("com.example", "lib",
		[]string{"1.10", "1.1.0-SNAPSHOT", "1.9", "1.0.0", "2.0-SNAPSHOT"},
		time.Date(2026, 11, 29, 21, 8, 2, 5e8, time.UTC)))
	want := `<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>com.example</groupId>
  <artifactId>lib</artifactId>
  <versioning>
    <latest>2.0-SNAPSHOT</latest>
    <release>1.10</release>
    <versions>
      <version>1.0.0</version>
      <version>1.1.0-SNAPSHOT</version>
      <version>1.9</version>
      <version>1.10</version>
      <version>2.0-SNAPSHOT</version>
    </versions>
    <lastUpdated>20261129210802</lastUpdated>
  </versioning>
</metadata>
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	onlySnap := string(packageMetadata("g", "a", []string{"1-SNAPSHOT"}, time.Unix(0, 0)))
	if strings.Contains(onlySnap, "<release>") || !strings.Contains(onlySnap, "<latest>1-SNAPSHOT</latest>") {
		t.Errorf("snapshot-only metadata:\n%s", onlySnap)
	}
	doc, err := ParseMetadata(strings.NewReader(want))
	if err != nil || doc.GroupID != "com.example" || doc.ArtifactID != "lib" || len(doc.Versioning.Versions) != 5 {
		t.Fatalf("parse back: %+v %v", doc, err)
	}
}

func TestMavenSnapshotMetadata(t *testing.T) {
	t.Parallel()
	names := []string{
		"lib-1.0-20260101.100000-1.jar", "lib-1.0-20260101.100000-1.pom",
		"lib-1.0-20260102.100000-2.jar", "lib-1.0-20260102.100000-2.pom",
		"lib-1.0-20260101.100000-1-sources.jar",
		"lib-1.0-SNAPSHOT.jar", "maven-metadata.xml",
	}
	got := string(snapshotMetadata("g", "lib", "1.0-SNAPSHOT", names))
	want := `<?xml version="1.0" encoding="UTF-8"?>
<metadata modelVersion="1.1.0">
  <groupId>g</groupId>
  <artifactId>lib</artifactId>
  <version>1.0-SNAPSHOT</version>
  <versioning>
    <snapshot>
      <timestamp>20260102.100000</timestamp>
      <buildNumber>2</buildNumber>
    </snapshot>
    <lastUpdated>20260102100000</lastUpdated>
    <snapshotVersions>
      <snapshotVersion>
        <extension>jar</extension>
        <value>1.0-20260102.100000-2</value>
        <updated>20260102100000</updated>
      </snapshotVersion>
      <snapshotVersion>
        <extension>pom</extension>
        <value>1.0-20260102.100000-2</value>
        <updated>20260102100000</updated>
      </snapshotVersion>
      <snapshotVersion>
        <classifier>sources</classifier>
        <extension>jar</extension>
        <value>1.0-20260101.100000-1</value>
        <updated>20260101100000</updated>
      </snapshotVersion>
    </snapshotVersions>
  </versioning>
</metadata>
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if snapshotMetadata("g", "lib", "1.0-SNAPSHOT", []string{"lib-1.0-SNAPSHOT.jar"}) != nil {
		t.Error("no timestamped file: no document")
	}
}
