package objstore

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"

	"github.com/artifact-registry/artifact-registry/store/objstore/driver"
)

// The signed GET URL of a GCS bucket carries the forced response headers
// in its signed query (signing is local: no server is contacted).
func TestSignedGetURLGCS(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	b, err := gcsblob.OpenBucket(context.Background(), gcp.NewAnonymousHTTPClient(http.DefaultTransport), "bucket",
		&gcsblob.Options{GoogleAccessID: "signer@example.iam.gserviceaccount.com", PrivateKey: pemKey})
	if err != nil {
		t.Fatal(err)
	}
	st := gcsStore(b)
	defer st.Close()
	if err := st.CanSign(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := st.SignedGetURL(context.Background(), "ns/blobs/sha256/ab/abc", Presign{
		Expiry: 5 * time.Minute, ContentType: "application/octet-stream", Disposition: `attachment; filename="a.tgz"`})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("response-content-type") != "application/octet-stream" || q.Get("response-content-disposition") != `attachment; filename="a.tgz"` ||
		q.Get("X-Goog-Signature") == "" || (q.Get("X-Goog-Expires") != "300" && q.Get("X-Goog-Expires") != "299") {
		t.Fatalf("signed URL %s lacks the signed response headers or expiry", raw)
	}
}

// Buckets without a signer refuse: file and memory buckets have no URL a
// client could follow, and a GCS bucket without a private key cannot sign.
func TestCanSignRefuses(t *testing.T) {
	for name, st := range map[string]*Store{"mem": NewMem()} {
		if err := st.CanSign(context.Background()); !errors.Is(err, ErrNoSigner) {
			t.Errorf("%s: CanSign = %v, want ErrNoSigner", name, err)
		}
	}
	file, err := Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := file.CanSign(context.Background()); !errors.Is(err, ErrNoSigner) {
		t.Errorf("file: CanSign = %v, want ErrNoSigner", err)
	}
	b, err := gcsblob.OpenBucket(context.Background(), gcp.NewAnonymousHTTPClient(http.DefaultTransport), "bucket", nil)
	if err != nil {
		t.Fatal(err)
	}
	gcs := gcsStore(b)
	defer gcs.Close()
	if err := gcs.CanSign(context.Background()); !errors.Is(err, ErrNoSigner) {
		t.Errorf("gcs without a key: CanSign = %v, want ErrNoSigner", err)
	}
}

// gcsStore is what Open makes of gs://bucket, over b.
func gcsStore(b *blob.Bucket) *Store {
	return &Store{bucket: b, driver: driver.Lookup(gcsblob.Scheme), url: &url.URL{Scheme: gcsblob.Scheme, Host: "bucket"}}
}
