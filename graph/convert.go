package graph

import (
	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Enum mappings between the GraphQL enums and the smallint enums of
// store/enum (whose integer values live in the database).

var formatsToEnum = map[model.Format]enum.Format{
	model.FormatDocker: enum.FormatDocker,
	model.FormatMaven:  enum.FormatMaven,
	model.FormatNpm:    enum.FormatNpm,
	model.FormatOci:    enum.FormatOCI,
}

var kindsToEnum = map[model.RepositoryKind]enum.Kind{
	model.RepositoryKindHosted:  enum.KindHosted,
	model.RepositoryKindVirtual: enum.KindVirtual,
	model.RepositoryKindRemote:  enum.KindRemote,
}

var visibilitiesToEnum = map[model.Visibility]enum.Visibility{
	model.VisibilityPublic:   enum.VisibilityPublic,
	model.VisibilityPrivate:  enum.VisibilityPrivate,
	model.VisibilityInternal: enum.VisibilityInternal,
}

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

var (
	formatsFromEnum      = invert(formatsToEnum)
	kindsFromEnum        = invert(kindsToEnum)
	visibilitiesFromEnum = invert(visibilitiesToEnum)
)

func toNamespace(n *store.Namespace) *model.Namespace {
	if n == nil {
		return nil
	}
	return &model.Namespace{
		ID: n.ID, Slug: n.Slug, Status: model.NamespaceStatus(n.Status()), CreatedAt: n.CreatedAt,
		DeletedAt: n.DeletedAt, PurgedAt: n.PurgedAt, BlockedAt: n.BlockedAt, DisabledAt: n.DisabledAt, SuspendedAt: n.SuspendedAt,
		RetentionDays: n.TrashRetentionDays,
	}
}

func toRepository(r *store.Repository) *model.Repository {
	if r == nil {
		return nil
	}
	return &model.Repository{
		ID: r.ID, NamespaceID: r.NamespaceID, Name: r.Name, Description: r.Description,
		Format: formatsFromEnum[r.Format], Kind: kindsFromEnum[r.Kind], Visibility: visibilitiesFromEnum[r.Visibility],
		ArtifactsCount: r.ArtifactsCount, DownloadsCount: r.DownloadsCount, SizeBytes: r.SizeBytes,
		LastUpdatedAt: r.LastUpdatedAt, CreatedAt: r.CreatedAt, SoftDeletedAt: r.SoftDeletedAt,
	}
}

func toCollection(c *store.RepositoryCollection) *model.RepositoryCollection {
	return &model.RepositoryCollection{ID: c.ID, NamespaceID: c.NamespaceID, Name: c.Name, IsDefault: c.IsDefault, CreatedAt: c.CreatedAt}
}

func toImage(i *container.Image) *model.ContainerImage {
	if i == nil {
		return nil
	}
	return &model.ContainerImage{
		ID: i.ID, NamespaceID: i.NamespaceID, RepositoryID: i.RepositoryID, Name: i.Name,
		LastDownloadedAt: i.LastDownloadedAt, SoftDeletedAt: i.SoftDeletedAt,
	}
}

func toManifest(m *container.Manifest) *model.ContainerManifest {
	if m == nil {
		return nil
	}
	out := &model.ContainerManifest{
		ID: m.ID, NamespaceID: m.NamespaceID, ImageID: m.ImageID, RepositoryID: m.RepositoryID,
		Digest: m.DigestString(), MediaType: m.MediaType, Size: m.Size, CreatedAt: m.CreatedAt, SoftDeletedAt: m.SoftDeletedAt,
	}
	if m.ArtifactType != "" {
		out.ArtifactType = &m.ArtifactType
	}
	if m.SubjectDigest != nil {
		s := store.FormatDigest(m.SubjectDigest)
		out.SubjectDigest = &s
	}
	return out
}

func toMavenVersion(v *maven.Artifact) *model.MavenVersion {
	return &model.MavenVersion{
		ID: v.ID, NamespaceID: v.NamespaceID, RepositoryID: v.RepositoryID, PackageID: v.PackageID, GroupID: v.GroupID, ArtifactID: v.ArtifactID,
		Version: v.Version, SizeBytes: v.SizeBytes, CreatedAt: v.CreatedAt, LastDownloadedAt: v.LastDownloadedAt, SoftDeletedAt: v.SoftDeletedAt,
	}
}

func toNpmVersion(v *npmstore.Artifact) *model.NpmVersion {
	return &model.NpmVersion{
		ID: v.ID, NamespaceID: v.NamespaceID, RepositoryID: v.RepositoryID, PackageID: v.PackageID, PackageName: v.PackageName,
		Version: v.Version, SizeBytes: v.SizeBytes, CreatedAt: v.CreatedAt, LastDownloadedAt: v.LastDownloadedAt, SoftDeletedAt: v.SoftDeletedAt,
	}
}

func toCachedArtifact(c *catalog.CachedArtifact) *model.CachedArtifact {
	return &model.CachedArtifact{ID: c.ID, Name: c.Name, Reference: c.Version}
}

func toTag(t *container.Tag) *model.ContainerTag {
	return &model.ContainerTag{ID: t.ID, NamespaceID: t.NamespaceID, ImageID: t.ImageID, ManifestID: t.ManifestID, Name: t.Name}
}

// parseID parses an ID argument.
func parseID(what, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, invalidInput("%s id %q is not a valid id", what, s)
	}
	return id, nil
}

// toNamespaceStatistics converts the buffered namespace counters (nil: no
// row, which the trigger that creates it rules out; zeros).
func toNamespaceStatistics(st *store.NamespaceStatistics) *model.NamespaceStatistics {
	if st == nil {
		return &model.NamespaceStatistics{}
	}
	return &model.NamespaceStatistics{DeduplicatedSizeBytes: st.DeduplicatedSizeBytes, ComponentsCount: st.ComponentsCount,
		LastReconciledAt: st.LastReconciledAt}
}
