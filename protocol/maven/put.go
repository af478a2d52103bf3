package maven

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// checksumHeaders are the request headers that announce a file's digest
// (Artifactory and Nexus use these names; some deploy tools send them).
var checksumHeaders = map[mavenlayout.ChecksumAlgorithm]string{
	mavenlayout.MD5:    "X-Checksum-Md5",
	mavenlayout.SHA1:   "X-Checksum-Sha1",
	mavenlayout.SHA256: "X-Checksum-Sha256",
	mavenlayout.SHA512: "X-Checksum-Sha512",
}

// put serves PUT of a file, a metadata document or a checksum sidecar.
// Go's server sends "100 Continue" only when the body is first read, so a
// request refused before that (401, 403, 400, or a release conflict
// decided from the announced size) never uploads its body.
func (h *handler) put(w http.ResponseWriter, r *http.Request, t *mavenstore.Target, q *request) error {
	ctx := r.Context()
	switch {
	case q.checksum != "":
		body, err := io.ReadAll(http.MaxBytesReader(w, &bodyReader{r: r.Body}, maxChecksumBody))
		if err != nil {
			return toHTTPBody(err)
		}
		if err := h.maven.VerifyChecksum(ctx, t, q.ref, q.checksum, string(body)); err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		return nil
	case q.isMetadata():
		body, err := io.ReadAll(http.MaxBytesReader(w, &bodyReader{r: r.Body}, h.opts.MaxMetadataSize))
		if err != nil {
			return toHTTPBody(err)
		}
		created, err := h.maven.PutMetadata(ctx, t, q.ref, bytes.NewReader(body))
		if err != nil {
			return toHTTPBody(err)
		}
		if created {
			w.WriteHeader(http.StatusCreated)
		} else {
			w.WriteHeader(http.StatusOK)
		}
		return nil
	}
	in := mavenstore.Put{FileRef: q.ref, Size: r.ContentLength, AllowRedeploy: h.opts.AllowReleaseRedeploy}
	for alg, name := range checksumHeaders {
		if v := strings.TrimSpace(r.Header.Get(name)); v != "" {
			if in.Expect == nil {
				in.Expect = map[mavenlayout.ChecksumAlgorithm]string{}
			}
			in.Expect[alg] = strings.ToLower(v)
		}
	}
	res, err := h.maven.PutFile(ctx, t, in, &bodyReader{r: r.Body})
	if err != nil {
		return toHTTPBody(err)
	}
	if res.Created {
		w.WriteHeader(http.StatusCreated)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	return nil
}

// toHTTPBody keeps a body-size error recognizable through the store's
// wrapping.
func toHTTPBody(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return newErr(http.StatusRequestEntityTooLarge, "request body too large (limit %d bytes)", tooBig.Limit)
	}
	return err
}
