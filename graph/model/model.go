// Package model holds the Go types bound to schema.graphqls: hand-written
// models here (fields they lack are resolved in package graph) and the ones
// gqlgen generates into models_gen.go.
package model

import (
	"context"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

type Namespace struct {
	ID          uuid.UUID
	Slug        string
	Status      NamespaceStatus
	CreatedAt   time.Time
	DeletedAt   *time.Time
	PurgedAt    *time.Time
	BlockedAt   *time.Time
	DisabledAt  *time.Time
	SuspendedAt *time.Time
	// RetentionDays backs trashRetentionDays (a resolver, for its
	// authorization) and the trash's expiresAt.
	RetentionDays int
}

// Group (Siblings on Repository, ContainerImage, ContainerTag and
// ContainerManifest) holds the ids of the objects resolved together (the
// page, or the dataloader batch, they came in), shared by all of them: the
// first nested resolver that loads for one of them queues the keys of all,
// once, so each level of a nested query is one batch however the
// goroutines interleave. For ContainerTag the ids are the manifests the
// tags point at.
type Group struct {
	IDs   []uuid.UUID
	mu    sync.Mutex
	onces map[string]*sync.Once
}

// NewGroup groups ids.
func NewGroup(ids []uuid.UUID) *Group { return &Group{IDs: ids} }

// Do runs f once per key for the group (a group of fewer than two members
// has nothing to share: Do does nothing). Concurrent callers with the same
// key wait until the first one's f has returned.
func (g *Group) Do(key string, f func()) {
	if g == nil || len(g.IDs) < 2 {
		return
	}
	g.mu.Lock()
	if g.onces == nil {
		g.onces = map[string]*sync.Once{}
	}
	o := g.onces[key]
	if o == nil {
		o = &sync.Once{}
		g.onces[key] = o
	}
	g.mu.Unlock()
	o.Do(f)
}

type Repository struct {
	Siblings       *Group
	ID             uuid.UUID
	NamespaceID    uuid.UUID
	Name           string
	Description    *string
	Format         Format
	Kind           RepositoryKind
	Visibility     Visibility
	ArtifactsCount int64
	DownloadsCount int64
	SizeBytes      int64
	LastUpdatedAt  *time.Time
	CreatedAt      time.Time
	SoftDeletedAt  *time.Time
}

func (Repository) IsTrashItem() {}

type RepositoryCollection struct {
	ID          uuid.UUID
	NamespaceID uuid.UUID
	Name        string
	IsDefault   bool
	CreatedAt   time.Time
}

type ContainerImage struct {
	Siblings         *Group
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID // repositories.id of the owning repository
	Name             string
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

func (ContainerImage) IsTrashItem() {}

type ContainerManifest struct {
	Siblings      *Group
	ID            uuid.UUID
	NamespaceID   uuid.UUID
	ImageID       uuid.UUID
	RepositoryID  uuid.UUID
	Digest        string
	MediaType     string
	Size          int64
	CreatedAt     time.Time
	SoftDeletedAt *time.Time
	ArtifactType  *string
	SubjectDigest *string
}

// ContainerIndexEntry is an entry of an index's payload; its manifest is
// resolved among the index's children (the index's siblings batch them).
type ContainerIndexEntry struct {
	NamespaceID uuid.UUID
	// Index is the index listing the entry.
	Index        *ContainerManifest
	Digest       string
	MediaType    string
	Size         int64
	Platform     *ContainerPlatform
	ArtifactType *string
	Annotations  []*KeyValue
}

// DigestBytes is the raw sha256 of Digest (sha256:<hex>).
func (m *ContainerManifest) DigestBytes() []byte {
	b, _ := hex.DecodeString(strings.TrimPrefix(m.Digest, "sha256:"))
	return b
}

func (ContainerManifest) IsTrashItem()         {}
func (ContainerManifest) IsPublishedArtifact() {}

type MavenVersion struct {
	Siblings         *Group
	ID               uuid.UUID
	PackageID        uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID
	GroupID          string
	ArtifactID       string
	Version          string
	SizeBytes        int64
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

func (MavenVersion) IsTrashItem()         {}
func (MavenVersion) IsPublishedArtifact() {}

type NpmVersion struct {
	Siblings         *Group
	ID               uuid.UUID
	PackageID        uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID
	PackageName      string
	Version          string
	SizeBytes        int64
	CreatedAt        time.Time
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

func (NpmVersion) IsTrashItem()         {}
func (NpmVersion) IsPublishedArtifact() {}

type ContainerTag struct {
	Siblings    *Group
	ID          uuid.UUID
	NamespaceID uuid.UUID
	ImageID     uuid.UUID
	ManifestID  uuid.UUID
	Name        string
}

type ChecksumMatch struct {
	Kind          ChecksumMatchKind
	ArtifactID    uuid.UUID
	ParentID      uuid.UUID
	NamespaceID   uuid.UUID
	RepositoryID  uuid.UUID
	Cached        bool
	SoftDeletedAt *time.Time
}

type PublishEvent struct {
	PublishedAt  time.Time
	NamespaceID  uuid.UUID
	RepositoryID uuid.UUID
	Artifact     PublishedArtifact
	Cached       bool
}

type CachedArtifact struct {
	ID        uuid.UUID
	Name      string
	Reference string
}

func (CachedArtifact) IsPublishedArtifact() {}

// Counter computes a connection's totalCount when (and only when) the
// query selects it.
type Counter func(ctx context.Context) (int, error)

func (c Counter) count(ctx context.Context) (int, error) {
	if c == nil {
		return 0, nil
	}
	return c(ctx)
}

type NamespaceConnection struct {
	Edges    []*NamespaceEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *NamespaceConnection) TotalCount(ctx context.Context) (int, error) { return c.Count.count(ctx) }

type RepositoryConnection struct {
	Edges    []*RepositoryEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *RepositoryConnection) TotalCount(ctx context.Context) (int, error) {
	return c.Count.count(ctx)
}

type RepositoryCollectionConnection struct {
	Edges    []*RepositoryCollectionEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *RepositoryCollectionConnection) TotalCount(ctx context.Context) (int, error) {
	return c.Count.count(ctx)
}

type ContainerImageConnection struct {
	Edges    []*ContainerImageEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *ContainerImageConnection) TotalCount(ctx context.Context) (int, error) {
	return c.Count.count(ctx)
}

type ContainerTagConnection struct {
	Edges    []*ContainerTagEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *ContainerTagConnection) TotalCount(ctx context.Context) (int, error) {
	return c.Count.count(ctx)
}

type ContainerManifestConnection struct {
	Edges    []*ContainerManifestEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *ContainerManifestConnection) TotalCount(ctx context.Context) (int, error) {
	return c.Count.count(ctx)
}

// LifecyclePreview is a dry run's totals; items are resolved from the
// scope and draft it keeps.
type LifecyclePreview struct {
	ArtifactCount int
	SizeBytes     int64
	Namespace     string
	Repository    *string // nil: the namespace default
	Draft         *LifecyclePolicyDraft
}

// RemoteRepository is the remote settings and cache of a container
// pull-through cache (Repository.remote).
type RemoteRepository struct {
	// Siblings are the remote repositories resolved together (their
	// container_remote_repositories ids), for the cachedImages batch.
	Siblings           *Group
	RemoteID           uuid.UUID
	NamespaceID        uuid.UUID
	RepositoryID       uuid.UUID
	URL                string
	CacheValidityHours int
	Health             RemoteHealth
	LastCheckedAt      *time.Time
	LastError          *string
	HasCredentials     bool
	CacheHits          int64
	CacheMisses        int64
	HitRatio           *float64
	// MetadataCacheValidityHours is set for npm and Maven remotes,
	// NegativeCacheMinutes for Maven remotes.
	MetadataCacheValidityHours *int
	NegativeCacheMinutes       *int
	// Format is NPM or MAVEN for those remotes (whose stores hold the
	// cache), empty for container remotes.
	Format Format
}

// RemoteCachedImage is an image a pull-through cache holds.
type RemoteCachedImage struct {
	// Siblings are the images of the page batch, for the tags batch.
	Siblings         *Group
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	Name             string
	CachedAt         time.Time
	LastDownloadedAt *time.Time
	ManifestsCount   int64
	BlobsCount       int64
	SizeBytes        int64
	// CacheValidityHours is the remote's, to tell stale tags.
	CacheValidityHours int
}
