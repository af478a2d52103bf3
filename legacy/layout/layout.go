// Package layout reads the storage tree of a distribution registry
// (registry:2, v2.8 and v3) through gocloud, as the registry itself lays
// it out under <root>/docker/registry/v2:
//
//	blobs/sha256/<hh>/<hex>/data                                  content
//	repositories/<name>/_layers/sha256/<hex>/link                 blob linked to the repository
//	repositories/<name>/_manifests/revisions/sha256/<hex>/link    manifest revision
//	repositories/<name>/_manifests/tags/<tag>/current/link        tag -> revision digest
//	repositories/<name>/_uploads/<id>/...                         upload in progress
//
// <name> may be nested (a/b/c). A directory is a repository when it holds
// _manifests (what v3 lists in its catalog) or _layers / _uploads (v2.8
// lists any directory holding one of the three). Link files hold
// "sha256:<hex>"; anything else in one is reported as a broken link.
package layout

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/errgroup"
)

// Root is the key prefix of the registry's tree in a bucket whose root is
// the registry's storage root directory.
const Root = "docker/registry/v2/"

// Digest is a sha256 digest.
type Digest [32]byte

func (d Digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

func (d Digest) hex() string { return hex.EncodeToString(d[:]) }

// ParseDigest parses "sha256:<64 hex>".
func ParseDigest(s string) (Digest, error) {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 || strings.ToLower(h) != h {
		return Digest{}, fmt.Errorf("not a sha256 digest: %q", truncate(s, 80))
	}
	var d Digest
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return Digest{}, fmt.Errorf("not a sha256 digest: %q", truncate(s, 80))
	}
	return d, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ErrNotFound: the object does not exist in the legacy tree.
var ErrNotFound = errors.New("layout: not found")

// ErrTooLarge: a blob read whole is larger than allowed.
var ErrTooLarge = errors.New("layout: blob too large")

// ErrBadLink: a link file that does not hold a sha256 digest.
var ErrBadLink = errors.New("layout: broken link file")

// Tree is a legacy registry tree in a bucket.
type Tree struct {
	b      *blob.Bucket
	prefix string // Root, or another prefix given to Open
}

// New reads the tree at Root of b.
func New(b *blob.Bucket) *Tree { return &Tree{b: b, prefix: Root} }

// Bucket returns the underlying bucket.
func (t *Tree) Bucket() *blob.Bucket { return t.b }

func (t *Tree) repoKey(repo string, parts ...string) string {
	return t.prefix + "repositories/" + repo + "/" + strings.Join(parts, "/")
}

// BlobKey is the key of a blob's data.
func (t *Tree) BlobKey(d Digest) string {
	h := d.hex()
	return t.prefix + "blobs/sha256/" + h[:2] + "/" + h + "/data"
}

// RepositoryInfo is what one listing learns about a repository.
type RepositoryInfo struct {
	Name string
	// Markers seen: "_manifests", "_layers", "_uploads".
	HasManifests, HasLayers, HasUploads bool
	// Tags counts tag current links.
	Tags int
	// Uploads counts upload directories (abandoned or in progress).
	Uploads int
}

// Repositories lists every repository of the tree, sorted by name, in one
// flat listing of repositories/ (one pass, paginated by the bucket).
func (t *Tree) Repositories(ctx context.Context) ([]*RepositoryInfo, error) {
	base := t.prefix + "repositories/"
	byName := map[string]*RepositoryInfo{}
	uploads := map[string]bool{}
	it := t.b.List(&blob.ListOptions{Prefix: base})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("layout: list %s: %w", base, err)
		}
		rel := strings.TrimPrefix(obj.Key, base)
		name, rest, ok := splitMarker(rel)
		if !ok {
			continue
		}
		info := byName[name]
		if info == nil {
			info = &RepositoryInfo{Name: name}
			byName[name] = info
		}
		switch {
		case strings.HasPrefix(rest, "_manifests/"):
			info.HasManifests = true
			if tag, ok := strings.CutPrefix(rest, "_manifests/tags/"); ok && strings.HasSuffix(tag, "/current/link") &&
				strings.Count(tag, "/") == 2 {
				info.Tags++
			}
		case strings.HasPrefix(rest, "_layers/"):
			info.HasLayers = true
		case strings.HasPrefix(rest, "_uploads/"):
			info.HasUploads = true
			id, _, _ := strings.Cut(strings.TrimPrefix(rest, "_uploads/"), "/")
			if !uploads[name+"/"+id] {
				uploads[name+"/"+id] = true
				info.Uploads++
			}
		}
	}
	out := make([]*RepositoryInfo, 0, len(byName))
	for _, info := range byName {
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b *RepositoryInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// splitMarker splits "<name>/_marker/..." at the first component starting
// with "_" (repository name components never do).
func splitMarker(rel string) (name, rest string, ok bool) {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "_") {
			if i == 0 {
				return "", "", false
			}
			switch p {
			case "_manifests", "_layers", "_uploads":
				return strings.Join(parts[:i], "/"), strings.Join(parts[i:], "/"), true
			}
			return "", "", false
		}
	}
	return "", "", false
}

