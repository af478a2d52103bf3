// Package npmpack builds what the npm CLI sends, for tests: package
// tarballs as npm pack writes them and the body npm 11 PUTs to publish one
// version. It depends on the standard library alone, so the fuzzed
// parsers' tests can use it without compiling the registry.
package npmpack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// Tarball builds a package tarball as npm pack does ("package/..."), with
// the given package.json and extra files.
func Tarball(t testing.TB, pkgJSON map[string]any, extra map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	files := map[string]string{}
	pj, _ := json.MarshalIndent(pkgJSON, "", "  ")
	files["package/package.json"] = string(pj)
	files["package/index.js"] = fmt.Sprintf("module.exports = %q;\n", pkgJSON["name"].(string)+"@"+pkgJSON["version"].(string))
	for k, v := range extra {
		files["package/"+k] = v
	}
	for _, name := range []string{"package/package.json", "package/index.js"} {
		WriteTarFile(t, tw, name, files[name])
		delete(files, name)
	}
	for name, content := range files {
		WriteTarFile(t, tw, name, content)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// WriteTarFile writes one regular file with npm pack's fixed timestamp.
func WriteTarFile(t testing.TB, tw *tar.Writer, name, content string) {
	t.Helper()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(499162500, 0), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
}

// Publish is one version to publish; Body is what npm 11 PUTs for it.
type Publish struct {
	Name, Version string
	Tags          []string
	PkgJSON       map[string]any
	Tarball       []byte
}

// NewPublish is version of package name tagged latest, with a minimal
// package.json plus extra.
func NewPublish(t testing.TB, name, version string, extra map[string]any) *Publish {
	pj := map[string]any{"name": name, "version": version, "description": "test package " + name, "main": "index.js", "license": "MIT"}
	for k, v := range extra {
		pj[k] = v
	}
	return &Publish{Name: name, Version: version, Tags: []string{"latest"}, PkgJSON: pj, Tarball: Tarball(t, pj, nil)}
}

// Manifest is the version's entry of the publish body's versions, its
// dist pointing under registry.
func (p *Publish) Manifest(registry string) map[string]any {
	s512 := sha512.Sum512(p.Tarball)
	s1 := sha1.Sum(p.Tarball)
	manifest := map[string]any{}
	for k, v := range p.PkgJSON {
		manifest[k] = v
	}
	manifest["_id"] = p.Name + "@" + p.Version
	manifest["_nodeVersion"] = "20.20.2"
	manifest["_npmVersion"] = "11.19.1"
	manifest["readme"] = "# " + p.Name
	manifest["readmeFilename"] = "README.md"
	manifest["dist"] = map[string]any{
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
		"shasum":    hex.EncodeToString(s1[:]),
		"tarball":   registry + p.Name + "/-/" + p.Name + "-" + p.Version + ".tgz",
	}
	return manifest
}

// Body is the publish body, the tarball attached.
func (p *Publish) Body(registry string) []byte {
	tags := map[string]string{}
	for _, t := range p.Tags {
		tags[t] = p.Version
	}
	doc := map[string]any{
		"_id":         p.Name,
		"name":        p.Name,
		"description": p.PkgJSON["description"],
		"dist-tags":   tags,
		"versions":    map[string]any{p.Version: p.Manifest(registry)},
		"access":      nil,
		"_attachments": map[string]any{
			p.Name + "-" + p.Version + ".tgz": map[string]any{
				"content_type": "application/octet-stream",
				"data":         base64.StdEncoding.EncodeToString(p.Tarball),
				"length":       len(p.Tarball),
			},
		},
	}
	b, _ := json.Marshal(doc)
	return b
}

// GzipBomb is a package tarball of a few megabytes whose one file expands
// to expanded bytes of zeros: a tar header, then the same gzip member of
// zeros again and again (gzip readers read concatenated members as one
// stream).
func GzipBomb(t testing.TB, pkgJSON map[string]any, expanded int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	pj, _ := json.Marshal(pkgJSON)
	WriteTarFile(t, tw, "package/package.json", string(pj))
	if err := tw.WriteHeader(&tar.Header{Name: "package/zeros", Mode: 0o644, Size: expanded, ModTime: time.Unix(499162500, 0), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil { // the tar writer stays open: its entry is never finished
		t.Fatal(err)
	}
	const chunk = 8 << 20
	var member bytes.Buffer
	mw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	_, _ = mw.Write(make([]byte, chunk))
	_ = mw.Close()
	for range expanded / chunk {
		buf.Write(member.Bytes())
	}
	return buf.Bytes()
}

// GzipTrailer is a gzip member with the tar end-of-archive marker (two
// zero blocks), which finishes the file of GzipBomb when its size is a
// multiple of 512.
func GzipTrailer(t testing.TB) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	_ = zw.Close()
	return buf.Bytes()
}
