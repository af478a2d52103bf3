package security

import (
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// need is what a rule asks of the caller.
type need int

const (
	// anyone: served to every caller; what it returns is filtered or
	// carries nothing of a namespace.
	anyone need = iota
	// credential: any valid credential (anonymous callers get a challenge).
	credential
	// pull, push and del: READ (anonymous on PUBLIC, any token of the
	// instance on INTERNAL), WRITE and DELETE on the repository.
	pull
	push
	del
	// nsAdmin: an ADMIN token of the namespace.
	nsAdmin
	// super: the super-user (admin token) only.
	super
	// perField: the route serves GraphQL, whose fields have their own rules.
	perField
)

func (n need) String() string {
	return [...]string{"anyone", "credential", "pull", "push", "delete", "namespace admin", "super-user", "per field"}[n]
}

// caller is who sends a request.
type caller struct {
	name   string
	secret string // "" anonymous
}

// target is a repository of the home namespace the matrix aims at.
type target struct {
	format enum.Format
	vis    enum.Visibility
	listed bool // the restricted token covers it
	repo   string
	// remote: a pull-through cache (its upstream is the server itself, so
	// allowed pulls get the upstream's answer; pushes and deletes are
	// refused 405 to those who have the scope, 401/403 to the others). An
	// npm remote's upstream is the public hosted npm repository.
	remote bool
}

// world is the server with its callers and targets.
type world struct {
	*testserver.Env
	callers []caller
	targets []target
	digest  map[string]string // OCI repository → manifest digest of img:v1
}

const (
	cfgBlob = `{"architecture":"amd64","os":"linux"}`
)

// newWorld creates, in the home namespace, a repository of every format
// and visibility (and a second one covered by the restricted token), each
// with content, and tokens of every scope in both namespaces.
func newWorld(t *testing.T) *world {
	e := testserver.New(t, testserver.Options{})
	w := &world{Env: e, digest: map[string]string{}}
	var listed []string
	for _, f := range []enum.Format{enum.FormatOCI, enum.FormatNpm, enum.FormatMaven} {
		for _, v := range enum.VisibilityValues() {
			for _, l := range []bool{false, true} {
				name := map[enum.Format]string{enum.FormatOCI: "oci", enum.FormatNpm: "npm", enum.FormatMaven: "mvn"}[f] + "-" + strings.ToLower(v.String())
				if l {
					name += "-listed"
					listed = append(listed, name)
				}
				e.Repo(name, f, v)
				switch f {
				case enum.FormatOCI:
					w.digest[name] = e.PushImage(testserver.Home+"/"+name+"/img", "v1")
				case enum.FormatNpm:
					e.NpmPublish(name, "pkg", "1.0.0")
				case enum.FormatMaven:
					e.MavenDeploy(name, "1.0")
				}
				w.targets = append(w.targets, target{format: f, vis: v, listed: l, repo: name})
			}
		}
	}
	for _, v := range enum.VisibilityValues() {
		for _, l := range []bool{false, true} {
			if l && v != enum.VisibilityPrivate {
				continue
			}
			name := "oci-remote-" + strings.ToLower(v.String())
			if l {
				name += "-listed"
				listed = append(listed, name)
			}
			e.Remote(name, e.URL, v)
			w.digest[name] = w.digest["oci-"+strings.ToLower(v.String())]
			w.targets = append(w.targets, target{format: enum.FormatOCI, vis: v, listed: l, repo: name, remote: true})
			// An npm remote of the public hosted npm repository: its
			// packument and tarball are what an allowed read gets.
			name = "npm-remote-" + strings.ToLower(v.String())
			if l {
				name += "-listed"
				listed = append(listed, name)
			}
			e.NpmRemote(name, e.URL+"/npm/"+testserver.Home+"/npm-public/", v)
			w.targets = append(w.targets, target{format: enum.FormatNpm, vis: v, listed: l, repo: name, remote: true})
		}
	}
	sc := func(s ...enum.TokenScope) []enum.TokenScope { return s }
	mint := func(ns, name string, spec auth.TokenSpec) string { s, _ := e.Mint(ns, name, spec); return s }
	w.callers = []caller{
		{"anonymous", ""},
		{"garbage", "arp_not-a-token"},
		{"super", testserver.AdminToken},
		{"read", mint(testserver.Home, "read", auth.TokenSpec{Scopes: sc(enum.TokenScopeRead)})},
		{"write", mint(testserver.Home, "write", auth.TokenSpec{Scopes: sc(enum.TokenScopeWrite)})},
		{"delete", mint(testserver.Home, "delete", auth.TokenSpec{Scopes: sc(enum.TokenScopeDelete)})},
		{"nsadmin", mint(testserver.Home, "nsadmin", auth.TokenSpec{Scopes: sc(enum.TokenScopeAdmin)})},
		{"other", mint(testserver.Other, "other", auth.TokenSpec{Scopes: sc(enum.TokenScopeAdmin)})},
		{"restricted", mint(testserver.Home, "restricted", auth.TokenSpec{Scopes: sc(enum.TokenScopeWrite), Repositories: listed})},
	}
	return w
}

// allowed is the independent statement of the access rules the matrix
// checks every surface against. t is nil for rules without a repository.
func allowed(n need, who string, t *target) bool {
	switch n {
	case anyone, perField:
		return true
	case credential:
		return who != "anonymous" && who != "garbage"
	case super:
		return who == "super"
	}
	switch who {
	case "super":
		return true
	case "anonymous":
		return n == pull && t != nil && t.vis == enum.VisibilityPublic
	case "garbage":
		return false // a bad credential never degrades to anonymous
	case "other": // ADMIN of the other namespace
		return n == pull && t != nil && t.vis != enum.VisibilityPrivate
	case "restricted": // WRITE of home, limited to the listed repositories
		if t == nil {
			return false
		}
		return (n == pull && (t.vis == enum.VisibilityPublic || t.listed)) || (n == push && t.listed)
	}
	scopes := map[string][]need{"read": {pull}, "write": {pull, push}, "delete": {pull, del}, "nsadmin": {pull, push, del, nsAdmin}}[who]
	for _, s := range scopes {
		if s == n {
			return true
		}
	}
	return false
}

func formatOf(s surface) enum.Format {
	switch s {
	case ociS:
		return enum.FormatOCI
	case npmS:
		return enum.FormatNpm
	case mavenS:
		return enum.FormatMaven
	}
	return enum.FormatDocker // never a target's format
}

func authSpec(s ...enum.TokenScope) auth.TokenSpec { return auth.TokenSpec{Scopes: s} }
