package gcs

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/googleapi"

	"github.com/artifact-registry/artifact-registry/store/objstore/driver"
)

// Importing the package registers gs://, and only the GCS server's own
// failures are called so.
func TestRegistered(t *testing.T) {
	if driver.Lookup(gcsblob.Scheme) == nil {
		t.Fatal("gs:// has no driver")
	}
	for err, want := range map[error]bool{
		fmt.Errorf("read: %w", &googleapi.Error{Code: http.StatusServiceUnavailable}): true,
		&googleapi.Error{Code: http.StatusNotFound}:                                   false,
		errors.New("plain"): false,
	} {
		if got := driver.ServerError(err); got != want {
			t.Errorf("ServerError(%v) = %v, want %v", err, got, want)
		}
	}
}
