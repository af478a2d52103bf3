package npm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
)

// fuzzMaxTarball is the tarball limit of FuzzParsePublish, small so that
// the fuzzer reaches it.
const fuzzMaxTarball = 4096

// FuzzParsePublish checks the publish document parser (what PUT /<name>
// does before it writes anything). A document it accepts carries exactly
// one attachment whose data decodes as base64 to the stored tarball, a
// gzip-compressed tar archive within the limit whose digests are the ones
// the document declares and the ones stored; the stored package.json is a
// JSON object naming the package and the version; every dist-tag points at
// that version. A refusal is an npm error with a 4xx status.
func FuzzParsePublish(f *testing.F) {
	for _, s := range publishSeeds(f) {
		f.Add(s.name, s.body)
	}
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		pub, err := parsePublishBody(name, body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status >= 500 {
				t.Fatalf("refused with %v: a bad document is a client error", err)
			}
			return
		}
		if pub == nil {
			return // no attachment: a metadata update, not a publish
		}
		checkPublication(t, name, body, pub)
	})
}

// parsePublishBody runs what putPackage does with a body before the store.
func parsePublishBody(name string, body []byte) (*publication, error) {
	doc, err := decodePublishBody(name, body)
	if err != nil {
		return nil, err
	}
	if len(doc.Attachments) == 0 {
		return nil, nil
	}
	return parsePublication(name, doc, fuzzMaxTarball, "fuzz")
}

