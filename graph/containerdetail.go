package graph

import (
	"context"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// The details of a container manifest read from its payload and config
// blob (layers, index entries, annotations, config highlights). Each
// payload is read once per request by the description loaders, for every
// manifest of the batch that needs it; what the payload says is user data,
// passed through as text.

// Bounds of the lists read from payloads and configs (capList).
const (
	// maxManifestDescriptors: a manifest holds at most 200 references
	// (the push limit), so every layer and index entry fits.
	maxManifestDescriptors = 200
	maxAnnotations         = 50
	maxConfigArgs          = 100
	maxConfigPorts         = 100
	maxConfigLabels        = 100
)

func isImageManifest(mediaType string) bool {
	return slices.Contains(container.ImageManifestTypes, mediaType)
}

func isIndex(mediaType string) bool { return slices.Contains(container.IndexTypes, mediaType) }

// describe returns what a manifest's payload lists (nil for a media type
// that lists nothing we know), or the payload's error.
func describe(ctx context.Context, m *model.ContainerManifest) (*container.ManifestDescription, error) {
	l := loadersFrom(ctx)
	var ld *loader[idKey, *container.DescribeResult]
	name := ""
	switch {
	case isImageManifest(m.MediaType):
		ld, name = l.imageDescriptions, "imageDescriptions"
	case isIndex(m.MediaType):
		ld, name = l.indexDescriptions, "indexDescriptions"
	default:
		return nil, nil
	}
	prime(ctx, ld, m.Siblings, name, idKeys(m.NamespaceID))
	r, err := ld.Load(ctx, idKey{ns: m.NamespaceID, id: m.ID})()
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, notFound("manifest %s not found", m.Digest)
	}
	return r.Description, r.Err
}

// imageDescription is describe for the fields of image manifests: nil
// without an error for indexes.
func imageDescription(ctx context.Context, m *model.ContainerManifest) (*container.ManifestDescription, error) {
	if !isImageManifest(m.MediaType) {
		return nil, nil
	}
	return describe(ctx, m)
}

func compressedSize(ctx context.Context, m *model.ContainerManifest) (*int64, error) {
	d, err := imageDescription(ctx, m)
	if d == nil {
		return nil, err
	}
	var n int64
	if d.Config != nil {
		n += d.Config.Size
	}
	for _, l := range d.Layers {
		n += l.Size
	}
	return &n, nil
}

func configBlob(ctx context.Context, m *model.ContainerManifest) (*model.ContainerDescriptor, error) {
	d, err := imageDescription(ctx, m)
	if d == nil || d.Config == nil {
		return nil, err
	}
	return toDescriptor(d.Config), nil
}

func layers(ctx context.Context, m *model.ContainerManifest) ([]*model.ContainerDescriptor, error) {
	d, err := imageDescription(ctx, m)
	if d == nil {
		return nil, err
	}
	out := make([]*model.ContainerDescriptor, 0, len(d.Layers))
	for i := range capList(d.Layers, maxManifestDescriptors) {
		out = append(out, toDescriptor(&d.Layers[i]))
	}
	return out, nil
}

func indexEntries(ctx context.Context, m *model.ContainerManifest) ([]*model.ContainerIndexEntry, error) {
	if !isIndex(m.MediaType) {
		return nil, nil
	}
	d, err := describe(ctx, m)
	if d == nil {
		return nil, err
	}
	out := make([]*model.ContainerIndexEntry, 0, len(d.Manifests))
	for _, e := range capList(d.Manifests, maxManifestDescriptors) {
		entry := &model.ContainerIndexEntry{NamespaceID: m.NamespaceID, Index: m, Digest: e.Digest, MediaType: e.MediaType,
			Size: e.Size, ArtifactType: optString(e.ArtifactType), Annotations: keyValues(e.Annotations, maxAnnotations)}
		if p := e.Platform; p != nil {
			entry.Platform = &model.ContainerPlatform{Os: p.OS, Architecture: p.Architecture,
				Variant: optString(p.Variant), OsVersion: optString(p.OSVersion)}
		}
		out = append(out, entry)
	}
	return out, nil
}

