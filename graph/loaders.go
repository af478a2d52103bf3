package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/graph-gophers/dataloader/v7"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// Per-request dataloaders: nested fields queue their keys, and each loader
// runs one store query per namespace (and page arguments) for all of them,
// so a nested query issues a bounded number of statements whatever the
// row count.

// idKey names a row of a partitioned table: namespace first, so every
// batch carries namespace_id = $1.
type idKey struct {
	ns uuid.UUID
	id uuid.UUID
}

// pageKey names one page of a nested connection under one parent.
type pageKey struct {
	ns     uuid.UUID
	parent uuid.UUID
	limit  int
	after  string // keyset value of the cursor ("" = first page)
}

// namedKey names a child by name under one parent (an image of a
// repository).
type namedKey struct {
	ns     uuid.UUID
	parent uuid.UUID
	name   string
}

func namedKeys(ns uuid.UUID, name string) func([]uuid.UUID) []namedKey {
	return func(parents []uuid.UUID) []namedKey {
		out := make([]namedKey, len(parents))
		for i, p := range parents {
			out[i] = namedKey{ns: ns, parent: p, name: name}
		}
		return out
	}
}

type loaders struct {
	namespace  *loader[uuid.UUID, *store.Namespace]
	statistics *loader[uuid.UUID, *store.NamespaceStatistics]
	// repositoryCount counts a namespace's active repositories.
	repositoryCount *loader[uuid.UUID, int]

	repository  *loader[idKey, *store.Repository]
	collections *loader[idKey, []*store.RepositoryCollection]

	// Page loaders return limit+1 rows per parent (the extra one tells
	// hasNextPage), as models whose Siblings are every row of the batch.
	imagePage     *loader[pageKey, []*model.ContainerImage]
	imageCount    *loader[idKey, int]
	imageByName   *loader[namedKey, *model.ContainerImage]
	tagPage       *loader[pageKey, []*model.ContainerTag]
	tagCount      *loader[idKey, int]
	manifestPage  *loader[pageKey, []*model.ContainerManifest]
	manifestCount *loader[idKey, int]

	image            *loader[idKey, *container.Image]
	manifest         *loader[idKey, *model.ContainerManifest]
	manifestByDigest *loader[namedKey, *model.ContainerManifest] // name: the raw digest
	tagNames         *loader[idKey, []string]
	references       *loader[idKey, []*model.ContainerManifest]
	parents          *loader[idKey, []*model.ContainerManifest]
	subject          *loader[idKey, *model.ContainerManifest]
	referrers        *loader[referrerKey, []*model.ContainerManifest]

	// Payload reads (containerdetail.go): image manifests and indexes
	// apart, so a field asked on a page of both reads only the payloads it
	// needs; configs by the id of the manifest that lists them.
	imageDescriptions *loader[idKey, *container.DescribeResult]
	indexDescriptions *loader[idKey, *container.DescribeResult]
	configs           *loader[idKey, *container.ConfigResult]

	pkg *packageLoaders // npm and Maven (packages_loaders.go)

	// Pull-through caches (remote.go): settings by repository id, cached
	// image pages by container_remote_repositories id, tags by image.
	remote          *loader[idKey, *model.RemoteRepository]
	remoteImagePage *loader[pageKey, []*model.RemoteCachedImage]
	remoteTags      *loader[idKey, []*model.RemoteCachedTag]
	// Maven proxies (remote.go): settings by repository id, cached
	// package pages by maven_remote_repositories id.
	mavenRemote            *loader[idKey, *model.RemoteRepository]
	mavenRemotePackagePage *loader[pageKey, []*model.RemoteCachedMavenPackage]

	// Virtual repositories (virtual.go): settings by repository id.
	virtual *loader[idKey, *virtualSettings]
}

type loadersKey struct{}

func withLoaders(ctx context.Context, r *Resolver, wait time.Duration) context.Context {
	return context.WithValue(ctx, loadersKey{}, newLoaders(r, wait))
}

func loadersFrom(ctx context.Context) *loaders {
	return ctx.Value(loadersKey{}).(*loaders)
}

// referrerKey names the referrers of one manifest, of one artifact type
// when filtered.
type referrerKey struct {
	ns           uuid.UUID
	id           uuid.UUID
	filtered     bool
	artifactType string
}

