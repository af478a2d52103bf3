package ocitools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"cloud.google.com/go/storage"
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
// SetEnv) and returns the gocloud URL that opens it.
func (s *GCSServer) NewBucket(t testing.TB, name string) string {
	t.Helper()
	s.SetEnv(t)
	ctx := context.Background()
	client, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := client.Bucket(name).Create(ctx, "test-project", nil); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return "gs://" + name
}
