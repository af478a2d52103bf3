package oci

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestCatalogListsImagesWithLiveManifests: an image leaves the catalog when
// its last live manifest goes to the trash (deleted through the API),
// comes back when that manifest is restored, leaves again, and comes back
// when a manifest is pushed to it; an image with a live manifest left stays.
func TestCatalogListsImagesWithLiveManifests(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := context.Background()
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	app := newBenchClient(t, s, "acme/images/app")
	body := testImage(t, app, "app layer")
	wantStatus(t, putManifest(s, t, "acme/images/app", "v1", body, mtOCIManifest), http.StatusCreated)
	other := newBenchClient(t, s, "acme/images/other")
	wantStatus(t, putManifest(s, t, "acme/images/other", "v1", testImage(t, other, "other layer 1"), mtOCIManifest), http.StatusCreated)
	second := testImage(t, other, "other layer 2")
	wantStatus(t, putManifest(s, t, "acme/images/other", "v2", second, mtOCIManifest), http.StatusCreated)

	catalog := func() []string {
		t.Helper()
		var doc struct{ Repositories []string }
		if err := json.Unmarshal([]byte(wantStatus(t, s.do(t, http.MethodGet, "/v2/_catalog?n=100", nil, nil, true), http.StatusOK)), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Repositories
	}
	want := func(step string, names ...string) {
		t.Helper()
		if got := catalog(); !slices.Equal(got, names) {
			t.Fatalf("%s: catalog %v, want %v", step, got, names)
		}
	}
	want("pushed", "acme/images/app", "acme/images/other")

	// Deleting one of two manifests keeps the image listed.
	wantStatus(t, s.do(t, http.MethodDelete, "/v2/acme/images/other/manifests/"+sha(second), nil, nil, true), http.StatusAccepted)
	want("other lost one of two manifests", "acme/images/app", "acme/images/other")

	// The last one: the image leaves the catalog, not its neighbours.
	wantStatus(t, s.do(t, http.MethodDelete, "/v2/acme/images/app/manifests/"+sha(body), nil, nil, true), http.StatusAccepted)
	want("app's last manifest deleted", "acme/images/other")

	// Restored from the trash: listed again.
	cs := container.New(s.Store)
	ref := container.ImageRef{Namespace: "acme", Repository: "images", Image: "app"}
	if _, err := cs.RestoreManifest(ctx, ref, sha(body)); err != nil {
		t.Fatal(err)
	}
	want("manifest restored", "acme/images/app", "acme/images/other")

	// Deleted again, then pushed again: listed again.
	wantStatus(t, s.do(t, http.MethodDelete, "/v2/acme/images/app/manifests/"+sha(body), nil, nil, true), http.StatusAccepted)
	want("deleted again", "acme/images/other")
	wantStatus(t, putManifest(s, t, "acme/images/app", "v2", testImage(t, app, "app layer 2"), mtOCIManifest), http.StatusCreated)
	want("pushed again", "acme/images/app", "acme/images/other")
}
