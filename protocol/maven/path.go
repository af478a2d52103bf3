package maven

import (
	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/protocol/maven/mavenpath"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// Prefix is where the Maven surface lives.
const Prefix = mavenpath.Prefix

// request is a parsed /maven/<namespace>/<repository>/<path> request.
type request struct {
	namespace, repository string
	// ref names the stored file: for a checksum sidecar, the file the
	// sidecar describes.
	ref mavenstore.FileRef
	// checksum is the sidecar algorithm, "" when the request is for the
	// file itself.
	checksum mavenlayout.ChecksumAlgorithm
	// name is the last path segment as requested.
	name string
}

func (q *request) isMetadata() bool { return q.ref.FileName == mavenlayout.MetadataFile }

// parsePath parses the escaped request path (see mavenpath.Parse).
func parsePath(escaped string) (*request, error) {
	p, err := mavenpath.Parse(escaped)
	if err != nil {
		return nil, err
	}
	return &request{
		namespace:  p.Namespace,
		repository: p.Repository,
		ref:        mavenstore.FileRef{GroupID: p.GroupID, ArtifactID: p.ArtifactID, Version: p.Version, FileName: p.FileName},
		checksum:   p.Checksum,
		name:       p.Name,
	}, nil
}
