package accesscontrol

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestConcurrentUseAndRevocation: many clients use one token on the three
// protocols while it is revoked. Before the revocation returns, requests
// succeed (or, in flight across it, are refused); every request sent after
// it returns is a 401, on every protocol, with no other status ever. Run
// with -race: the cache, the last-used buffer and the principals are
// shared by all requests.
func TestConcurrentUseAndRevocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.repo("img", enum.FormatOCI, enum.VisibilityPrivate)
	e.repo("js", enum.FormatNpm, enum.VisibilityPrivate)
	e.repo("jar", enum.FormatMaven, enum.VisibilityPrivate)
	e.pushImage("acme/img/app", "v1")
	e.npmPublish("js", "pkg", "1.0.0")
	e.mavenDeploy("jar", "1.0")
	secret, tok := e.mint("acme", "shared", auth.TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	probes := []struct{ path, authz string }{
		{"/v2/acme/img/app/manifests/v1", basic(secret)},
		{"/npm/acme/js/pkg", bearer(secret)},
		{mavenPom("jar", "1.0"), basic(secret)},
	}

	const workers, perWorker = 6, 40
	var (
		revoked                          atomic.Bool
		okBefore, refusedAfter, finished atomic.Int64
		wg                               sync.WaitGroup
		errs                             = make(chan string, workers*perWorker)
	)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer finished.Add(1)
			<-start
			for i := range perWorker {
				p := probes[(w+i)%len(probes)]
				after := revoked.Load() // the revocation had returned before this request was sent
				r := e.do(http.MethodGet, p.path, p.authz, nil)
				switch {
				case after && r.status != http.StatusUnauthorized:
					errs <- p.path + ": " + http.StatusText(r.status) + " after the revocation: " + r.body
				case r.status == http.StatusOK:
					okBefore.Add(1)
				case r.status == http.StatusUnauthorized:
					refusedAfter.Add(1)
				default:
					errs <- p.path + ": unexpected " + http.StatusText(r.status) + ": " + r.body
				}
			}
		}()
	}
	close(start)
	// Let some requests through, then revoke while the others run.
	for okBefore.Load() < workers*2 && finished.Load() < workers {
		time.Sleep(time.Millisecond)
	}
	if _, err := e.authn.RevokeToken(e.ctx, auth.AdminPrincipal(""), auth.NamespaceOf(e.ns["acme"]), tok.ID); err != nil {
		t.Fatal(err)
	}
	revoked.Store(true)
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
	if okBefore.Load() == 0 || refusedAfter.Load() == 0 {
		t.Fatalf("the test did not race: %d accepted, %d refused", okBefore.Load(), refusedAfter.Load())
	}
	// The buffered last_used_at of the accepted requests reaches the row.
	if err := e.authn.Flush(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM access_tokens WHERE name = 'shared' AND last_used_at IS NOT NULL AND revoked_at IS NOT NULL`); n != 1 {
		t.Fatalf("last_used_at not flushed for the shared token")
	}
	t.Logf("%d requests accepted before the revocation, %d refused", okBefore.Load(), refusedAfter.Load())
}