func newLoaders(r *Resolver, wait time.Duration) *loaders {
	l := newRowLoaders(r, wait)
	cs := r.container
	describe := func(types []string) *loader[idKey, *container.DescribeResult] {
		return newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*container.DescribeResult, error) {
			return cs.DescribeManifests(ctx, ns, ids, types)
		}))
	}
	l.imageDescriptions = describe(container.ImageManifestTypes)
	l.indexDescriptions = describe(container.IndexTypes)
	l.configs = newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*container.ConfigResult, error) {
		return loadConfigs(ctx, l, cs, ns, ids)
	}))
	return l
}

func newRowLoaders(r *Resolver, wait time.Duration) *loaders {
	st, cs := r.store, r.container
	return &loaders{
		namespace: newLoader(wait, func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]*store.Namespace, error) {
			nss, err := st.NamespacesByIDs(ctx, ids)
			return indexBy(nss, func(n *store.Namespace) uuid.UUID { return n.ID }), err
		}),
		statistics:      newLoader(wait, st.StatisticsOfNamespaces),
		repositoryCount: newLoader(wait, st.RepositoryCountsOfNamespaces),

		repository: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*store.Repository, error) {
			rs, err := st.RepositoriesByIDs(ctx, ns, ids)
			return indexBy(rs, func(r *store.Repository) uuid.UUID { return r.ID }), err
		})),
		collections: newLoader(wait, perNamespace(st.CollectionsOfRepositories)),

		imagePage: newLoader(wait, perPage(func(ctx context.Context, k pageKey, ids []uuid.UUID) (map[uuid.UUID][]*model.ContainerImage, error) {
			m, err := cs.ImagesOfRepositories(ctx, k.ns, ids, optString(k.after), k.limit)
			return siblingPages(m, k.limit, toImage,
				func(i *container.Image) uuid.UUID { return i.ID },
				func(i *model.ContainerImage, g *model.Group) { i.Siblings = g }), err
		})),
		imageCount: newLoader(wait, perNamespace(cs.CountImagesOfRepositories)),
		imageByName: newLoader(wait, func(ctx context.Context, keys []namedKey) (map[namedKey]*model.ContainerImage, error) {
			type group struct {
				ns   uuid.UUID
				name string
			}
			groups := map[group][]uuid.UUID{}
			for _, k := range keys {
				g := group{k.ns, k.name}
				groups[g] = append(groups[g], k.parent)
			}
			out := make(map[namedKey]*model.ContainerImage, len(keys))
			for g, repos := range groups {
				m, err := cs.ImageOfRepositoriesByName(ctx, g.ns, repos, g.name)
				if err != nil {
					return nil, err
				}
				for repo, list := range siblingPages(m, -1, toImage,
					func(i *container.Image) uuid.UUID { return i.ID },
					func(i *model.ContainerImage, sg *model.Group) { i.Siblings = sg }) {
					out[namedKey{ns: g.ns, parent: repo, name: g.name}] = list[0]
				}
			}
			return out, nil
		}),
		tagPage: newLoader(wait, perPage(func(ctx context.Context, k pageKey, ids []uuid.UUID) (map[uuid.UUID][]*model.ContainerTag, error) {
			m, err := cs.TagsOfImages(ctx, k.ns, ids, optString(k.after), k.limit)
			return siblingPages(m, k.limit, toTag,
				func(t *container.Tag) uuid.UUID { return t.ManifestID },
				func(t *model.ContainerTag, g *model.Group) { t.Siblings = g }), err
		})),
		tagCount: newLoader(wait, perNamespace(cs.CountTagsOfImages)),
		manifestPage: newLoader(wait, perPage(func(ctx context.Context, k pageKey, ids []uuid.UUID) (map[uuid.UUID][]*model.ContainerManifest, error) {
			var after []byte
			if k.after != "" {
				after = []byte(k.after)
			}
			m, err := cs.ManifestsOfImages(ctx, k.ns, ids, after, k.limit)
			return siblingPages(m, k.limit, toManifest, manifestID, setManifestSiblings), err
		})),
		manifestCount: newLoader(wait, perNamespace(cs.CountManifestsOfImages)),

		image: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*container.Image, error) {
			is, err := cs.ImagesByIDs(ctx, ns, ids)
			return indexBy(is, func(i *container.Image) uuid.UUID { return i.ID }), err
		})),
		manifest: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*model.ContainerManifest, error) {
			ms, err := cs.ManifestsByIDs(ctx, ns, ids)
			if err != nil {
				return nil, err
			}
			out := map[uuid.UUID]*model.ContainerManifest{}
			for _, list := range siblingPages(map[uuid.UUID][]*container.Manifest{uuid.Nil: ms}, len(ms), toManifest, manifestID, setManifestSiblings) {
				for _, m := range list {
					out[m.ID] = m
				}
			}
			return out, nil
		})),
		references: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID][]*model.ContainerManifest, error) {
			m, err := cs.ReferencesOfManifests(ctx, ns, ids)
			return siblingPages(m, -1, toManifest, manifestID, setManifestSiblings), err
		})),
		parents: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID][]*model.ContainerManifest, error) {
			m, err := cs.ParentsOfManifests(ctx, ns, ids)
			return siblingPages(m, -1, toManifest, manifestID, setManifestSiblings), err
		})),
		subject: newLoader(wait, perNamespace(func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*model.ContainerManifest, error) {
			m, err := cs.SubjectsOfManifests(ctx, ns, ids)
			out := map[uuid.UUID]*model.ContainerManifest{}
			for id, list := range siblingPages(m, -1, toManifest, manifestID, setManifestSiblings) {
				out[id] = list[0]
			}
			return out, err
		})),
		referrers: newLoader(wait, func(ctx context.Context, keys []referrerKey) (map[referrerKey][]*model.ContainerManifest, error) {
			groups := map[referrerKey][]uuid.UUID{}
			for _, k := range keys {
				g := k
				g.id = uuid.Nil
				groups[g] = append(groups[g], k.id)
			}
			out := make(map[referrerKey][]*model.ContainerManifest, len(keys))
			for g, ids := range groups {
				var filter *string
				if g.filtered {
					filter = &g.artifactType
				}
				m, err := cs.ReferrersOfManifests(ctx, g.ns, ids, filter, maxManifestReferrers)
				if err != nil {
					return nil, err
				}
				for id, list := range siblingPages(m, -1, toManifest, manifestID, setManifestSiblings) {
					k := g
					k.id = id
					out[k] = list
				}
			}
			return out, nil
		}),
		manifestByDigest: newLoader(wait, func(ctx context.Context, keys []namedKey) (map[namedKey]*model.ContainerManifest, error) {
			type group struct {
				ns     uuid.UUID
				digest string
			}
			groups := map[group][]uuid.UUID{}
			for _, k := range keys {
				g := group{k.ns, k.name}
				groups[g] = append(groups[g], k.parent)
			}
			out := make(map[namedKey]*model.ContainerManifest, len(keys))
			for g, images := range groups {
				m, err := cs.ManifestOfImagesByDigest(ctx, g.ns, images, []byte(g.digest))
				if err != nil {
					return nil, err
				}
				for image, list := range siblingPages(m, -1, toManifest, manifestID, setManifestSiblings) {
					out[namedKey{ns: g.ns, parent: image, name: g.digest}] = list[0]
				}
			}
			return out, nil
		}),
		tagNames: newLoader(wait, perNamespace(cs.TagNamesOfManifests)),
		pkg:      newPackageLoaders(r, wait),

		remote:          newLoader(wait, perNamespace(remoteSettingsLoader(cs, r.npm))),
		remoteImagePage: newLoader(wait, perPage(remoteImagePageLoader(cs))),
		remoteTags:      newLoader(wait, perNamespace(remoteTagsLoader(cs))),

		mavenRemote:            newLoader(wait, perNamespace(mavenRemoteSettingsLoader(r.maven))),
		mavenRemotePackagePage: newLoader(wait, perPage(mavenRemotePackagePageLoader(r.maven))),
		virtual:                newLoader(wait, perNamespace(virtualSettingsLoader(r.store))),
	}
}

