package soak

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
)

// worker runs operations one after another with its own random source.
type worker struct {
	id   int
	seq  int
	rng  *rand.Rand
	cl   *client
	l    layout
	acks *ackLog
}

// next is a name part no other write of the run uses.
func (w *worker) next() string {
	w.seq++
	return fmt.Sprintf("w%d-%d", w.id, w.seq)
}

// payload is random bytes of between min and max bytes.
func (w *worker) payload(min, max int) []byte {
	b := make([]byte, min+w.rng.IntN(max-min+1))
	for i := range b {
		b[i] = byte(w.rng.Uint32())
	}
	return b
}

func hexSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func digest(b []byte) string { return "sha256:" + hexSHA256(b) }

// run performs one operation.
func (w *worker) run(ctx context.Context, op string) error {
	switch op {
	case OpOCIPush:
		return w.ociPush(ctx, false)
	case OpOCIPushChunked:
		return w.ociPush(ctx, true)
	case OpOCIPull:
		return w.read(ctx, "oci")
	case OpNpmPublish:
		return w.npmPublish(ctx)
	case OpNpmInstall:
		return w.read(ctx, "npm")
	case OpMavenDeploy:
		return w.mavenDeploy(ctx)
	case OpMavenResolve:
		return w.read(ctx, "maven")
	case OpGraphQLList:
		return w.graphqlList(ctx)
	}
	return fail("other", "unknown operation %q", op)
}

// read does what a client's pull or install does with a random
// acknowledged write: every read of it must succeed.
func (w *worker) read(ctx context.Context, kind string) error {
	a, ok := w.acks.pick(w.rng, kind)
	if !ok {
		return nil
	}
	for _, ch := range a.Checks {
		if err := ch.run(ctx, w.cl); err != nil {
			return err
		}
	}
	return nil
}

// ociPush pushes a config and a layer (the layer monolithic or in
// chunks) and tags a manifest of them: docker push's requests.
func (w *worker) ociPush(ctx context.Context, chunked bool) error {
	name := fmt.Sprintf("%s/%s/app%d", w.l.namespace, w.l.oci, w.rng.IntN(4))
	tag := w.next()
	cfg := []byte(fmt.Sprintf(`{"architecture":"amd64","os":"linux","config":{"Labels":{"soak":%q}}}`, tag))
	layer := w.payload(1<<10, 64<<10)
	if err := w.blobMonolithic(ctx, name, cfg); err != nil {
		return err
	}
	push := w.blobMonolithic
	if chunked {
		push = w.blobChunked
	}
	if err := push(ctx, name, layer); err != nil {
		return err
	}
	man, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(cfg), "size": len(cfg)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(layer), "size": len(layer)}},
	})
	if _, err := w.cl.do(ctx, http.MethodPut, "/v2/"+name+"/manifests/"+tag, man, []int{http.StatusCreated},
		"Content-Type", "application/vnd.oci.image.manifest.v1+json"); err != nil {
		return err
	}
	w.acks.add(Ack{Kind: "oci", Name: name + ":" + tag, Checks: []Check{
		{Path: "/v2/" + name + "/manifests/" + tag, SHA256: hexSHA256(man)},
		{Path: "/v2/" + name + "/blobs/" + digest(layer), SHA256: hexSHA256(layer)},
	}})
	return nil
}

func (w *worker) blobMonolithic(ctx context.Context, name string, b []byte) error {
	_, err := w.cl.do(ctx, http.MethodPost, "/v2/"+name+"/blobs/uploads/?digest="+digest(b), b, []int{http.StatusCreated},
		"Content-Type", "application/octet-stream")
	return err
}

