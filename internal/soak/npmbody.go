package soak

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
	"time"
)

func hexSHA1(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// npmPublishBody is the document npm publish sends for a package of a
// package.json and one data file, and the tarball in it.
func npmPublishBody(registry, name, version string, data []byte) (doc, tgz []byte, err error) {
	pj, err := json.Marshal(map[string]string{"name": name, "version": version, "license": "MIT"})
	if err != nil {
		return nil, nil, fmt.Errorf("package.json: %w", err)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		body []byte
	}{{"package/package.json", pj}, {"package/data.bin", data}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, nil, fmt.Errorf("tar %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, fmt.Errorf("tar: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, nil, fmt.Errorf("gzip: %w", err)
	}
	tgz = buf.Bytes()
	s512 := sha512.Sum512(tgz)
	file := name + "-" + version + ".tgz"
	doc, err = json.Marshal(map[string]any{
		"_id": name, "name": name, "dist-tags": map[string]string{"latest": version},
		"versions": map[string]any{version: map[string]any{
			"name": name, "version": version, "license": "MIT", "_id": name + "@" + version,
			"dist": map[string]string{
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
				"shasum":    hexSHA1(tgz),
				"tarball":   registry + name + "/-/" + file,
			},
		}},
		"_attachments": map[string]any{file: map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz),
		}},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("publish document: %w", err)
	}
	return doc, tgz, nil
}
