package driver

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"gocloud.dev/blob"
)

type fake struct{ serverErr error }

func (fake) Compose(context.Context, *blob.Bucket, *url.URL, Compose) error { return nil }
func (fake) SignGet(func(any) bool, string, string) error                   { return nil }
func (fake) ReplaceOnCopy(func(any) bool, string, map[string]string) bool   { return false }
func (f fake) ServerError(err error) bool                                   { return errors.Is(err, f.serverErr) }

func TestRegistry(t *testing.T) {
	boom := errors.New("boom")
	Register("fake-a", fake{serverErr: boom})
	if Lookup("fake-a") == nil || Lookup("fake-b") != nil {
		t.Fatal("Lookup does not return what was registered, and only that")
	}
	if !ServerError(boom) || ServerError(errors.New("other")) {
		t.Fatal("ServerError does not ask the registered drivers")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of a scheme did not panic")
		}
	}()
	Register("fake-a", fake{})
}
