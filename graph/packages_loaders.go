package graph

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Dataloaders of the npm and Maven package fields: every nested field of a
// page is one store statement for the whole page (see loaders.go).

// npmNameKey names an active npm package of a repository.
type npmNameKey struct {
	ns   uuid.UUID
	repo uuid.UUID
	name string
}

// mavenCoordKey names an active Maven package of a repository.
type mavenCoordKey struct {
	ns       uuid.UUID
	repo     uuid.UUID
	group    string
	artifact string
}

// versionNameKey names an active version of a package (npm or Maven).
type versionNameKey struct {
	ns      uuid.UUID
	pkg     uuid.UUID
	version string
}

// npmVersionNode is a listed npm version with its keyset position.
type npmVersionNode struct {
	*model.NpmVersion
	key npmstore.VersionKey
}

type packageLoaders struct {
	npmPackagePage   *loader[pageKey, []*model.NpmPackage]
	npmPackageCount  *loader[idKey, int]
	npmPackage       *loader[idKey, *model.NpmPackage]
	npmPackageByName *loader[npmNameKey, *model.NpmPackage]
	npmVersionPage   *loader[pageKey, []*npmVersionNode]
	npmVersionCount  *loader[idKey, int]
	npmVersion       *loader[idKey, *model.NpmVersion]
	npmVersionByName *loader[versionNameKey, *model.NpmVersion]
	npmTags          *loader[idKey, []*model.NpmDistTag]
	npmTagNames      *loader[idKey, []string]
	npmDetails       *loader[idKey, *npmstore.VersionDetails]
	npmTarball       *loader[idKey, *npmstore.FileInfo]

	mavenPackagePage    *loader[pageKey, []*model.MavenPackage]
	mavenPackageCount   *loader[idKey, int]
	mavenPackage        *loader[idKey, *model.MavenPackage]
	mavenPackageByCoord *loader[mavenCoordKey, *model.MavenPackage]
	mavenVersionPage    *loader[pageKey, []*model.MavenVersion]
	mavenVersionCount   *loader[idKey, int]
	mavenVersionByName  *loader[versionNameKey, *model.MavenVersion]
	mavenVersionFiles   *loader[pageKey, []*maven.FileInfo]
	mavenPackageFiles   *loader[pageKey, []*maven.FileInfo]
}