// TagLink is one tag of a repository.
type TagLink struct {
	Name   string
	Digest Digest
	// Err is set (ErrBadLink wrapped) when the link file is empty or
	// garbage; Digest is then zero.
	Err error
}

// Tags reads every tag's current link, sorted by name. The links are read
// concurrently (up to 16 at a time).
func (t *Tree) Tags(ctx context.Context, repo string) ([]TagLink, error) {
	base := t.repoKey(repo, "_manifests", "tags") + "/"
	var out []TagLink
	var keys []string
	it := t.b.List(&blob.ListOptions{Prefix: base})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("layout: list tags of %s: %w", repo, err)
		}
		tag, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, base), "/current/link")
		if !ok || strings.Contains(tag, "/") {
			continue
		}
		out = append(out, TagLink{Name: tag})
		keys = append(keys, obj.Key)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range out {
		g.Go(func() error {
			d, err := t.readLink(gctx, keys[i])
			if err != nil && !errors.Is(err, ErrBadLink) {
				return err
			}
			out[i].Digest, out[i].Err = d, err
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b TagLink) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Revisions lists the manifest revisions linked in a repository, with the
// broken ones' errors.
func (t *Tree) Revisions(ctx context.Context, repo string) ([]Digest, error) {
	base := t.repoKey(repo, "_manifests", "revisions", "sha256") + "/"
	var out []Digest
	it := t.b.List(&blob.ListOptions{Prefix: base})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("layout: list revisions of %s: %w", repo, err)
		}
		h, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, base), "/link")
		if !ok {
			continue
		}
		d, err := ParseDigest("sha256:" + h)
		if err != nil {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// readLink reads a link file: ErrNotFound when missing, ErrBadLink when it
// does not hold a digest.
func (t *Tree) readLink(ctx context.Context, key string) (Digest, error) {
	b, err := t.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Digest{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return Digest{}, fmt.Errorf("layout: read %s: %w", key, err)
	}
	d, err := ParseDigest(strings.TrimSpace(string(b)))
	if err != nil {
		return Digest{}, fmt.Errorf("%w: %s: %v", ErrBadLink, key, err)
	}
	return d, nil
}

// RevisionLinked checks the revision link of a manifest in a repository:
// nil when it exists and names d, ErrNotFound / ErrBadLink otherwise.
func (t *Tree) RevisionLinked(ctx context.Context, repo string, d Digest) error {
	return t.checkLink(ctx, t.repoKey(repo, "_manifests", "revisions", "sha256", d.hex(), "link"), d)
}

// LayerLinked checks the layer link of a blob in a repository, like
// RevisionLinked (the legacy registry's access rule: a repository serves
// only blobs linked to it).
func (t *Tree) LayerLinked(ctx context.Context, repo string, d Digest) error {
	return t.checkLink(ctx, t.repoKey(repo, "_layers", "sha256", d.hex(), "link"), d)
}

func (t *Tree) checkLink(ctx context.Context, key string, d Digest) error {
	got, err := t.readLink(ctx, key)
	if err != nil {
		return err
	}
	if got != d {
		return fmt.Errorf("%w: %s names %s", ErrBadLink, key, got)
	}
	return nil
}

// BlobSize returns the size of a blob's data; ErrNotFound when missing.
func (t *Tree) BlobSize(ctx context.Context, d Digest) (int64, error) {
	a, err := t.b.Attributes(ctx, t.BlobKey(d))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return 0, fmt.Errorf("%w: blob data of %s", ErrNotFound, d)
	}
	if err != nil {
		return 0, fmt.Errorf("layout: stat %s: %w", d, err)
	}
	return a.Size, nil
}

// OpenBlob opens a blob's data; ErrNotFound when missing.
func (t *Tree) OpenBlob(ctx context.Context, d Digest) (io.ReadCloser, error) {
	r, err := t.b.NewReader(ctx, t.BlobKey(d), nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%w: blob data of %s", ErrNotFound, d)
	}
	if err != nil {
		return nil, fmt.Errorf("layout: open %s: %w", d, err)
	}
	return r, nil
}

// ReadBlob reads a small blob (a manifest) whole, at most max bytes.
func (t *Tree) ReadBlob(ctx context.Context, d Digest, max int64) ([]byte, error) {
	r, err := t.OpenBlob(ctx, d)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("layout: read %s: %w", d, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, d, max)
	}
	return b, nil
}

// Uploads lists the upload session ids of a repository (abandoned or in
// progress).
func (t *Tree) Uploads(ctx context.Context, repo string) ([]string, error) {
	base := t.repoKey(repo, "_uploads") + "/"
	var out []string
	it := t.b.List(&blob.ListOptions{Prefix: base, Delimiter: "/"})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("layout: list uploads of %s: %w", repo, err)
		}
		if obj.IsDir {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(obj.Key, base), "/"))
		}
	}
	slices.Sort(out)
	return out, nil
}

// Exists reports whether the tree holds the repository (any object under
// its directory).
func (t *Tree) Exists(ctx context.Context, repo string) (bool, error) {
	it := t.b.List(&blob.ListOptions{Prefix: t.prefix + "repositories/" + repo + "/"})
	_, err := it.Next(ctx)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("layout: list %s: %w", repo, err)
	}
	return true, nil
}
