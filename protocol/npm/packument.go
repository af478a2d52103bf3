package npm

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Content types of packument responses.
const (
	contentTypeJSON   = "application/json; charset=utf-8"
	contentTypeCorgi  = "application/vnd.npm.install-v1+json; charset=utf-8"
	mediaTypeCorgi    = "application/vnd.npm.install-v1+json"
	rebuildTimeout    = 60 * time.Second
	timeLayoutPackage = "2006-01-02T15:04:05.000Z"
)

// abbreviatedFields are the version fields of the abbreviated ("corgi")
// document: npm's package-metadata.md list plus the fields the npm CLI reads
// from it (deprecated, peerDependenciesMeta, acceptDependencies, cpu, os,
// libc, hasInstallScript, funding).
var abbreviatedFields = []string{
	"name", "version", "deprecated", "dependencies", "optionalDependencies", "devDependencies",
	"bundleDependencies", "bundledDependencies", "peerDependencies", "peerDependenciesMeta",
	"acceptDependencies", "bin", "directories", "dist", "engines", "cpu", "os", "libc", "funding",
	"_hasShrinkwrap", "hasInstallScript",
}

// hoistedFields are copied from the latest version to the top level of the
// full document (npm package-metadata.md).
var hoistedFields = []string{"description", "author", "repository", "homepage", "keywords", "bugs", "license", "contributors"}

// wantsCorgi reports whether the Accept header asks for the abbreviated
// document (npm's install-v1 media type, as the npm CLI sends it first).
func wantsCorgi(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), mediaTypeCorgi)
}

// getPackument is GET/HEAD /<name>.
func (h *handler) getPackument(req *request, name string) error {
	kind, ct := enum.NpmMetadataFull, contentTypeJSON
	if wantsCorgi(req.r) {
		kind, ct = enum.NpmMetadataAbbreviated, contentTypeCorgi
	}
	return h.serveMetadata(req, name, kind, ct)
}

// getDistTags is GET /-/package/<name>/dist-tags (the dist_tags file).
func (h *handler) getDistTags(req *request, name string) error {
	return h.serveMetadata(req, name, enum.NpmMetadataDistTags, contentTypeJSON)
}

// serveMetadata serves a package's metadata file of a kind: the fresh row
// when there is one (one query, then the object), else a rebuild on the
// request goroutine (single-flight per package within this process).
func (h *handler) serveMetadata(req *request, name string, kind enum.NpmMetadataKind, contentType string) error {
	repo, err := h.readRepo(req)
	if err != nil {
		return err
	}
	if !npmname.Plausible(name) {
		return errorf(http.StatusNotFound, "no such package available")
	}
	ctx := req.r.Context()
	cached, err := h.npm.CachedMetadata(ctx, repo, name, kind)
	if err != nil {
		return err
	}
	if cached.Blob != nil {
		return h.serveBlob(req, cached.Blob, contentType)
	}
	res, err := h.rebuild(ctx, req.r, repo, cached.Package, false)
	if err != nil {
		return err
	}
	f := res.Files[kind]
	if f.Blob != nil {
		return h.serveBlob(req, f.Blob, contentType)
	}
	etag := `"` + hex.EncodeToString(f.SHA256[:]) + `"`
	if notModified(req, etag) {
		return nil
	}
	setMetadataHeaders(req.w, etag, contentType, len(f.Data))
	req.w.WriteHeader(http.StatusOK)
	if req.r.Method != http.MethodHead {
		_, _ = req.w.Write(f.Data)
	}
	return nil
}

func setMetadataHeaders(w http.ResponseWriter, etag, contentType string, size int) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(size))
	w.Header().Set("ETag", etag)
	// Revalidate every time (If-None-Match, answered 304): a publish must
	// be visible to the next install.
	w.Header().Set("Cache-Control", "no-cache")
}

// notModified answers 304 when If-None-Match names the current ETag.
func notModified(req *request, etag string) bool {
	inm := req.r.Header.Get("If-None-Match")
	if inm == "" {
		return false
	}
	for _, t := range strings.Split(inm, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			req.w.Header().Set("ETag", etag)
			req.w.Header().Set("Cache-Control", "no-cache")
			req.w.WriteHeader(http.StatusNotModified)
			return true
		}
	}
	return false
}

