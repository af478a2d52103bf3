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
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Pull-through caches in the management API (remote.graphqls): the
// settings and health of a remote repository, its cached images and
// their tags, each level one batch (loaders.go), and the conversions of
// the remote inputs.

// maxRemoteImageTags bounds RemoteCachedImage.tags.
const maxRemoteImageTags = 100

// maxRemotePackages bounds RemoteRepository.cachedPackages.
const maxRemotePackages = 100

var healthFromEnum = map[enum.HealthStatus]model.RemoteHealth{
	enum.HealthUnknown:   model.RemoteHealthUnknown,
	enum.HealthHealthy:   model.RemoteHealthHealthy,
	enum.HealthUnhealthy: model.RemoteHealthUnhealthy,
}

func toNpmRemoteRepository(s *npmstore.RemoteSettings) *model.RemoteRepository {
	m := toRemoteRepository(&container.RemoteSettings{ID: s.ID, NamespaceID: s.NamespaceID, RepositoryID: s.RepositoryID,
		URL: s.URL, CacheValidityHours: s.CacheValidityHours, HasCredentials: s.HasCredentials, HealthStatus: s.HealthStatus,
		HealthCheckedAt: s.HealthCheckedAt, HealthError: s.HealthError, CacheHits: s.CacheHits, CacheMisses: s.CacheMisses})
	hours := s.MetadataCacheValidityHours
	m.MetadataCacheValidityHours, m.Format = &hours, model.FormatNpm
	return m
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

func remoteSettingsLoader(cs *container.Store, ns *npmstore.Store) func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*model.RemoteRepository, error) {
	npm := ns
	return func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*model.RemoteRepository, error) {
		list, err := cs.RemoteSettingsByRepositories(ctx, ns, repos)
		if err != nil {
			return nil, err
		}
		npmList, err := npm.RemoteSettingsByRepositories(ctx, ns, repos)
		if err != nil {
			return nil, err
		}
		ids := make([]uuid.UUID, len(list))
		for i, s := range list {
			ids[i] = s.ID
		}
		g := model.NewGroup(ids)
		out := make(map[uuid.UUID]*model.RemoteRepository, len(list)+len(npmList))
		for _, s := range list {
			m := toRemoteRepository(s)
			m.Siblings = g
			out[s.RepositoryID] = m
		}
		for _, s := range npmList {
			m := toNpmRemoteRepository(s)
			m.Siblings = model.NewGroup(nil)
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
	m := toRemoteRepository(&container.RemoteSettings{ID: s.ID, NamespaceID: s.NamespaceID, RepositoryID: s.RepositoryID,
		URL: s.URL, CacheValidityHours: s.CacheValidityHours, HasCredentials: s.HasCredentials, HealthStatus: s.HealthStatus,
		HealthCheckedAt: s.HealthCheckedAt, HealthError: s.HealthError, CacheHits: s.CacheHits, CacheMisses: s.CacheMisses})
	meta, neg := s.MetadataCacheValidityHours, s.NegativeCacheMinutes
	m.MetadataCacheValidityHours, m.NegativeCacheMinutes, m.Format = &meta, &neg, model.FormatMaven
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

func credentialsInput(user, password *string) (*container.Credentials, error) {
	switch {
	case user == nil && password == nil:
		return nil, nil
	case user == nil || password == nil:
		return nil, invalidInput("give both username and password, or neither")
	}
	return &container.Credentials{Username: *user, Password: *password}, nil
}

// newRemoteChild converts createRepository's remote settings into the
// format's remote child row.
func (r *Resolver) newRemoteChild(f model.Format, in *model.RemoteRepositoryInput) (store.ChildWriter, error) {
	if err := remoteFieldsFor(formatsToEnum[f], in.MetadataCacheValidityHours, in.NegativeCacheMinutes); err != nil {
		return nil, err
	}
	c, err := credentialsInput(in.Username, in.Password)
	if err != nil {
		return nil, err
	}
	switch f {
	case model.FormatNpm:
		return r.npm.NewRemote(r.keyring, npmstore.RemoteInput{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
			MetadataCacheValidityHours: in.MetadataCacheValidityHours, Credentials: c})
	case model.FormatMaven:
		return r.maven.NewRemote(maven.RemoteInput{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
			MetadataCacheValidityHours: in.MetadataCacheValidityHours, NegativeCacheMinutes: in.NegativeCacheMinutes, Credentials: c})
	}
	return r.container.NewRemote(container.RemoteInput{URL: in.URL, CacheValidityHours: in.CacheValidityHours, Credentials: c})
}

// updateRemoteChild converts updateRepository's remote settings into the
// format's remote child update.
func (r *Resolver) updateRemoteChild(f enum.Format, in *model.RemoteRepositoryUpdateInput) (store.ChildWriter, error) {
	if err := remoteFieldsFor(f, in.MetadataCacheValidityHours, in.NegativeCacheMinutes); err != nil {
		return nil, err
	}
	c, err := credentialsInput(in.Username, in.Password)
	if err != nil {
		return nil, err
	}
	clear := in.ClearCredentials != nil && *in.ClearCredentials
	switch f {
	case enum.FormatNpm:
		return r.npm.UpdateRemote(r.keyring, npmstore.RemoteUpdate{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
			MetadataCacheValidityHours: in.MetadataCacheValidityHours, Credentials: c, ClearCredentials: clear})
	case enum.FormatMaven:
		return r.maven.UpdateRemote(maven.RemoteUpdate{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
			MetadataCacheValidityHours: in.MetadataCacheValidityHours, NegativeCacheMinutes: in.NegativeCacheMinutes,
			Credentials: c, ClearCredentials: clear})
	}
	return r.container.UpdateRemote(container.RemoteUpdate{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
		Credentials: c, ClearCredentials: clear})
}

// remoteFieldsFor refuses settings the remote's format does not have: the
// metadata validity belongs to npm and Maven remotes, the negative cache
// to Maven proxies.
func remoteFieldsFor(f enum.Format, meta, neg *int) error {
	if meta != nil && f != enum.FormatNpm && f != enum.FormatMaven {
		return invalidInput("metadataCacheValidityHours is a setting of NPM and MAVEN remote repositories")
	}
	if neg != nil && f != enum.FormatMaven {
		return invalidInput("negativeCacheMinutes is a setting of MAVEN remote repositories")
	}
	return nil
}

func optValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
