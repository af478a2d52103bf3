package ocitools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// NewBucket creates a bucket of its own on the server for the test (after
// SetEnv) and returns its name and the gocloud URL that opens it through
// endpoint (the server's own Endpoint when "", else a proxy in front of
// it).
func (s *S3Server) NewBucket(t testing.TB, endpoint string) (url, name string) {
	t.Helper()
	s.SetEnv(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name = "t-" + hex.EncodeToString(b[:])
	if err := s.createBucket(context.Background(), name); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	if endpoint == "" {
		endpoint = s.Endpoint
	}
	return "s3://" + name + "?endpoint=" + endpoint + "&region=us-east-1&use_path_style=true", name
}

// NewBucket creates bucket name on the server for the test (after
// SetEnv) and returns the gocloud URL that opens it. The bucket is made
// through the JSON API by hand, so that the test binaries linking this
// package do without the GCS client library.
func (s *GCSServer) NewBucket(t testing.TB, name string) string {
	t.Helper()
	s.SetEnv(t)
	body, err := json.Marshal(map[string]string{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+s.Host+"/storage/v1/b?project=test-project", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		t.Fatalf("create bucket: %s: %s", resp.Status, msg)
	}
	return "gs://" + name
}