func newPackageLoaders(r *Resolver, wait time.Duration) *packageLoaders {
	mvn, npm := r.maven, r.npm
	return &packageLoaders{
		npmPackagePage: newLoader(wait, perPage(func(ctx context.Context, k pageKey, repos []uuid.UUID) (map[uuid.UUID][]*model.NpmPackage, error) {
			m, err := npm.PackagesOfRepositories(ctx, k.ns, repos, optString(k.after), k.limit)
			return siblingPages(m, k.limit, toNpmPackage, npmPackageID, setNpmPackageSiblings), err
		})),
		npmPackageCount: newLoader(wait, perNamespace(npm.CountPackages)),
		npmPackage: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*model.NpmPackage, error) {
			m, err := npm.PackagesByIDs(ctx, ns, ids)
			return convertMap(m, toNpmPackage), err
		})),
		npmPackageByName: newLoader(wait, fetchNpmPackagesByName(npm)),
		npmVersionPage: newLoader(wait, perPage(func(ctx context.Context, k pageKey, pkgs []uuid.UUID) (map[uuid.UUID][]*npmVersionNode, error) {
			var after *npmstore.VersionKey
			if k.after != "" {
				after = &npmstore.VersionKey{}
				if err := json.Unmarshal([]byte(k.after), after); err != nil {
					return nil, err
				}
			}
			m, err := npm.VersionsOfPackages(ctx, k.ns, pkgs, after, k.limit)
			return siblingPages(m, k.limit, toNpmVersionNode,
				func(v *npmstore.VersionRow) uuid.UUID { return v.ID },
				func(v *npmVersionNode, g *model.Group) { v.Siblings = g }), err
		})),
		npmVersionCount: newLoader(wait, perNamespace(npm.CountVersionsOfPackages)),
		npmVersion: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*model.NpmVersion, error) {
			vs, err := npm.ArtifactsByIDs(ctx, ns, ids)
			if err != nil {
				return nil, err
			}
			// One group for the batch: the versions' own fields load together.
			out := map[uuid.UUID]*model.NpmVersion{}
			for _, list := range siblingPages(map[uuid.UUID][]*npmstore.Artifact{uuid.Nil: vs}, -1, toNpmVersion,
				func(v *npmstore.Artifact) uuid.UUID { return v.ID }, func(v *model.NpmVersion, g *model.Group) { v.Siblings = g }) {
				for _, v := range list {
					out[v.ID] = v
				}
			}
			return out, nil
		})),
		npmVersionByName: newLoader(wait, fetchNpmVersionsByName(npm)),
		npmTags: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, pkgs []uuid.UUID) (map[uuid.UUID][]*model.NpmDistTag, error) {
			m, err := npm.TagsOfPackages(ctx, ns, pkgs)
			return siblingPages(m, -1, func(t *npmstore.DistTag) *model.NpmDistTag {
				return &model.NpmDistTag{Name: t.Name, NamespaceID: ns, VersionID: t.VersionID}
			}, func(t *npmstore.DistTag) uuid.UUID { return t.VersionID },
				func(t *model.NpmDistTag, g *model.Group) { t.Siblings = g }), err
		})),
		npmTagNames: newLoader(wait, perNamespace(npm.TagNamesOfVersions)),
		npmDetails:  newLoader(wait, perNamespace(npm.VersionDetailsByIDs)),
		npmTarball:  newLoader(wait, perNamespace(npm.TarballsOfVersions)),

		mavenPackagePage: newLoader(wait, perPage(func(ctx context.Context, k pageKey, repos []uuid.UUID) (map[uuid.UUID][]*model.MavenPackage, error) {
			var after *maven.PackageKey
			if k.after != "" {
				after = &maven.PackageKey{}
				if err := json.Unmarshal([]byte(k.after), after); err != nil {
					return nil, err
				}
			}
			m, err := mvn.PackagesOfRepositories(ctx, k.ns, repos, after, k.limit)
			return siblingPages(m, k.limit, toMavenPackage,
				func(p *maven.PackageInfo) uuid.UUID { return p.ID },
				func(p *model.MavenPackage, g *model.Group) { p.Siblings = g }), err
		})),
		mavenPackageCount: newLoader(wait, perNamespace(mvn.CountPackages)),
		mavenPackage: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*model.MavenPackage, error) {
			m, err := mvn.PackagesByIDs(ctx, ns, ids)
			return convertMap(m, toMavenPackage), err
		})),
		mavenPackageByCoord: newLoader(wait, fetchMavenPackagesByCoordinates(mvn)),
		mavenVersionPage: newLoader(wait, perPage(func(ctx context.Context, k pageKey, pkgs []uuid.UUID) (map[uuid.UUID][]*model.MavenVersion, error) {
			m, err := mvn.VersionsOfPackages(ctx, k.ns, pkgs, optString(k.after), k.limit)
			return siblingPages(m, k.limit, toMavenVersion,
				func(v *maven.Artifact) uuid.UUID { return v.ID },
				func(v *model.MavenVersion, g *model.Group) { v.Siblings = g }), err
		})),
		mavenVersionCount:  newLoader(wait, perNamespace(mvn.CountVersionsOfPackages)),
		mavenVersionByName: newLoader(wait, fetchMavenVersionsByName(mvn)),
		mavenVersionFiles: newLoader(wait, perPage(func(ctx context.Context, k pageKey, parents []uuid.UUID) (map[uuid.UUID][]*maven.FileInfo, error) {
			return mvn.FilesOfParents(ctx, k.ns, parents, true, optString(k.after), k.limit)
		})),
		mavenPackageFiles: newLoader(wait, perPage(func(ctx context.Context, k pageKey, parents []uuid.UUID) (map[uuid.UUID][]*maven.FileInfo, error) {
			return mvn.FilesOfParents(ctx, k.ns, parents, false, optString(k.after), k.limit)
		})),
	}
}

// byNamespace groups keys by namespace for the by-name loaders.
func byNamespace[K comparable](keys []K, ns func(K) uuid.UUID) map[uuid.UUID][]K {
	out := map[uuid.UUID][]K{}
	for _, k := range keys {
		out[ns(k)] = append(out[ns(k)], k)
	}
	return out
}

func fetchNpmPackagesByName(npm *npmstore.Store) func(context.Context, []npmNameKey) (map[npmNameKey]*model.NpmPackage, error) {
	return func(ctx context.Context, keys []npmNameKey) (map[npmNameKey]*model.NpmPackage, error) {
		out := map[npmNameKey]*model.NpmPackage{}
		for ns, ks := range byNamespace(keys, func(k npmNameKey) uuid.UUID { return k.ns }) {
			names := make([]npmstore.PackageName, len(ks))
			for i, k := range ks {
				names[i] = npmstore.PackageName{RepositoryID: k.repo, Name: k.name}
			}
			m, err := npm.PackagesByName(ctx, ns, names)
			if err != nil {
				return nil, err
			}
			for n, p := range m {
				out[npmNameKey{ns: ns, repo: n.RepositoryID, name: n.Name}] = toNpmPackage(p)
			}
		}
		return out, nil
	}
}

