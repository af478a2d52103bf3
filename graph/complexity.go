package graph

import (
	"github.com/artifact-registry/artifact-registry/store/maven"
	"math"
	"time"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store/lifecycle"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Bounds of the lists that are not paginated. Their resolvers never return
// more (capList), so the complexity model below, which charges each of them
// its bound, is an upper bound on the rows an operation can load.
const (
	// maxManifestTags bounds ContainerManifest.tags; the image's tags
	// connection pages through all of them.
	maxManifestTags = 50
	// maxManifestReferences and maxManifestParents bound the children of
	// an index (a multi-platform index with attestations has a few dozen)
	// and the indexes that list a manifest; maxManifestReferrers what is
	// attached to a manifest (its OCI referrers).
	maxManifestReferences = 50
	maxManifestParents    = 50
	maxManifestReferrers  = 50
	// payloadReadCost is charged on top of its children by every field read
	// from a manifest payload or config blob (an object read, up to 4 MiB
	// and 1 MiB): the complexity limit allows a few hundred reads per
	// operation, not one per row of the largest page nest.
	payloadReadCost = 500
	// maxRepositoryCollections bounds Repository.collections; the
	// namespace's collections connection pages through all of them.
	maxRepositoryCollections = 100
	// maxNpmDistTags is the store's own limit per package;
	// maxNpmVersionDistTags bounds the tags naming one version.
	maxNpmDistTags        = npmstore.MaxTagsPerPackage
	maxNpmVersionDistTags = 100
	// maxNpmDependencies bounds one kind of dependencies of a version.
	maxNpmDependencies = 250
	// maxLifecycleItemTags bounds LifecyclePreviewItem.tags (the walk
	// reads at most that many tags per manifest).
	maxLifecycleItemTags = 1000
	// maxTokenRepositories bounds AccessToken.repositories.
	maxTokenRepositories = 1000
	// scopeCount and legacyStatusCount are the sizes of the enums listed
	// whole.
	scopeCount        = 4
	legacyStatusCount = 7
	// purgedKindCount bounds PurgeTrashPayload.counts: one entry per kind
	// a purge reports (the trash kinds and container blob links).
	purgedKindCount = 8
)

// capList keeps the first max elements of a list that is not paginated.
func capList[T any](l []T, max int) []T {
	if len(l) > max {
		return l[:max]
	}
	return l
}

// listCost is the cost of a list of at most n elements, each costing
// child (at least 1: a list of scalars still costs its elements). It
// saturates instead of overflowing, so no nesting can wrap it below the
// limit.
func listCost(child, n int) int {
	child = max(child, 1)
	if child > (math.MaxInt-1)/n {
		return math.MaxInt
	}
	return 1 + n*child
}

func saturatingAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// pageCost is the cost of a connection page: first (or last) rows, the
// default page size when absent, and never more than a page may hold (a
// larger first is refused when the field resolves).
func pageCost(child int, first *int) int {
	n := defaultPageSize
	if first != nil && *first > 0 {
		n = min(*first, maxPageSize)
	}
	return listCost(child, n)
}

// setComplexity makes every list and connection cost its size times its
// children, so an operation's cost approximates the rows it can load.
// TestEveryListHasACost fails on a list field left out here.
func setComplexity(c *ComplexityRoot) {
	setConnectionComplexity(c)
	setListComplexity(c)
}

func setConnectionComplexity(c *ComplexityRoot) {
	page := func(child int, first *int, _ *string) int { return pageCost(child, first) }
	c.Query.Namespaces = func(child int, first *int, _ *string, _ *model.NamespaceOrder, _ *string) int {
		return pageCost(child, first)
	}
	c.Query.ExcludedGcCandidates = func(child int, _ string, first *int, _ *string) int { return pageCost(child, first) }
	c.Query.AccessTokens = func(child int, _ string, first *int, _ *string, _ *bool) int { return pageCost(child, first) }
	c.Query.LegacyRepositories = func(child int, _ []model.LegacyMigrationStatus, first *int, _ *string) int {
		return pageCost(child, first)
	}
	c.Namespace.Repositories = func(child int, first *int, _ *string, last *int, _ *string, _ *model.RepositoryOrder, _ *model.RepositoryFilter) int {
		if last != nil {
			return pageCost(child, last)
		}
		return pageCost(child, first)
	}
	c.Namespace.Collections = page
	c.Namespace.Trash = func(child int, first *int, _ *string, last *int, _ *string, _ *model.TrashKind) int {
		if last != nil {
			return pageCost(child, last)
		}
		return pageCost(child, first)
	}
	c.Namespace.PublishHistory = func(child int, _, _ *time.Time, first *int, _ *string) int { return pageCost(child, first) }
	c.Repository.Images = page
	c.Repository.NpmPackages = page
	c.Repository.MavenPackages = page
	c.ContainerImage.Tags = page
	c.ContainerImage.Manifests = page
	c.NpmPackage.Versions = page
	c.MavenPackage.Versions = page
	c.MavenPackage.Files = page
	c.MavenVersion.Files = page
	c.LifecyclePreview.Items = page
	c.RemoteRepository.CachedImages = page
	c.RemoteRepository.CachedPackages = func(child int, first *int) int {
		n := maxRemotePackages
		if first != nil && *first >= 0 && *first < n {
			n = *first
		}
		return listCost(child, max(n, 1))
	}
	c.RemoteRepository.CachedMavenPackages = page
}

func setListComplexity(c *ComplexityRoot) {
	bounded := func(n int) func(int) int { return func(child int) int { return listCost(child, n) } }
	c.Namespace.ChecksumSearch = func(child int, _ string, _ *bool, first *int) int {
		n := defaultChecksumMatches
		if first != nil && *first > 0 {
			n = min(*first, maxChecksumMatches)
		}
		return listCost(child, n)
	}
	c.Repository.Collections = bounded(maxRepositoryCollections)
	c.ContainerManifest.Tags = bounded(maxManifestTags)
	c.ContainerManifest.References = bounded(maxManifestReferences)
	c.ContainerManifest.Parents = bounded(maxManifestParents)
	c.ContainerManifest.Referrers = func(child int, _ *string) int { return listCost(child, maxManifestReferrers) }
	read := func(cost func(int) int) func(int) int {
		return func(child int) int { return saturatingAdd(cost(child), payloadReadCost) }
	}
	single := func(child int) int { return saturatingAdd(child, 1) }
	c.ContainerManifest.CompressedSize = read(single)
	c.ContainerManifest.ConfigBlob = read(single)
	c.ContainerManifest.Config = read(read(single)) // the payload, then the config blob
	c.ContainerManifest.Layers = read(bounded(maxManifestDescriptors))
	c.ContainerManifest.IndexEntries = read(bounded(maxManifestDescriptors))
	c.ContainerManifest.Annotations = read(bounded(maxAnnotations))
	c.ContainerIndexEntry.Annotations = bounded(maxAnnotations)
	c.ContainerImageConfig.Entrypoint = bounded(maxConfigArgs)
	c.ContainerImageConfig.Cmd = bounded(maxConfigArgs)
	c.ContainerImageConfig.ExposedPorts = bounded(maxConfigPorts)
	c.ContainerImageConfig.Labels = bounded(maxConfigLabels)
	c.NpmPackage.DistTags = bounded(maxNpmDistTags)
	c.NpmVersion.DistTags = bounded(maxNpmVersionDistTags)
	c.NpmVersion.Dependencies = func(child int, _ *model.NpmDependencyKind) int { return listCost(child, maxNpmDependencies) }
	c.AccessToken.Repositories = bounded(maxTokenRepositories)
	c.AccessToken.Scopes = bounded(scopeCount)
	c.Viewer.Scopes = bounded(scopeCount)
	c.LegacyMigrationProgress.ByStatus = bounded(legacyStatusCount)
	c.PurgeTrashPayload.Counts = bounded(purgedKindCount)
	c.LifecyclePolicy.Rules = bounded(lifecycle.MaxRules)
	c.LifecyclePreviewItem.Tags = bounded(maxLifecycleItemTags)
	c.RemoteCachedImage.Tags = bounded(maxRemoteImageTags)
	c.RemoteCachedMavenPackage.Versions = bounded(maven.MaxRemotePackageVersions)
	c.VirtualRepository.Upstreams = bounded(maxVirtualUpstreams)
	c.VirtualRepository.ReservedPatterns = bounded(maxVirtualReserved)
	c.VirtualUpstream.Rules = bounded(maxVirtualRules)
	// A resolution reads the virtual's tree (one statement per nesting
	// level) and two probes of the members' content: as much as a payload
	// read, whatever its steps cost.
	c.VirtualRepository.Resolve = func(child int, _ string, _ *string) int { return saturatingAdd(child, payloadReadCost) }
	c.VirtualResolution.Steps = bounded(maxResolveSteps)
}
