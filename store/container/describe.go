package container

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// What the management API shows of an image beyond its rows: the layers,
// config and index entries a manifest's payload lists, and the highlights
// of its config blob. Payloads and configs live in object storage; they
// were validated when pushed (protocol/oci), so they are decoded here
// leniently, and a payload or config that cannot be read or decoded is an
// error of that one item, never of the batch.

// Codes of the per-item errors.
var (
	// CodeContentMissing: the bytes of a manifest or config are not in
	// object storage (or their blob row is gone).
	CodeContentMissing = store.Code{Name: "CONTAINER_CONTENT_MISSING", Kind: store.KindNotFound}
	// CodeContentInvalid: the bytes do not decode as what they should be.
	CodeContentInvalid = store.Code{Name: "CONTAINER_CONTENT_INVALID", Kind: store.KindInvalidInput}
	// CodeContentTooLarge: a config blob over MaxConfigBytes.
	CodeContentTooLarge = store.Code{Name: "CONTAINER_CONTENT_TOO_LARGE", Kind: store.KindTooLarge}
)

const (
	// MaxDescribedManifestBytes is the push limit of a manifest (4 MiB).
	MaxDescribedManifestBytes = 4 << 20
	// MaxConfigBytes bounds the config blobs read for their highlights
	// (an image config is a few KiB; one with a long history a few hundred).
	MaxConfigBytes = 1 << 20
	// describeReads bounds the object reads of one batch in flight.
	describeReads = 4
)

// Image manifest, index and config media types the descriptions know.
const (
	MediaTypeOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeOCIIndex       = "application/vnd.oci.image.index.v1+json"
	MediaTypeOCIArtifact    = "application/vnd.oci.artifact.manifest.v1+json"
	MediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaTypeOCIConfig      = "application/vnd.oci.image.config.v1+json"
	MediaTypeDockerConfig   = "application/vnd.docker.container.image.v1+json"
)

// ImageManifestTypes are the manifest types that list blobs (config and
// layers, or an artifact manifest's blobs); IndexTypes those that list
// manifests.
var (
	ImageManifestTypes = []string{MediaTypeOCIManifest, MediaTypeDockerManifest, MediaTypeOCIArtifact}
	IndexTypes         = []string{MediaTypeOCIIndex, MediaTypeDockerList}
)

// IsImageConfig reports whether a config descriptor's media type is a
// runnable image's configuration (an artifact's config is not).
func IsImageConfig(mediaType string) bool {
	return mediaType == MediaTypeOCIConfig || mediaType == MediaTypeDockerConfig
}

// Platform is an index entry's platform.
type Platform struct {
	Architecture string   `json:"architecture"`
	OS           string   `json:"os"`
	OSVersion    string   `json:"os.version"`
	Variant      string   `json:"variant"`
	OSFeatures   []string `json:"os.features"`
}

// Descriptor is a content descriptor of a payload: the config, a layer, a
// blob of an artifact manifest or an index entry.
type Descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType"`
	Annotations  map[string]string `json:"annotations"`
	Platform     *Platform         `json:"platform"`
}

// ManifestDescription is what a manifest's payload lists.
type ManifestDescription struct {
	// PayloadSize is the payload's size in bytes.
	PayloadSize  int64
	ArtifactType string
	Config       *Descriptor
	// Layers: an image manifest's layers, or an artifact manifest's blobs.
	Layers []Descriptor
	// Manifests: an index's or manifest list's entries.
	Manifests   []Descriptor
	Subject     *Descriptor
	Annotations map[string]string
}

// DescribeResult is the description of one manifest, or why there is none.
type DescribeResult struct {
	Description *ManifestDescription
	Err         error
}

type describedPayload struct {
	ArtifactType string            `json:"artifactType"`
	Config       *Descriptor       `json:"config"`
	Layers       []Descriptor      `json:"layers"`
	Blobs        []Descriptor      `json:"blobs"`
	Manifests    []Descriptor      `json:"manifests"`
	Subject      *Descriptor       `json:"subject"`
	Annotations  map[string]string `json:"annotations"`
}

