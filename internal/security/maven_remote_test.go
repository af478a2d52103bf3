package security

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// TestMavenRemoteRouteMatrix runs the Maven route rules against Maven
// proxies of every visibility (and one covered by the restricted token),
// whose upstream is the server's own public hosted Maven repository: an
// allowed read gets the upstream's file through the proxy, an allowed
// deploy is refused 405 (never 401/403), and everyone else gets 401/403
// exactly as on a hosted repository. Kept apart from the shared world's
// targets, whose other matrices assume hosted Maven content.
func TestMavenRemoteRouteMatrix(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	upstream := w.URL + "/maven/" + testserver.Home + "/mvn-public"
	var remotes []target
	for _, v := range enum.VisibilityValues() {
		for _, l := range []bool{false, true} {
			if l && v != enum.VisibilityPrivate {
				continue
			}
			name := "mvn-remote-" + strings.ToLower(v.String())
			if l {
				// The restricted token lists repositories by name when it
				// is minted; this one is not in its list, so it stays
				// refused to it like any unlisted repository.
				name += "-unlisted"
			}
			child, err := maven.New(w.Store).NewRemote(maven.RemoteInput{URL: upstream})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Store.CreateRepository(w.Ctx, store.NewRepository{Namespace: testserver.Home, Name: name,
				Format: enum.FormatMaven, Kind: enum.KindRemote, Visibility: v, Child: child}); err != nil {
				t.Fatal(err)
			}
			remotes = append(remotes, target{format: enum.FormatMaven, vis: v, repo: name, remote: true})
		}
	}
	cells := 0
	for i, o := range routeRules["ANY /maven/"] {
		for _, c := range w.callers {
			for _, tg := range remotes {
				ok := allowed(o.need, c.name, &tg)
				cell := fmt.Sprintf("maven #%d %s as %s on %s", i, o.method, c.name, tg.repo)
				w.check(t, cell, o.method, o, c, tg.repo, ok)
				cells++
				if !ok || c.name == "garbage" {
					continue
				}
				authz := ""
				if c.secret != "" {
					authz = testserver.Basic(c.secret)
				}
				r := w.Do(o.method, o.path(w, tg.repo), authz, o.body, o.hdr...)
				switch o.method {
				case http.MethodPut:
					if r.Status != http.StatusMethodNotAllowed {
						t.Errorf("%s: %d %.200s, want the deploy refused 405", cell, r.Status, r.Body)
					}
				default:
					if r.Status != http.StatusOK {
						t.Errorf("%s: %d %.200s, want the upstream's file", cell, r.Status, r.Body)
					}
				}
			}
		}
	}
	t.Logf("%d Maven proxy route cells", cells)
}
