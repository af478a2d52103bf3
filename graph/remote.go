package graph

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// Pull-through caches in the management API (remote.graphqls): the
// settings and health of a remote repository, its cached images and
// their tags, each level one batch (loaders.go), and the conversions of
// the remote inputs.

// maxRemoteImageTags bounds RemoteCachedImage.tags.
const maxRemoteImageTags = 100

var healthFromEnum = map[enum.HealthStatus]model.RemoteHealth{
	enum.HealthUnknown:   model.RemoteHealthUnknown,
	enum.HealthHealthy:   model.RemoteHealthHealthy,
	enum.HealthUnhealthy: model.RemoteHealthUnhealthy,
}

func toRemoteRepository(s *container.RemoteSettings) *model.RemoteRepository {
	m := &model.RemoteRepository{
		RemoteID: s.ID, NamespaceID: s.NamespaceID, RepositoryID: s.RepositoryID, URL: s.URL,
		CacheValidityHours: s.CacheValidityHours, Health: healthFromEnum[s.HealthStatus],
		LastCheckedAt: s.HealthCheckedAt, LastError: s.HealthError, HasCredentials: s.HasCredentials,
		CacheHits: s.CacheHits, CacheMisses: s.CacheMisses,
	}
	if total := s.CacheHits + s.CacheMisses; total > 0 {
		r := float64(s.CacheHits) / float64(total)
		m.HitRatio = &r
	}
	return m
}

func remoteSettingsLoader(cs *container.Store) func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*model.RemoteRepository, error) {
	return func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*model.RemoteRepository, error) {
		list, err := cs.RemoteSettingsByRepositories(ctx, ns, repos)
		if err != nil {
			return nil, err
		}
		ids := make([]uuid.UUID, len(list))
		for i, s := range list {
			ids[i] = s.ID
		}
		g := model.NewGroup(ids)
		out := make(map[uuid.UUID]*model.RemoteRepository, len(list))
		for _, s := range list {
			m := toRemoteRepository(s)
			m.Siblings = g
			out[s.RepositoryID] = m
		}
		return out, nil
	}
}

func remoteImagePageLoader(cs *container.Store) func(ctx context.Context, k pageKey, remotes []uuid.UUID) (map[uuid.UUID][]*model.RemoteCachedImage, error) {
	return func(ctx context.Context, k pageKey, remotes []uuid.UUID) (map[uuid.UUID][]*model.RemoteCachedImage, error) {
		m, err := cs.RemoteImagesOfRemotes(ctx, k.ns, remotes, k.after, k.limit+1)
		if err != nil {
			return nil, err
		}
		return siblingPages(m, k.limit, func(i *container.RemoteImage) *model.RemoteCachedImage {
			return &model.RemoteCachedImage{ID: i.ID, NamespaceID: k.ns, Name: i.Name, CachedAt: i.CreatedAt,
				LastDownloadedAt: i.LastDownloadedAt, ManifestsCount: i.ManifestsCount, BlobsCount: i.BlobsCount, SizeBytes: i.SizeBytes}
		}, func(i *container.RemoteImage) uuid.UUID { return i.ID },
			func(i *model.RemoteCachedImage, g *model.Group) { i.Siblings = g }), nil
	}
}

func remoteTagsLoader(cs *container.Store) func(ctx context.Context, ns uuid.UUID, images []uuid.UUID) (map[uuid.UUID][]*model.RemoteCachedTag, error) {
	return func(ctx context.Context, ns uuid.UUID, images []uuid.UUID) (map[uuid.UUID][]*model.RemoteCachedTag, error) {
		m, err := cs.RemoteTagsOfImages(ctx, ns, images, maxRemoteImageTags)
		if err != nil {
			return nil, err
		}
		out := make(map[uuid.UUID][]*model.RemoteCachedTag, len(m))
		for image, tags := range m {
			for _, t := range tags {
				out[image] = append(out[image], &model.RemoteCachedTag{Name: t.Name, Digest: store.FormatSHA256(t.Digest),
					MediaType: t.MediaType, CheckedAt: t.CheckedAt})
			}
		}
		return out, nil
	}
}

// staleAt tells whether a tag checked at checkedAt is revalidated by its
// next pull.
func staleAt(checkedAt time.Time, validityHours int, now time.Time) bool {
	return now.Sub(checkedAt) >= time.Duration(validityHours)*time.Hour
}

func toMavenRemoteRepository(s *maven.RemoteSettings) *model.RemoteRepository {
	m := &model.RemoteRepository{
		RemoteID: s.ID, NamespaceID: s.NamespaceID, RepositoryID: s.RepositoryID, URL: s.URL,
		CacheValidityHours: s.CacheValidityHours, Health: healthFromEnum[s.HealthStatus],
		LastCheckedAt: s.HealthCheckedAt, LastError: s.HealthError, HasCredentials: s.HasCredentials,
		CacheHits: s.CacheHits, CacheMisses: s.CacheMisses,
		MetadataCacheValidityHours: &s.MetadataCacheValidityHours, NegativeCacheMinutes: &s.NegativeCacheMinutes,
	}
	if total := s.CacheHits + s.CacheMisses; total > 0 {
		r := float64(s.CacheHits) / float64(total)
		m.HitRatio = &r
	}
	return m
}