// blobChunked opens an upload session, sends the blob in three PATCHes
// and closes it with an empty PUT; every step may land on another
// instance.
func (w *worker) blobChunked(ctx context.Context, name string, b []byte) error {
	r, err := w.cl.do(ctx, http.MethodPost, "/v2/"+name+"/blobs/uploads/", nil, []int{http.StatusAccepted})
	if err != nil {
		return err
	}
	loc := r.header.Get("Location")
	for start, n := 0, (len(b)+2)/3; start < len(b); start += n {
		end := min(start+n, len(b))
		r, err = w.cl.do(ctx, http.MethodPatch, loc, b[start:end], []int{http.StatusAccepted},
			"Content-Type", "application/octet-stream", "Content-Range", fmt.Sprintf("%d-%d", start, end-1))
		if err != nil {
			return err
		}
		loc = r.header.Get("Location")
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	_, err = w.cl.do(ctx, http.MethodPut, loc+sep+"digest="+digest(b), nil, []int{http.StatusCreated})
	return err
}

// npmPublish publishes a new version of one of a few packages, as npm
// publish sends it.
func (w *worker) npmPublish(ctx context.Context) error {
	name := fmt.Sprintf("soak-pkg%d", w.rng.IntN(4))
	version := fmt.Sprintf("1.%d.%d", w.id, w.seq+1)
	w.next()
	reg := "/npm/" + w.l.namespace + "/" + w.l.npm + "/"
	doc, tgz, err := npmPublishBody(w.cl.base.String()+reg, name, version, w.payload(256, 8<<10))
	if err != nil {
		return fail("other", "build package: %v", err)
	}
	if _, err := w.cl.do(ctx, http.MethodPut, reg+name, doc, []int{http.StatusCreated, http.StatusOK},
		"Content-Type", "application/json"); err != nil {
		return err
	}
	file := name + "-" + version + ".tgz"
	w.acks.add(Ack{Kind: "npm", Name: name + "@" + version, Checks: []Check{
		{Path: reg + name, Contains: "/-/" + file},
		{Path: reg + name + "/-/" + file, SHA256: hexSHA256(tgz)},
	}})
	return nil
}

// mavenDeploy deploys a release as mvn deploy does: the jar and the pom
// with their SHA-1 sidecars, then the artifact's maven-metadata.xml.
func (w *worker) mavenDeploy(ctx context.Context) error {
	artifact := fmt.Sprintf("lib%d", w.rng.IntN(4))
	version := fmt.Sprintf("1.%d.%d", w.id, w.seq+1)
	w.next()
	base := fmt.Sprintf("/maven/%s/%s/com/example/soak/%s", w.l.namespace, w.l.maven, artifact)
	vdir := base + "/" + version + "/" + artifact + "-" + version
	jar := w.payload(1<<10, 32<<10)
	pom := []byte(`<project><modelVersion>4.0.0</modelVersion><groupId>com.example.soak</groupId><artifactId>` +
		artifact + `</artifactId><version>` + version + `</version></project>`)
	for _, f := range []struct {
		path string
		body []byte
	}{{vdir + ".jar", jar}, {vdir + ".pom", pom}} {
		if _, err := w.cl.do(ctx, http.MethodPut, f.path, f.body, []int{http.StatusCreated, http.StatusOK}); err != nil {
			return err
		}
		if _, err := w.cl.do(ctx, http.MethodPut, f.path+".sha1", []byte(hexSHA1(f.body)), []int{http.StatusCreated, http.StatusOK}); err != nil {
			return err
		}
	}
	md := `<?xml version="1.0" encoding="UTF-8"?><metadata><groupId>com.example.soak</groupId><artifactId>` + artifact +
		`</artifactId><versioning><release>` + version + `</release><versions><version>` + version +
		`</version></versions></versioning></metadata>`
	if _, err := w.cl.do(ctx, http.MethodPut, base+"/maven-metadata.xml", []byte(md), []int{http.StatusCreated, http.StatusOK}); err != nil {
		return err
	}
	w.acks.add(Ack{Kind: "maven", Name: "com.example.soak:" + artifact + ":" + version, Checks: []Check{
		{Path: base + "/maven-metadata.xml", Contains: "<version>" + version + "</version>"},
		{Path: vdir + ".pom", SHA256: hexSHA256(pom)},
		{Path: vdir + ".jar", SHA256: hexSHA256(jar)},
	}})
	return nil
}

// listings are the UI's list screens, one per format.
var listings = []string{
	`query($ns: String!) { namespace(slug: $ns) { repositories(first: 20) { totalCount edges { node { name format artifactsCount } } } } }`,
	`query($ns: String!, $r: String!) { repository(namespace: $ns, name: $r) { images(first: 20) { edges { node { name tags(first: 5) { edges { node { name } } } } } } } }`,
	`query($ns: String!, $r: String!) { repository(namespace: $ns, name: $r) { npmPackages(first: 20) { edges { node { name distTags { name } } } } } }`,
	`query($ns: String!, $r: String!) { repository(namespace: $ns, name: $r) { mavenPackages(first: 20) { edges { node { groupId artifactId } } } } }`,
}

func (w *worker) graphqlList(ctx context.Context) error {
	i := w.rng.IntN(len(listings))
	vars := map[string]any{"ns": w.l.namespace}
	if i > 0 {
		vars["r"] = []string{"", w.l.oci, w.l.npm, w.l.maven}[i]
	}
	return w.cl.graphql(ctx, listings[i], vars, nil)
}