func checkPublication(t *testing.T, name string, body []byte, pub *publication) {
	t.Helper()
	var doc struct {
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Dist struct {
				Integrity string `json:"integrity"`
				Shasum    string `json:"shasum"`
			} `json:"dist"`
		} `json:"versions"`
		Attachments map[string]struct {
			Data string `json:"data"`
		} `json:"_attachments"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("accepted a body that does not decode: %v", err)
	}
	if len(doc.Attachments) != 1 || len(doc.Versions) != 1 {
		t.Fatalf("accepted %d attachments and %d versions", len(doc.Attachments), len(doc.Versions))
	}
	for _, a := range doc.Attachments {
		tgz, err := base64.StdEncoding.DecodeString(a.Data)
		if err != nil || !bytes.Equal(tgz, pub.Tarball) {
			t.Fatalf("accepted an attachment that does not decode to the stored tarball: %v", err)
		}
	}
	if len(pub.Tarball) == 0 || len(pub.Tarball) > fuzzMaxTarball {
		t.Fatalf("accepted a tarball of %d bytes (limit %d)", len(pub.Tarball), fuzzMaxTarball)
	}
	if err := readTarGz(pub.Tarball); err != nil {
		t.Fatalf("accepted a tarball that does not read: %v", err)
	}
	integrity, shasum := tarballDigests(pub.Tarball)
	if pub.SHA1 != sha1.Sum(pub.Tarball) {
		t.Fatalf("stored SHA-1 is not the tarball's")
	}
	dist, ok := doc.Versions[pub.Version]
	if !ok || !store.ValidNpmVersion(pub.Version) {
		t.Fatalf("accepted version %q", pub.Version)
	}
	if dist.Dist.Shasum != "" && !strings.EqualFold(dist.Dist.Shasum, shasum) {
		t.Fatalf("accepted dist.shasum %q for a tarball of SHA-1 %s", dist.Dist.Shasum, shasum)
	}
	for _, e := range strings.Fields(dist.Dist.Integrity) {
		if strings.HasPrefix(e, "sha512-") && strings.SplitN(e, "?", 2)[0] != integrity {
			t.Fatalf("accepted dist.integrity %q for a tarball of %s", e, integrity)
		}
	}
	for tag, v := range doc.DistTags {
		if v != pub.Version || !slices.Contains(pub.Tags, tag) {
			t.Fatalf("dist-tags[%q] = %q, the stored tags are %q for %s", tag, v, pub.Tags, pub.Version)
		}
	}
	checkStoredPackageJSON(t, name, pub, integrity, shasum)
}

func checkStoredPackageJSON(t *testing.T, name string, pub *publication, integrity, shasum string) {
	t.Helper()
	var pj struct {
		ID      string `json:"_id"`
		Name    string `json:"name"`
		Version string `json:"version"`
		Dist    struct {
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
		Attachments json.RawMessage `json:"_attachments"`
	}
	if err := json.Unmarshal(pub.PackageJSON, &pj); err != nil {
		t.Fatalf("stored package.json does not decode: %v", err)
	}
	if pj.Name != name || pj.Version != pub.Version || pj.ID != name+"@"+pub.Version {
		t.Fatalf("stored package.json names %q %q %q for %s@%s", pj.ID, pj.Name, pj.Version, name, pub.Version)
	}
	if pj.Dist.Integrity != integrity || pj.Dist.Shasum != shasum {
		t.Fatalf("stored dist %+v, the tarball is %s %s", pj.Dist, integrity, shasum)
	}
	if pj.Attachments != nil {
		t.Fatalf("stored package.json keeps _attachments")
	}
}

func tarballDigests(tgz []byte) (integrity, shasum string) {
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	return "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), hex.EncodeToString(s1[:])
}

// readTarGz reads a .tgz to the end with the standard library alone.
func readTarGz(tgz []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		if _, err := tr.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return err
		}
	}
}

type publishSeed struct {
	name string
	body []byte
}

func publishSeeds(t testing.TB) []publishSeed {
	valid := newPublish(t, "fuzz-pkg", "1.0.0", nil)
	scoped := newPublish(t, "@scope/pkg", "2.0.0-rc.1", map[string]any{"scripts": map[string]string{"install": "x"}})
	scoped.tags = []string{"latest", "next"}
	withNUL := newPublish(t, "nul", "1.0.0", map[string]any{"description": "a\u0000b"})
	body := valid.body("http://registry/")
	seeds := []publishSeed{
		{valid.name, body},
		{scoped.name, scoped.body("http://registry/")},
		{withNUL.name, withNUL.body("http://registry/")},
		{"other", body},
		{valid.name, []byte(`{"name":"fuzz-pkg","versions":{"1.0.0":{"deprecated":"no"}}}`)},
		{valid.name, []byte(`{"_attachments":{"a.tgz":{"data":"!!!"}},"name":"fuzz-pkg","versions":{"1.0.0":{"name":"fuzz-pkg","version":"1.0.0","dist":{"shasum":"x"}}}}`)},
		{valid.name, []byte(`{"_attachments":{"a.tgz":{"data":"","length":-1}},"name":"fuzz-pkg","versions":{"1.0.0":{"name":"fuzz-pkg","version":"1.0.0","dist":{}}}}`)},
		{valid.name, []byte(`{"_attachments":{"a.tgz":{"data":"H4sIAAAAAAAAAwMAAAAAAAAAAAA=","length":20}},"name":"fuzz-pkg","versions":{"1.0.0":{"name":"fuzz-pkg","version":"1.0.0","dist":{"shasum":"x"}}}}`)},
	}
	// The same document with its data wrapped (base64 with newlines), with
	// the integrity in uppercase, with a wrong tag.
	for _, edit := range []func(string) string{
		func(s string) string { return strings.Replace(s, `"data":"H4sI`, `"data":"H4\nsI`, 1) },
		func(s string) string { return strings.Replace(s, `"shasum":"`, `"shasum":"A`, 1) },
		func(s string) string { return strings.Replace(s, `"latest":"1.0.0"`, `"latest":"1.0.1"`, 1) },
		func(s string) string {
			return strings.Replace(s, `"integrity":"sha512-`, `"integrity":"sha1-AAAA sha512-`, 1)
		},
	} {
		seeds = append(seeds, publishSeed{valid.name, []byte(edit(string(body)))})
	}
	return seeds
}

// TestParsePublicationOversizeAttachment checks that an attachment over
// the limit is refused before it is decoded: no allocation proportional to
// its size.
func TestParsePublicationOversizeAttachment(t *testing.T) {
	p := newPublish(t, "big", "1.0.0", nil)
	doc, err := decodePublishBody("big", p.body("http://registry/"))
	if err != nil {
		t.Fatal(err)
	}
	for k := range doc.Attachments {
		doc.Attachments[k] = attachment{Data: strings.Repeat("A", 64<<20)}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = parsePublication("big", doc, 1<<20, "fuzz")
	runtime.ReadMemStats(&after)
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 48 MiB attachment over a 1 MiB limit: %v, want 413", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing a 48 MiB attachment allocated %d bytes", grew)
	}
}

// TestPublishSeedsAccepted makes sure FuzzParsePublish starts from
// documents the parser accepts, so that its properties are exercised.
func TestPublishSeedsAccepted(t *testing.T) {
	for _, s := range publishSeeds(t)[:2] {
		if pub, err := parsePublishBody(s.name, s.body); err != nil || pub == nil {
			t.Fatalf("seed publish of %s refused: %v", s.name, err)
		}
	}
}