func manifestID(m *container.Manifest) uuid.UUID { return m.ID }

func setManifestSiblings(m *model.ContainerManifest, g *model.Group) { m.Siblings = g }

// siblingPages converts a batch's rows to models that share one Siblings
// slice: the ids (sibID) of every row shown, i.e. the first limit rows of
// each parent (limit < 0: all rows).
func siblingPages[S, M any](m map[uuid.UUID][]*S, limit int, conv func(*S) *M, sibID func(*S) uuid.UUID, set func(*M, *model.Group)) map[uuid.UUID][]*M {
	var sib []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, rows := range m {
		for i, r := range rows {
			if limit >= 0 && i >= limit {
				break
			}
			if id := sibID(r); !seen[id] {
				seen[id] = true
				sib = append(sib, id)
			}
		}
	}
	g := model.NewGroup(sib)
	out := make(map[uuid.UUID][]*M, len(m))
	for parent, rows := range m {
		ms := make([]*M, 0, len(rows))
		for _, r := range rows {
			v := conv(r)
			set(v, g)
			ms = append(ms, v)
		}
		out[parent] = ms
	}
	return out
}

// prime loads, once per group and loader (name), the values of all the
// group's members in one synchronous batch and primes the loader's cache
// with them; every member's resolver then finds its own key cached. Members
// that arrive while the batch runs wait for it, so a level of a nested
// query is exactly one statement per loader, whatever the timing.
func prime[K comparable, V any](ctx context.Context, l *loader[K, V], g *model.Group, name string, keys func([]uuid.UUID) []K) {
	g.Do(name, func() {
		ks := keys(g.IDs)
		for i, r := range l.batch(ctx, ks) {
			if r.Error == nil { // on error the member's own Load retries and reports it
				l.Prime(ctx, ks[i], r.Data)
			}
		}
	})
}