func mavenRemoteSettingsLoader(ms *maven.Store) func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*model.RemoteRepository, error) {
	return func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*model.RemoteRepository, error) {
		list, err := ms.RemoteSettingsByRepositories(ctx, ns, repos)
		if err != nil {
			return nil, err
		}
		ids := make([]uuid.UUID, len(list))
		for i, s := range list {
			ids[i] = s.ID
		}
		g := model.NewGroup(ids)
		out := make(map[uuid.UUID]*model.RemoteRepository, len(list))
		for _, s := range list {
			m := toMavenRemoteRepository(s)
			m.Siblings = g
			out[s.RepositoryID] = m
		}
		return out, nil
	}
}

// mavenPackageKey is the keyset of a cached Maven package page.
type mavenPackageKey struct {
	GroupID    string `json:"g"`
	ArtifactID string `json:"a"`
}

func mavenRemotePackagePageLoader(ms *maven.Store) func(ctx context.Context, k pageKey, remotes []uuid.UUID) (map[uuid.UUID][]*model.RemoteCachedMavenPackage, error) {
	return func(ctx context.Context, k pageKey, remotes []uuid.UUID) (map[uuid.UUID][]*model.RemoteCachedMavenPackage, error) {
		group, artifact, _ := strings.Cut(k.after, ":")
		m, err := ms.RemotePackagesOfRemotes(ctx, k.ns, remotes, group, artifact, k.limit+1)
		if err != nil {
			return nil, err
		}
		out := make(map[uuid.UUID][]*model.RemoteCachedMavenPackage, len(m))
		for remote, pkgs := range m {
			for _, p := range pkgs {
				mp := &model.RemoteCachedMavenPackage{ID: p.ID.String(), GroupID: p.GroupID, ArtifactID: p.ArtifactID,
					CachedAt: p.CreatedAt, LastDownloadedAt: p.LastDownloadedAt, SizeBytes: p.SizeBytes,
					Versions: []*model.RemoteCachedMavenVersion{}}
				for _, v := range p.Versions {
					mp.Versions = append(mp.Versions, &model.RemoteCachedMavenVersion{Version: v.Version, CachedAt: v.CreatedAt,
						LastDownloadedAt: v.LastDownloadedAt, SizeBytes: v.SizeBytes, FilesCount: v.FilesCount})
				}
				out[remote] = append(out[remote], mp)
			}
		}
		return out, nil
	}
}

// remoteInput converts the remote settings of createRepository.
func remoteInput(in *model.RemoteRepositoryInput) (container.RemoteInput, error) {
	out := container.RemoteInput{URL: in.URL, CacheValidityHours: in.CacheValidityHours}
	c, err := credentialsInput(in.Username, in.Password)
	out.Credentials = c
	return out, err
}

// remoteUpdate converts the remote settings of updateRepository.
func remoteUpdate(in *model.RemoteRepositoryUpdateInput) (container.RemoteUpdate, error) {
	out := container.RemoteUpdate{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
		ClearCredentials: in.ClearCredentials != nil && *in.ClearCredentials}
	c, err := credentialsInput(in.Username, in.Password)
	out.Credentials = c
	return out, err
}

func credentialsInput(user, password *string) (*container.Credentials, error) {
	switch {
	case user == nil && password == nil:
		return nil, nil
	case user == nil || password == nil:
		return nil, invalidInput("give both username and password, or neither")
	}
	return &container.Credentials{Username: *user, Password: *password}, nil
}

// mavenRemoteInput converts the remote settings of createRepository for a
// MAVEN repository.
func mavenRemoteInput(in *model.RemoteRepositoryInput) (maven.RemoteInput, error) {
	out := maven.RemoteInput{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
		MetadataCacheValidityHours: in.MetadataCacheValidityHours, NegativeCacheMinutes: in.NegativeCacheMinutes}
	c, err := credentialsInput(in.Username, in.Password)
	out.Credentials = c
	return out, err
}

// mavenRemoteUpdate converts the remote settings of updateRepository for
// a MAVEN repository.
func mavenRemoteUpdate(in *model.RemoteRepositoryUpdateInput) (maven.RemoteUpdate, error) {
	out := maven.RemoteUpdate{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
		MetadataCacheValidityHours: in.MetadataCacheValidityHours, NegativeCacheMinutes: in.NegativeCacheMinutes,
		ClearCredentials: in.ClearCredentials != nil && *in.ClearCredentials}
	c, err := credentialsInput(in.Username, in.Password)
	out.Credentials = c
	return out, err
}

// containerOnly refuses the Maven-only settings for a container remote.
func containerOnly(meta, neg *int) error {
	if meta != nil || neg != nil {
		return invalidInput("metadataCacheValidityHours and negativeCacheMinutes are settings of MAVEN remote repositories")
	}
	return nil
}

func optValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