// serveBlob streams a stored metadata file.
func (h *handler) serveBlob(req *request, b *store.Blob, contentType string) error {
	etag := `"` + hex.EncodeToString(b.SHA256[:]) + `"`
	if notModified(req, etag) {
		return nil
	}
	if req.r.Method == http.MethodHead {
		setMetadataHeaders(req.w, etag, contentType, int(b.Size))
		req.w.WriteHeader(http.StatusOK)
		return nil
	}
	rc, err := h.st.OpenBlobObject(req.r.Context(), b, 0, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	setMetadataHeaders(req.w, etag, contentType, int(b.Size))
	req.w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(req.w, rc)
	return nil
}

// tarballPrefix is what a tarball file name is appended to in dist.tarball.
func (h *handler) tarballPrefix(r *http.Request, repo *npmstore.Repository, name string) string {
	return h.registryURL(r, repo) + "/" + name + "/-/"
}

// rebuild rebuilds a package's metadata files, once at a time per package
// in this process (concurrent readers share the result; across replicas
// the package row lock serialises the swaps).
func (h *handler) rebuild(ctx context.Context, r *http.Request, repo *npmstore.Repository, pkg npmstore.PackageRef, force bool) (*npmstore.RebuildResult, error) {
	prefix := h.tarballPrefix(r, repo, pkg.Name)
	opts := npmstore.MetadataOptions{TTL: h.opts.PackumentTTL, Force: force}
	key := pkg.PackageID.String() + "|" + prefix
	ch := h.rebuilds.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rebuildTimeout)
		defer cancel()
		return h.npm.RebuildMetadata(rctx, repo, pkg, opts, func(st *npmstore.PackageState) (npmstore.Documents, error) {
			return buildDocuments(st, prefix)
		})
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*npmstore.RebuildResult), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// jsonString encodes a string as JSON.
func jsonString(s string) []byte { return appendJSONString(nil, s) }

// appendJSONString appends s as a JSON string; strings without characters
// to escape (versions, URLs, names) are copied as they are.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayoutPackage) }

var abbreviatedSet = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range abbreviatedFields {
		m[f] = true
	}
	return m
}()

// versionRenderer writes versions into the full and abbreviated documents.
type versionRenderer struct {
	full, corgi    *bytes.Buffer
	buf, dist, tmp []byte
}