// DescribeManifests reads and decodes the payloads of the namespace's
// manifests ids whose media type is one of mediaTypes (the others are left
// out, like unknown ids): one statement for the rows, one for their blob
// rows, then the object reads (a few at a time).
func (s *Store) DescribeManifests(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID, mediaTypes []string) (map[uuid.UUID]*DescribeResult, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT cm.id, cm.digest, cm.media_type, cm.size FROM container_manifests cm
		WHERE cm.namespace_id = $1 AND cm.id = ANY($2) AND cm.media_type = ANY($3::text[])`, nsID, ids, mediaTypes)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: describe manifests: %w", err))
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ManifestRow, error) { return scanManifestRow(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: describe manifests: %w", err))
	}
	out := make(map[uuid.UUID]*DescribeResult, len(ms))
	if len(ms) == 0 {
		return out, nil
	}
	shas := make([][]byte, len(ms))
	for i, m := range ms {
		shas[i] = m.Digest[:]
	}
	blobs, err := statBlobs(ctx, s.pool, nsID, shas)
	if err != nil {
		return nil, err
	}
	results := make([]*DescribeResult, len(ms))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(describeReads)
	for i, m := range ms {
		b, ok := blobs[m.Digest]
		if !ok {
			results[i] = &DescribeResult{Err: errs.WithDigest(CodeContentMissing, m.Digest,
				"the payload of manifest %s is not in storage", store.FormatSHA256(m.Digest))}
			continue
		}
		m.Payload = *b
		g.Go(func() error {
			payload, err := s.readObject(gctx, &m.Payload, MaxDescribedManifestBytes)
			if err != nil {
				if results[i], err = itemError(gctx, err, "payload of manifest", m.Digest); err != nil {
					return err
				}
				return nil
			}
			d, err := decodeManifest(payload)
			if err != nil {
				results[i] = &DescribeResult{Err: errs.WithDigest(CodeContentInvalid, m.Digest,
					"the payload of manifest %s does not decode: %v", store.FormatSHA256(m.Digest), err)}
				return nil
			}
			results[i] = &DescribeResult{Description: d}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, m := range ms {
		out[m.ID] = results[i]
	}
	return out, nil
}

// itemError turns a failed read into the item's error, unless the batch
// itself is failing (the request was cancelled or timed out): that is
// returned as the batch's error.
func itemError(ctx context.Context, err error, what string, d [32]byte) (*DescribeResult, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case store.HasCode(err, store.CodeBlobUnknown):
		return &DescribeResult{Err: errs.WithDigest(CodeContentMissing, d, "the %s %s is not in storage", what, store.FormatSHA256(d))}, nil
	case store.HasCode(err, CodeContentTooLarge):
		return &DescribeResult{Err: err}, nil
	}
	return nil, err
}

func decodeManifest(payload []byte) (*ManifestDescription, error) {
	var raw describedPayload
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, err
	}
	d := &ManifestDescription{PayloadSize: int64(len(payload)), ArtifactType: raw.ArtifactType, Config: raw.Config,
		Layers: raw.Layers, Manifests: raw.Manifests, Subject: raw.Subject, Annotations: raw.Annotations}
	if d.Layers == nil {
		d.Layers = raw.Blobs
	}
	return d, nil
}

// readObject reads a blob's bytes whole, refusing one over max bytes
// before reading it.
func (s *Store) readObject(ctx context.Context, b *store.Blob, max int64) ([]byte, error) {
	if b.Size > max {
		return nil, errs.WithDigest(CodeContentTooLarge, b.SHA256, "blob %s is %d bytes; at most %d are read",
			store.FormatSHA256(b.SHA256), b.Size, max)
	}
	r, err := s.core.OpenBlobObject(ctx, b, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var buf bytes.Buffer
	buf.Grow(int(b.Size))
	if _, err := io.Copy(&buf, io.LimitReader(r, b.Size+1)); err != nil {
		return nil, fmt.Errorf("store: read blob %s: %w", store.FormatSHA256(b.SHA256), err)
	}
	if int64(buf.Len()) != b.Size {
		return nil, fmt.Errorf("store: blob %s: object has %d bytes, row says %d", store.FormatSHA256(b.SHA256), buf.Len(), b.Size)
	}
	return buf.Bytes(), nil
}

// ImageConfig holds the highlights of an image's config blob.
type ImageConfig struct {
	// Created is nil when absent or not an RFC 3339 time.
	Created      *time.Time
	Author       string
	Architecture string
	OS           string
	OSVersion    string
	Variant      string
	Entrypoint   []string
	Cmd          []string
	WorkingDir   string
	User         string
	// ExposedPorts in order ("80/tcp").
	ExposedPorts []string
	Labels       map[string]string
}

// ConfigResult is the config of one digest, or why there is none.
type ConfigResult struct {
	Config *ImageConfig
	Err    error
}

type rawImageConfig struct {
	Created      *string `json:"created"`
	Author       string  `json:"author"`
	Architecture string  `json:"architecture"`
	OS           string  `json:"os"`
	OSVersion    string  `json:"os.version"`
	Variant      string  `json:"variant"`
	Config       *struct {
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		WorkingDir   string              `json:"WorkingDir"`
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
}

// ImageConfigs reads the config blobs of digests in the namespace (each at
// most MaxConfigBytes) and decodes their highlights: one statement for the
// blob rows, then the object reads (a few at a time). The caller names
// digests its manifests reference, so they are the namespace's bytes the
// caller may read.
func (s *Store) ImageConfigs(ctx context.Context, nsID uuid.UUID, digests [][32]byte) (map[[32]byte]*ConfigResult, error) {
	digests = slices.Clone(digests)
	slices.SortFunc(digests, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	digests = slices.Compact(digests)
	out := make(map[[32]byte]*ConfigResult, len(digests))
	if len(digests) == 0 {
		return out, nil
	}
	shas := make([][]byte, len(digests))
	for i := range digests {
		shas[i] = digests[i][:]
	}
	blobs, err := statBlobs(ctx, s.pool, nsID, shas)
	if err != nil {
		return nil, err
	}
	results := make([]*ConfigResult, len(digests))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(describeReads)
	for i, d := range digests {
		b, ok := blobs[d]
		if !ok {
			results[i] = &ConfigResult{Err: errs.WithDigest(CodeContentMissing, d, "the config blob %s is not in storage", store.FormatSHA256(d))}
			continue
		}
		g.Go(func() error {
			raw, err := s.readObject(gctx, b, MaxConfigBytes)
			if err != nil {
				r, err := itemError(gctx, err, "config blob", d)
				if err != nil {
					return err
				}
				results[i] = &ConfigResult{Err: r.Err}
				return nil
			}
			c, err := decodeConfig(raw)
			if err != nil {
				results[i] = &ConfigResult{Err: errs.WithDigest(CodeContentInvalid, d,
					"the config blob %s is not a valid image configuration: %v", store.FormatSHA256(d), err)}
				return nil
			}
			results[i] = &ConfigResult{Config: c}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, d := range digests {
		out[d] = results[i]
	}
	return out, nil
}

func decodeConfig(b []byte) (*ImageConfig, error) {
	var raw rawImageConfig
	if err := json.Unmarshal(b, &raw); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			return nil, fmt.Errorf("%s is not a %s", ute.Field, ute.Type)
		}
		return nil, err
	}
	c := &ImageConfig{Author: raw.Author, Architecture: raw.Architecture, OS: raw.OS, OSVersion: raw.OSVersion, Variant: raw.Variant}
	if raw.Created != nil {
		if t, err := time.Parse(time.RFC3339Nano, *raw.Created); err == nil {
			c.Created = &t
		}
	}
	if rc := raw.Config; rc != nil {
		c.Entrypoint, c.Cmd, c.WorkingDir, c.User, c.Labels = rc.Entrypoint, rc.Cmd, rc.WorkingDir, rc.User, rc.Labels
		c.ExposedPorts = slices.Sorted(maps.Keys(rc.ExposedPorts))
	}
	return c, nil
}
