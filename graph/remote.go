package graph

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
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
	m.MetadataCacheValidityHours, m.Npm = &hours, true
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

// npmRemoteInput converts the remote settings of createRepository for an
// npm remote.
func npmRemoteInput(in *model.RemoteRepositoryInput) (npmstore.RemoteInput, error) {
	out := npmstore.RemoteInput{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
		MetadataCacheValidityHours: in.MetadataCacheValidityHours}
	c, err := credentialsInput(in.Username, in.Password)
	out.Credentials = c
	return out, err
}

// npmRemoteUpdate converts the remote settings of updateRepository for an
// npm remote.
func npmRemoteUpdate(in *model.RemoteRepositoryUpdateInput) (npmstore.RemoteUpdate, error) {
	out := npmstore.RemoteUpdate{URL: in.URL, CacheValidityHours: in.CacheValidityHours,
		MetadataCacheValidityHours: in.MetadataCacheValidityHours, ClearCredentials: in.ClearCredentials != nil && *in.ClearCredentials}
	c, err := credentialsInput(in.Username, in.Password)
	out.Credentials = c
	return out, err
}

// remoteInput converts the remote settings of createRepository.
func remoteInput(in *model.RemoteRepositoryInput) (container.RemoteInput, error) {
	if in.MetadataCacheValidityHours != nil {
		return container.RemoteInput{}, invalidInput("metadataCacheValidityHours is a setting of npm and Maven remotes, not of container remotes")
	}
	out := container.RemoteInput{URL: in.URL, CacheValidityHours: in.CacheValidityHours}
	c, err := credentialsInput(in.Username, in.Password)
	out.Credentials = c
	return out, err
}

// remoteUpdate converts the remote settings of updateRepository.
func remoteUpdate(in *model.RemoteRepositoryUpdateInput) (container.RemoteUpdate, error) {
	if in.MetadataCacheValidityHours != nil {
		return container.RemoteUpdate{}, invalidInput("metadataCacheValidityHours is a setting of npm and Maven remotes, not of container remotes")
	}
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

// isNpm tells whether a repository is of format NPM (its remote settings
// are the npm store's).
func isNpm(repo *store.Repository) bool { return repo.Format == enum.FormatNpm }