// render writes one version: the stored package.json with dist.tarball
// set, and its abbreviated projection. keep, when not nil, receives copies
// of the top-level values (for the latest version's hoisted fields).
func (r *versionRenderer) render(v *npmstore.VersionDoc, fileBase, version string, keep map[string]json.RawMessage) error {
	r.full.WriteByte('{')
	r.corgi.WriteByte('{')
	nf, nc := 0, 0
	err := eachMember(v.Manifest, &r.buf, func(key, val []byte) error {
		if keyIs(key, "dist") {
			d := append(r.dist[:0], '{')
			var inner []byte
			err := eachMember(val, &inner, func(k, dv []byte) error {
				if keyIs(k, "tarball") {
					return nil
				}
				d = append(d, k...)
				d = append(d, ':')
				d = append(d, dv...)
				d = append(d, ',')
				return nil
			})
			if err != nil {
				return err
			}
			d = append(d, `"tarball":`...)
			d = appendJSONString(d, fileBase+version+".tgz")
			d = append(d, '}')
			r.dist, val = d, d
		}
		if nf > 0 {
			r.full.WriteByte(',')
		}
		r.full.Write(key)
		r.full.WriteByte(':')
		r.full.Write(val)
		nf++
		plain := bytes.IndexByte(key, '\\') < 0
		if plain && abbreviatedSet[string(key[1:len(key)-1])] {
			if nc > 0 {
				r.corgi.WriteByte(',')
			}
			r.corgi.Write(key)
			r.corgi.WriteByte(':')
			r.corgi.Write(val)
			nc++
		}
		if keep != nil && plain {
			keep[string(key[1:len(key)-1])] = append(json.RawMessage(nil), val...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("stored package.json of %s: %w", v.Version, err)
	}
	r.full.WriteByte('}')
	r.corgi.WriteByte('}')
	return nil
}

// buildDocuments renders the three metadata files of a package state:
// one pass over the versions (each stored package.json split at its top
// level and compacted while copied, never decoded or deep-cloned), then the
// envelope around them.
func buildDocuments(st *npmstore.PackageState, tarballPrefix string) (npmstore.Documents, error) {
	name := st.Package.Name
	latestIdx := len(st.Versions) - 1
	for _, t := range st.Tags {
		if t.Name == "latest" {
			for i := range st.Versions {
				if st.Versions[i].ID == t.VersionID {
					latestIdx = i
				}
			}
		}
	}
	latest := &st.Versions[latestIdx]
	created, modified := st.Versions[0].CreatedAt, st.Versions[0].CreatedAt
	size := 0
	for _, v := range st.Versions {
		if v.CreatedAt.Before(created) {
			created = v.CreatedAt
		}
		if v.CreatedAt.After(modified) {
			modified = v.CreatedAt
		}
		size += len(v.Manifest) + 256
	}

	var tags bytes.Buffer
	tags.WriteByte('{')
	for i, t := range st.Tags {
		if i > 0 {
			tags.WriteByte(',')
		}
		tags.Write(jsonString(t.Name))
		tags.WriteByte(':')
		tags.Write(jsonString(t.Version))
	}
	tags.WriteByte('}')

	// The versions, rendered once into both documents.
	versions := bytes.NewBuffer(make([]byte, 0, size))
	corgiVersions := bytes.NewBuffer(make([]byte, 0, size*3/4))
	latestFields := map[string]json.RawMessage{}
	r := &versionRenderer{full: versions, corgi: corgiVersions}
	fileBase := tarballPrefix + npmname.Base(name) + "-"
	for i := range st.Versions {
		v := &st.Versions[i]
		if i > 0 {
			versions.WriteByte(',')
			corgiVersions.WriteByte(',')
		}
		r.tmp = appendJSONString(r.tmp[:0], v.Version)
		r.tmp = append(r.tmp, ':')
		versions.Write(r.tmp)
		corgiVersions.Write(r.tmp)
		var keep map[string]json.RawMessage
		if i == latestIdx {
			keep = latestFields
		}
		if err := r.render(v, fileBase, v.Version, keep); err != nil {
			return nil, err
		}
	}

	full := bytes.NewBuffer(make([]byte, 0, versions.Len()+4096))
	full.WriteString(`{"_id":`)
	full.Write(jsonString(name))
	full.WriteString(`,"_rev":`)
	full.Write(jsonString(st.Rev()))
	full.WriteString(`,"name":`)
	full.Write(jsonString(name))
	for _, f := range hoistedFields {
		if raw, ok := latestFields[f]; ok {
			full.WriteString(`,"` + f + `":`)
			full.Write(raw)
		}
	}
	full.WriteString(`,"dist-tags":`)
	full.Write(tags.Bytes())
	full.WriteString(`,"versions":{`)
	full.Write(versions.Bytes())
	full.WriteString(`},"time":{"created":`)
	full.Write(jsonString(formatTime(created)))
	full.WriteString(`,"modified":`)
	full.Write(jsonString(formatTime(modified)))
	for _, v := range st.Versions {
		r.tmp = append(appendJSONString(append(r.tmp[:0], ','), v.Version), ':', '"')
		r.tmp = append(v.CreatedAt.UTC().AppendFormat(r.tmp, timeLayoutPackage), '"')
		full.Write(r.tmp)
	}
	full.WriteString(`},"maintainers":[`)
	if u, ok := latestFields["_npmUser"]; ok {
		full.Write(u)
	}
	full.WriteString(`]`)
	if latest.Readme != nil {
		full.WriteString(`,"readme":`)
		full.Write(jsonString(*latest.Readme))
	}
	if raw, ok := latestFields["readmeFilename"]; ok {
		full.WriteString(`,"readmeFilename":`)
		full.Write(raw)
	}
	full.WriteString(`,"users":{},"_attachments":{}}`)

	corgi := bytes.NewBuffer(make([]byte, 0, corgiVersions.Len()+1024))
	corgi.WriteString(`{"name":`)
	corgi.Write(jsonString(name))
	corgi.WriteString(`,"modified":`)
	corgi.Write(jsonString(formatTime(modified)))
	corgi.WriteString(`,"dist-tags":`)
	corgi.Write(tags.Bytes())
	corgi.WriteString(`,"versions":{`)
	corgi.Write(corgiVersions.Bytes())
	corgi.WriteString(`}}`)

	return npmstore.Documents{
		enum.NpmMetadataFull:        full.Bytes(),
		enum.NpmMetadataDistTags:    tags.Bytes(),
		enum.NpmMetadataAbbreviated: corgi.Bytes(),
	}, nil
}

// getVersion is GET /<name>/<version-or-tag>: one version document, cut
// from the full packument (npmjs serves this; the npm CLI does not use it).
func (h *handler) getVersion(req *request, name, spec string) error {
	repo, err := h.readRepo(req)
	if err != nil {
		return err
	}
	if !npmname.Plausible(name) {
		return errorf(http.StatusNotFound, "no such package available")
	}
	ctx := req.r.Context()
	cached, err := h.npm.CachedMetadata(ctx, repo, name, enum.NpmMetadataFull)
	if err != nil {
		return err
	}
	var doc []byte
	if cached.Blob != nil {
		rc, err := h.st.OpenBlobObject(ctx, cached.Blob, 0, -1)
		if err != nil {
			return err
		}
		doc, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
	} else {
		res, err := h.rebuild(ctx, req.r, repo, cached.Package, false)
		if err != nil {
			return err
		}
		f := res.Files[enum.NpmMetadataFull]
		doc = f.Data
		if doc == nil {
			rc, err := h.st.OpenBlobObject(ctx, f.Blob, 0, -1)
			if err != nil {
				return err
			}
			doc, err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return err
			}
		}
	}
	var p struct {
		DistTags map[string]string          `json:"dist-tags"`
		Versions map[string]json.RawMessage `json:"versions"`
	}
	if err := json.Unmarshal(doc, &p); err != nil {
		return err
	}
	v := spec
	if t, ok := p.DistTags[spec]; ok {
		v = t
	}
	raw, ok := p.Versions[v]
	if !ok {
		return errorf(http.StatusNotFound, "version not found: %s@%s", name, spec)
	}
	req.w.Header().Set("Content-Type", contentTypeJSON)
	req.w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	req.w.WriteHeader(http.StatusOK)
	if req.r.Method != http.MethodHead {
		_, _ = req.w.Write(raw)
	}
	return nil
}
