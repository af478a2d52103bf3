package graph

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Helpers of the npm and Maven resolvers (packages.resolvers.go). Reads
// follow the existing resolvers: a repository, once returned, has passed
// canRead, and its nested fields need no further check. Mutations are
// authorized through package auth like every other resolver (graph/auth.go).

// versionKey is the keyset of Maven versions (by version string).
type versionKey struct {
	V string `json:"v"`
}

// pkgLoaders returns the request's package dataloaders.
func pkgLoaders(ctx context.Context) *packageLoaders { return loadersFrom(ctx).pkg }

// packageItemRef resolves a PackageItemRefInput to the namespace id and the
// item id.
func (r *Resolver) packageItemRef(ctx context.Context, in model.PackageItemRefInput, what string) (uuid.UUID, uuid.UUID, error) {
	// Items are addressed by id within a namespace, so the decision is on
	// the namespace: trash operations are namespace administration.
	if err := r.authorizeNamespaceSlug(ctx, in.Namespace, auth.ActionAdmin); err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	id, err := parseID(what, in.ID)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	ns, err := r.store.NamespaceBySlug(ctx, in.Namespace)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	return ns.ID, id, nil
}

// npmVersionByID loads one npm version (trash included) or NOT_FOUND.
func npmVersionByID(ctx context.Context, ns, id uuid.UUID) (*model.NpmVersion, error) {
	v, err := pkgLoaders(ctx).npmVersion.Load(ctx, idKey{ns: ns, id: id})()
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, notFound("npm version %s not found", id)
	}
	return v, nil
}

// npmPackageByID loads one npm package (trash included) or NOT_FOUND.
func npmPackageByID(ctx context.Context, ns, id uuid.UUID) (*model.NpmPackage, error) {
	p, err := pkgLoaders(ctx).npmPackage.Load(ctx, idKey{ns: ns, id: id})()
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, notFound("npm package %s not found", id)
	}
	return p, nil
}

// mavenPackageByID loads one Maven package (trash included) or NOT_FOUND.
func mavenPackageByID(ctx context.Context, ns, id uuid.UUID) (*model.MavenPackage, error) {
	p, err := pkgLoaders(ctx).mavenPackage.Load(ctx, idKey{ns: ns, id: id})()
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, notFound("maven package %s not found", id)
	}
	return p, nil
}

// npmDetails loads the package.json projection of a version; the first
// field asked for queues the whole page.
func npmDetails(ctx context.Context, v *model.NpmVersion) (*npmstore.VersionDetails, error) {
	l := pkgLoaders(ctx)
	prime(ctx, l.npmDetails, v.Siblings, "npmDetails", idKeys(v.NamespaceID))
	d, err := l.npmDetails.Load(ctx, idKey{ns: v.NamespaceID, id: v.ID})()
	if err != nil {
		return nil, err
	}
	if d == nil {
		return &npmstore.VersionDetails{}, nil
	}
	return d, nil
}

var npmDependencyFields = map[model.NpmDependencyKind]string{
	model.NpmDependencyKindProd:     "dependencies",
	model.NpmDependencyKindDev:      "devDependencies",
	model.NpmDependencyKindPeer:     "peerDependencies",
	model.NpmDependencyKindOptional: "optionalDependencies",
}

// npmDependencies decodes one dependency map, sorted by name. Entries whose
// range is not a string (the package.json schema forbids them) are left
// out.
func npmDependencies(raw []byte) []*model.NpmDependency {
	out := []*model.NpmDependency{}
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return out // absent, or not an object: nothing to show
	}
	for name, v := range m {
		var rng string
		if json.Unmarshal(v, &rng) == nil {
			out = append(out, &model.NpmDependency{Name: name, Range: rng})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func toMavenFile(f *maven.FileInfo) *model.MavenFile {
	mf := &model.MavenFile{
		ID: f.ID, FileName: f.FileName, SizeBytes: f.Size,
		SHA256: "sha256:" + hex.EncodeToString(f.Checksums.SHA256[:]),
		SHA1:   hex.EncodeToString(f.Checksums.SHA1[:]),
		SHA512: hex.EncodeToString(f.Checksums.SHA512[:]),
	}
	if f.Checksums.MD5 != nil {
		s := hex.EncodeToString(f.Checksums.MD5[:])
		mf.Md5 = &s
	}
	return mf
}

// mavenFiles is the files connection of a Maven version or package.
func mavenFiles(ctx context.Context, l *loader[pageKey, []*maven.FileInfo], g *model.Group, name string,
	ns, parent uuid.UUID, first *int, after *string) (*model.MavenFileConnection, error) {
	limit, err := pageSize(first)
	if err != nil {
		return nil, err
	}
	var key nameKey
	if _, err := decodeCursor(after, "mavenFile", &key); err != nil {
		return nil, err
	}
	pk := pageKey{ns: ns, parent: parent, limit: limit, after: key.Name}
	prime(ctx, l, g, pageName(name, pk), pageKeys(pk))
	rows, err := l.Load(ctx, pk)()
	if err != nil {
		return nil, err
	}
	rows, more := trim(rows, limit)
	conn := &model.MavenFileConnection{}
	var cursors []string
	for _, f := range rows {
		c := encodeCursor("mavenFile", nameKey{Name: f.FileName})
		cursors = append(cursors, c)
		conn.Edges = append(conn.Edges, &model.MavenFileEdge{Cursor: c, Node: toMavenFile(f)})
	}
	conn.Edges = nonNil(conn.Edges)
	conn.PageInfo = pageInfo(cursors, more, after)
	return conn, nil
}

// trashPackageNode converts the package entries of the trash.
func trashPackageNode(e *catalog.TrashEntry) model.TrashItem {
	switch {
	case e.MavenPackage != nil:
		return toMavenPackage(e.MavenPackage)
	case e.NpmPackage != nil:
		return toNpmPackage(e.NpmPackage)
	}
	return nil
}

// keysetJSON marshals a keyset value (always marshalable) for a page key.
func keysetJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
