package npmpublish

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

// The tarballs and publish bodies of these tests are built as in the
// tests of package npm, which publish them to a server.

func makeTarball(t testing.TB, pkgJSON map[string]any, extra map[string]string) []byte {
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
		writeTarFile(t, tw, name, files[name])
		delete(files, name)
	}
	for name, content := range files {
		writeTarFile(t, tw, name, content)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTarFile(t testing.TB, tw *tar.Writer, name, content string) {
	t.Helper()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(499162500, 0), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
}

// publishDoc builds the body npm 11 PUTs for one version.
type publishDoc struct {
	name, version string
	tags          []string
	pkgJSON       map[string]any
	tarball       []byte
}

func newPublish(t testing.TB, name, version string, extra map[string]any) *publishDoc {
	pj := map[string]any{"name": name, "version": version, "description": "test package " + name, "main": "index.js", "license": "MIT"}
	for k, v := range extra {
		pj[k] = v
	}
	return &publishDoc{name: name, version: version, tags: []string{"latest"}, pkgJSON: pj, tarball: makeTarball(t, pj, nil)}
}

func (p *publishDoc) body(registry string) []byte {
	s512 := sha512.Sum512(p.tarball)
	s1 := sha1.Sum(p.tarball)
	manifest := map[string]any{}
	for k, v := range p.pkgJSON {
		manifest[k] = v
	}
	manifest["_id"] = p.name + "@" + p.version
	manifest["_nodeVersion"] = "20.20.2"
	manifest["_npmVersion"] = "11.19.1"
	manifest["readme"] = "# " + p.name
	manifest["readmeFilename"] = "README.md"
	manifest["dist"] = map[string]any{
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
		"shasum":    hex.EncodeToString(s1[:]),
		"tarball":   registry + p.name + "/-/" + p.name + "-" + p.version + ".tgz",
	}
	tags := map[string]string{}
	for _, t := range p.tags {
		tags[t] = p.version
	}
	doc := map[string]any{
		"_id":         p.name,
		"name":        p.name,
		"description": p.pkgJSON["description"],
		"dist-tags":   tags,
		"versions":    map[string]any{p.version: manifest},
		"access":      nil,
		"_attachments": map[string]any{
			p.name + "-" + p.version + ".tgz": map[string]any{
				"content_type": "application/octet-stream",
				"data":         base64.StdEncoding.EncodeToString(p.tarball),
				"length":       len(p.tarball),
			},
		},
	}
	b, _ := json.Marshal(doc)
	return b
}

// gzipBomb is a package tarball of a few megabytes whose one file expands
// to expanded bytes of zeros: a tar header, then the same gzip member of
// zeros again and again (gzip readers read concatenated members as one
// stream).
func gzipBomb(t testing.TB, pkgJSON map[string]any, expanded int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	pj, _ := json.Marshal(pkgJSON)
	writeTarFile(t, tw, "package/package.json", string(pj))
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

// gzipTrailer is a gzip member with the tar end-of-archive marker (two
// zero blocks), which finishes the file of gzipBomb when its size is a
// multiple of 512.
func gzipTrailer(t testing.TB) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	_ = zw.Close()
	return buf.Bytes()
}