func idKeys(ns uuid.UUID) func([]uuid.UUID) []idKey {
	return func(ids []uuid.UUID) []idKey {
		out := make([]idKey, len(ids))
		for i, id := range ids {
			out[i] = idKey{ns: ns, id: id}
		}
		return out
	}
}

func pageKeys(k pageKey) func([]uuid.UUID) []pageKey {
	return func(parents []uuid.UUID) []pageKey {
		out := make([]pageKey, len(parents))
		for i, p := range parents {
			out[i] = k
			out[i].parent = p
		}
		return out
	}
}

// pageName names a page loader with its page arguments (aliases may ask
// one group for pages of different shapes).
func pageName(loader string, k pageKey) string {
	return fmt.Sprintf("%s/%d/%x", loader, k.limit, k.after)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func indexBy[V any](vs []V, key func(V) uuid.UUID) map[uuid.UUID]V {
	m := make(map[uuid.UUID]V, len(vs))
	for _, v := range vs {
		m[key(v)] = v
	}
	return m
}

// loader is a dataloader that keeps its batch function, so a group can
// run one batch for all its members synchronously (prime).
type loader[K comparable, V any] struct {
	*dataloader.Loader[K, V]
	batch dataloader.BatchFunc[K, V]
}

// newLoader builds a loader from a fetch of many keys at once; keys the
// fetch does not return resolve to V's zero value (nil: not found).
func newLoader[K comparable, V any](wait time.Duration, fetch func(context.Context, []K) (map[K]V, error)) *loader[K, V] {
	batch := func(ctx context.Context, keys []K) []*dataloader.Result[V] {
		m, err := fetch(ctx, keys)
		out := make([]*dataloader.Result[V], len(keys))
		for i, k := range keys {
			if err != nil {
				out[i] = &dataloader.Result[V]{Error: err}
			} else {
				out[i] = &dataloader.Result[V]{Data: m[k]}
			}
		}
		return out
	}
	return &loader[K, V]{Loader: dataloader.NewBatchedLoader(batch, dataloader.WithWait[K, V](wait)), batch: batch}
}

// perNamespace splits a batch of keys by namespace: one query per
// namespace, each with namespace_id = $1 and id = ANY($2).
func perNamespace[V any](fetch func(ctx context.Context, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]V, error)) func(context.Context, []idKey) (map[idKey]V, error) {
	return func(ctx context.Context, keys []idKey) (map[idKey]V, error) {
		groups := map[uuid.UUID][]uuid.UUID{}
		for _, k := range keys {
			groups[k.ns] = append(groups[k.ns], k.id)
		}
		out := make(map[idKey]V, len(keys))
		for ns, ids := range groups {
			m, err := fetch(ctx, ns, ids)
			if err != nil {
				return nil, err
			}
			for id, v := range m {
				out[idKey{ns: ns, id: id}] = v
			}
		}
		return out, nil
	}
}

// perPage splits a batch of page keys by namespace and page arguments:
// one query per group, for all the parents of the group.
func perPage[V any](fetch func(ctx context.Context, k pageKey, parents []uuid.UUID) (map[uuid.UUID]V, error)) func(context.Context, []pageKey) (map[pageKey]V, error) {
	return func(ctx context.Context, keys []pageKey) (map[pageKey]V, error) {
		groups := map[pageKey][]uuid.UUID{}
		for _, k := range keys {
			g := k
			g.parent = uuid.Nil
			groups[g] = append(groups[g], k.parent)
		}
		out := make(map[pageKey]V, len(keys))
		for g, parents := range groups {
			m, err := fetch(ctx, g, parents)
			if err != nil {
				return nil, err
			}
			for parent, v := range m {
				k := g
				k.parent = parent
				out[k] = v
			}
		}
		return out, nil
	}
}