func fetchNpmVersionsByName(npm *npmstore.Store) func(context.Context, []versionNameKey) (map[versionNameKey]*model.NpmVersion, error) {
	return func(ctx context.Context, keys []versionNameKey) (map[versionNameKey]*model.NpmVersion, error) {
		out := map[versionNameKey]*model.NpmVersion{}
		for ns, ks := range byNamespace(keys, func(k versionNameKey) uuid.UUID { return k.ns }) {
			names := make([]npmstore.VersionName, len(ks))
			for i, k := range ks {
				names[i] = npmstore.VersionName{PackageID: k.pkg, Version: k.version}
			}
			m, err := npm.VersionsByName(ctx, ns, names)
			if err != nil {
				return nil, err
			}
			for n, v := range m {
				out[versionNameKey{ns: ns, pkg: n.PackageID, version: n.Version}] = toNpmVersion(v)
			}
		}
		return out, nil
	}
}

func fetchMavenPackagesByCoordinates(mvn *maven.Store) func(context.Context, []mavenCoordKey) (map[mavenCoordKey]*model.MavenPackage, error) {
	return func(ctx context.Context, keys []mavenCoordKey) (map[mavenCoordKey]*model.MavenPackage, error) {
		out := map[mavenCoordKey]*model.MavenPackage{}
		for ns, ks := range byNamespace(keys, func(k mavenCoordKey) uuid.UUID { return k.ns }) {
			cs := make([]maven.Coordinates, len(ks))
			for i, k := range ks {
				cs[i] = maven.Coordinates{RepositoryID: k.repo, GroupID: k.group, ArtifactID: k.artifact}
			}
			m, err := mvn.PackagesByCoordinates(ctx, ns, cs)
			if err != nil {
				return nil, err
			}
			for c, p := range m {
				out[mavenCoordKey{ns: ns, repo: c.RepositoryID, group: c.GroupID, artifact: c.ArtifactID}] = toMavenPackage(p)
			}
		}
		return out, nil
	}
}

func fetchMavenVersionsByName(mvn *maven.Store) func(context.Context, []versionNameKey) (map[versionNameKey]*model.MavenVersion, error) {
	return func(ctx context.Context, keys []versionNameKey) (map[versionNameKey]*model.MavenVersion, error) {
		out := map[versionNameKey]*model.MavenVersion{}
		for ns, ks := range byNamespace(keys, func(k versionNameKey) uuid.UUID { return k.ns }) {
			names := make([]maven.VersionName, len(ks))
			for i, k := range ks {
				names[i] = maven.VersionName{PackageID: k.pkg, Version: k.version}
			}
			m, err := mvn.VersionsByName(ctx, ns, names)
			if err != nil {
				return nil, err
			}
			for n, v := range m {
				out[versionNameKey{ns: ns, pkg: n.PackageID, version: n.Version}] = toMavenVersion(v)
			}
		}
		return out, nil
	}
}

func convertMap[K comparable, S, M any](m map[K]*S, conv func(*S) *M) map[K]*M {
	out := make(map[K]*M, len(m))
	for k, v := range m {
		out[k] = conv(v)
	}
	return out
}

func npmPackageID(p *npmstore.Package) uuid.UUID { return p.ID }

func setNpmPackageSiblings(p *model.NpmPackage, g *model.Group) { p.Siblings = g }

func toNpmPackage(p *npmstore.Package) *model.NpmPackage {
	return &model.NpmPackage{
		ID: p.ID, NamespaceID: p.NamespaceID, RepositoryID: p.RepositoryID, Name: p.Name, Scope: p.Scope,
		LastDownloadedAt: p.LastDownloadedAt, SoftDeletedAt: p.SoftDeletedAt,
	}
}

func toNpmVersionNode(v *npmstore.VersionRow) *npmVersionNode {
	return &npmVersionNode{NpmVersion: toNpmVersion(&v.Artifact), key: v.Key}
}

func toMavenPackage(p *maven.PackageInfo) *model.MavenPackage {
	return &model.MavenPackage{
		ID: p.ID, NamespaceID: p.NamespaceID, RepositoryID: p.RepositoryID, GroupID: p.GroupID, ArtifactID: p.ArtifactID,
		LastDownloadedAt: p.LastDownloadedAt, SoftDeletedAt: p.SoftDeletedAt,
	}
}
