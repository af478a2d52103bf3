package model

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Models of packages.graphqls (npm and Maven packages). Siblings play the
// same role as on the container models: the ids resolved together, so a
// nested field loads for all of them in one batch.

type NpmPackage struct {
	Siblings         *Group
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID // repositories.id
	Name             string
	Scope            *string
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

func (NpmPackage) IsTrashItem() {}

type NpmDistTag struct {
	Name        string
	NamespaceID uuid.UUID
	VersionID   uuid.UUID
}

type NpmFile struct {
	ID            uuid.UUID
	FileName      string
	SizeBytes     int64
	SHA256        string
	SoftDeletedAt *time.Time
}

type MavenPackage struct {
	Siblings         *Group
	ID               uuid.UUID
	NamespaceID      uuid.UUID
	RepositoryID     uuid.UUID // repositories.id
	GroupID          string
	ArtifactID       string
	LastDownloadedAt *time.Time
	SoftDeletedAt    *time.Time
}

func (MavenPackage) IsTrashItem() {}

// IsSnapshot reports a -SNAPSHOT version.
func (v *MavenVersion) IsSnapshot() bool { return strings.HasSuffix(v.Version, "-SNAPSHOT") }

type MavenFile struct {
	ID        uuid.UUID
	FileName  string
	SizeBytes int64
	SHA256    string
	SHA1      string
	Md5       *string
	SHA512    string
}

type NpmPackageConnection struct {
	Edges    []*NpmPackageEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *NpmPackageConnection) TotalCount(ctx context.Context) (int, error) { return c.Count.count(ctx) }

type NpmVersionConnection struct {
	Edges    []*NpmVersionEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *NpmVersionConnection) TotalCount(ctx context.Context) (int, error) { return c.Count.count(ctx) }

type MavenPackageConnection struct {
	Edges    []*MavenPackageEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *MavenPackageConnection) TotalCount(ctx context.Context) (int, error) {
	return c.Count.count(ctx)
}

type MavenVersionConnection struct {
	Edges    []*MavenVersionEdge
	PageInfo *PageInfo
	Count    Counter
}

func (c *MavenVersionConnection) TotalCount(ctx context.Context) (int, error) {
	return c.Count.count(ctx)
}
