package soak_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/soak"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
)

func TestSoak(t *testing.T) {
	d := time.Minute
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("SOAK_DURATION: %v", err)
		}
	}
	e := testserver.New(t, testserver.Options{})
	rep, err := soak.Run(context.Background(), soak.Config{BaseURL: e.URL, AdminToken: testserver.AdminToken, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Table())
}