func annotations(ctx context.Context, m *model.ContainerManifest) ([]*model.KeyValue, error) {
	d, err := describe(ctx, m)
	if d == nil {
		return []*model.KeyValue{}, err
	}
	return keyValues(d.Annotations, maxAnnotations), nil
}

// indexEntryManifest finds an entry's manifest among its index's children
// (one batch for the index's siblings).
func indexEntryManifest(ctx context.Context, e *model.ContainerIndexEntry) (*model.ContainerManifest, error) {
	l, idx := loadersFrom(ctx), e.Index
	prime(ctx, l.references, idx.Siblings, "references", idKeys(idx.NamespaceID))
	children, err := l.references.Load(ctx, idKey{ns: idx.NamespaceID, id: idx.ID})()
	if err != nil {
		return nil, err
	}
	for _, c := range children {
		if c.Digest == e.Digest && c.SoftDeletedAt == nil {
			return c, nil
		}
	}
	return nil, nil
}

// imageConfig returns the highlights of an image manifest's config; nil
// for indexes and artifacts whose config is not an image configuration.
func imageConfig(ctx context.Context, m *model.ContainerManifest) (*model.ContainerImageConfig, error) {
	d, err := imageDescription(ctx, m)
	if d == nil || d.Config == nil || !container.IsImageConfig(d.Config.MediaType) {
		return nil, err
	}
	l := loadersFrom(ctx)
	prime(ctx, l.configs, m.Siblings, "configs", idKeys(m.NamespaceID))
	r, err := l.configs.Load(ctx, idKey{ns: m.NamespaceID, id: m.ID})()
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, nil
	}
	if r.Err != nil {
		return nil, r.Err
	}
	c := r.Config
	return &model.ContainerImageConfig{Created: c.Created, Author: optString(c.Author), Os: optString(c.OS),
		Architecture: optString(c.Architecture), Variant: optString(c.Variant),
		Entrypoint: capList(c.Entrypoint, maxConfigArgs), Cmd: capList(c.Cmd, maxConfigArgs),
		WorkingDir: optString(c.WorkingDir), User: optString(c.User),
		ExposedPorts: capList(nonNil(c.ExposedPorts), maxConfigPorts), Labels: keyValues(c.Labels, maxConfigLabels)}, nil
}

// loadConfigs is the batch of the configs loader: the descriptions of the
// manifests (cached by then: the config field asked for them), then one
// read of every image config they list.
func loadConfigs(ctx context.Context, l *loaders, cs *container.Store, ns uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]*container.ConfigResult, error) {
	keys := make([]idKey, len(ids))
	for i, id := range ids {
		keys[i] = idKey{ns: ns, id: id}
	}
	descs, errs := l.imageDescriptions.LoadMany(ctx, keys)()
	byManifest := map[uuid.UUID][32]byte{}
	var digests [][32]byte
	for i, r := range descs {
		if (errs != nil && errs[i] != nil) || r == nil || r.Description == nil || r.Description.Config == nil ||
			!container.IsImageConfig(r.Description.Config.MediaType) {
			continue
		}
		d, err := store.ParseSHA256(r.Description.Config.Digest)
		if err != nil {
			continue
		}
		byManifest[ids[i]] = d
		digests = append(digests, d)
	}
	configs, err := cs.ImageConfigs(ctx, ns, digests)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]*container.ConfigResult, len(byManifest))
	for id, d := range byManifest {
		out[id] = configs[d]
	}
	return out, nil
}

func toDescriptor(d *container.Descriptor) *model.ContainerDescriptor {
	out := &model.ContainerDescriptor{Digest: d.Digest, MediaType: d.MediaType, Size: d.Size}
	if t, ok := d.Annotations["org.opencontainers.image.title"]; ok {
		out.Title = &t
	}
	return out
}

// keyValues lists a map by key, at most max pairs.
func keyValues(m map[string]string, max int) []*model.KeyValue {
	out := []*model.KeyValue{}
	for _, k := range capList(slices.Sorted(maps.Keys(m)), max) {
		out = append(out, &model.KeyValue{Key: k, Value: m[k]})
	}
	return out
}
