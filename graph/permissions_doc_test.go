package graph

import (
	"strings"
	"testing"
)

// Permission phrases of the schema's conventions (schema.graphqls).
const (
	permAdminToken = "admin token only"
	permNamespace  = "Needs ADMIN on the namespace"
	permRepoAdmin  = "Needs ADMIN on the repository"
	permRepoDelete = "Needs DELETE on the repository"
	permRepoWrite  = "Needs WRITE on the repository"
)

const zeroID = `"00000000-0000-7000-8000-000000000000"`

// mutationPermissions is, for every mutation, the phrase its description
// must carry and a document that reaches its permission check in
// namespace "perm" (repositories "img", OCI, and "js", npm).
var mutationPermissions = map[string]struct{ perm, doc string }{
	"createNamespace":                {permAdminToken, `createNamespace(input: {slug: "perm-new"}) { namespace { id } }`},
	"deleteNamespace":                {permAdminToken, `deleteNamespace(slug: "perm") { namespace { id } }`},
	"restoreNamespace":               {permAdminToken, `restoreNamespace(slug: "perm") { namespace { id } }`},
	"setNamespaceCondition":          {permAdminToken, `setNamespaceCondition(slug: "perm", condition: BLOCKED, active: false) { namespace { id } }`},
	"reconcileNamespaceCounters":     {permNamespace, `reconcileNamespaceCounters(input: {namespace: "perm"}) { corrections }`},
	"createRepository":               {permNamespace, `createRepository(input: {namespace: "perm", name: "new", format: OCI}) { repository { id } }`},
	"updateRepository":               {permRepoAdmin, `updateRepository(input: {namespace: "perm", name: "img", description: "x"}) { repository { id } }`},
	"deleteRepository":               {permRepoAdmin, `deleteRepository(input: {namespace: "perm", name: "img"}) { repository { id } }`},
	"restoreRepository":              {permRepoAdmin, `restoreRepository(input: {namespace: "perm", name: "img"}) { repository { id } }`},
	"purgeRepository":                {permRepoAdmin, `purgeRepository(input: {namespace: "perm", name: "img"}) { id }`},
	"setTrashRetention":              {permNamespace, `setTrashRetention(input: {namespace: "perm", days: 7}) { namespace { id } }`},
	"purgeTrash":                     {permNamespace, `purgeTrash(input: {namespace: "perm", ids: [` + zeroID + `]}) { purgedCount }`},
	"emptyTrash":                     {permNamespace, `emptyTrash(input: {namespace: "perm"}) { purgedCount }`},
	"createRepositoryCollection":     {permNamespace, `createRepositoryCollection(input: {namespace: "perm", name: "c"}) { collection { id } }`},
	"linkRepositoryToCollection":     {permNamespace, `linkRepositoryToCollection(input: {namespace: "perm", repository: "img", collection: "c"}) { repository { id } }`},
	"unlinkRepositoryFromCollection": {permNamespace, `unlinkRepositoryFromCollection(input: {namespace: "perm", repository: "img", collection: "c"}) { repository { id } }`},
	"deleteContainerTag":             {permRepoDelete, `deleteContainerTag(input: {namespace: "perm", repository: "img", image: "app", tag: "none"}) { tag }`},
	"deleteContainerManifest":        {permRepoDelete, `deleteContainerManifest(input: {namespace: "perm", repository: "img", image: "app", digest: "sha256:` + strings.Repeat("0", 64) + `"}) { manifest { id } }`},
	"restoreContainerManifest":       {permRepoDelete, `restoreContainerManifest(input: {namespace: "perm", repository: "img", image: "app", digest: "sha256:` + strings.Repeat("0", 64) + `"}) { manifest { id } }`},
	"deleteNpmVersion":               {permNamespace, `deleteNpmVersion(input: {namespace: "perm", id: ` + zeroID + `}) { version { id } }`},
	"restoreNpmVersion":              {permNamespace, `restoreNpmVersion(input: {namespace: "perm", id: ` + zeroID + `}) { version { id } }`},
	"deleteNpmPackage":               {permNamespace, `deleteNpmPackage(input: {namespace: "perm", id: ` + zeroID + `}) { package { id } }`},
	"restoreNpmPackage":              {permNamespace, `restoreNpmPackage(input: {namespace: "perm", id: ` + zeroID + `}) { package { id } }`},
	"setNpmDistTag":                  {permRepoWrite, `setNpmDistTag(input: {namespace: "perm", repository: "js", package: "none", tag: "beta", version: "1.0.0"}) { package { id } }`},
	"removeNpmDistTag":               {permRepoWrite, `removeNpmDistTag(input: {namespace: "perm", repository: "js", package: "none", tag: "beta"}) { package { id } }`},
	"deleteMavenVersion":             {permNamespace, `deleteMavenVersion(input: {namespace: "perm", id: ` + zeroID + `}) { version { id } }`},
	"restoreMavenVersion":            {permNamespace, `restoreMavenVersion(input: {namespace: "perm", id: ` + zeroID + `}) { version { id } }`},
	"deleteMavenPackage":             {permNamespace, `deleteMavenPackage(input: {namespace: "perm", id: ` + zeroID + `}) { package { id } }`},
	"restoreMavenPackage":            {permNamespace, `restoreMavenPackage(input: {namespace: "perm", id: ` + zeroID + `}) { package { id } }`},
	"setLifecyclePolicy":             {permNamespace, `setLifecyclePolicy(input: {namespace: "perm", enabled: false, rules: []}) { policy { id } }`},
	"runLifecyclePolicy":             {permNamespace, `runLifecyclePolicy(input: {namespace: "perm"}) { deletedCount }`},
	"createAccessToken":              {permNamespace, `createAccessToken(input: {namespace: "perm", name: "new", scopes: [READ]}) { secret }`},
	"revokeAccessToken":              {permNamespace, `revokeAccessToken(input: {namespace: "perm", id: ` + zeroID + `}) { token { id } }`},
	"requeueGcCandidate":             {permAdminToken, `requeueGcCandidate(input: {namespace: "perm", digest: "sha256:` + strings.Repeat("0", 64) + `"}) { candidate { digest } }`},
	"setGarbageCollection":           {permAdminToken, `setGarbageCollection(enabled: true) { garbageCollection { enabled } }`},
	"prioritizeLegacyRepository":     {permAdminToken, `prioritizeLegacyRepository(id: ` + zeroID + `, priority: 1) { id }`},
	"skipLegacyRepository":           {permAdminToken, `skipLegacyRepository(id: ` + zeroID + `) { id }`},
	"retryLegacyRepository":          {permAdminToken, `retryLegacyRepository(id: ` + zeroID + `) { id }`},
	"pauseLegacyMigration":           {permAdminToken, `pauseLegacyMigration { paused }`},
	"resumeLegacyMigration":          {permAdminToken, `resumeLegacyMigration { paused }`},
	"setLegacyMigrationControls":     {permAdminToken, `setLegacyMigrationControls(input: {concurrency: 2}) { concurrency }`},
	"invalidateRemoteTag":            {permRepoAdmin, `invalidateRemoteTag(input: {namespace: "perm", repository: "img", image: "app", tag: "none"}) { tag }`},
	"invalidateRemoteMavenMetadata":  {permRepoAdmin, `invalidateRemoteMavenMetadata(input: {namespace: "perm", repository: "img"}) { invalidatedCount }`},
	"evictRemoteImage":               {permRepoAdmin, `evictRemoteImage(input: {namespace: "perm", repository: "img", image: "app"}) { image }`},
	"invalidateRemoteMetadata":       {permRepoAdmin, `invalidateRemoteMetadata(input: {namespace: "perm", repository: "img", package: "none"}) { invalidatedCount }`},
}

// TestMutationDocsStatePermissions: every mutation's description states
// the permission it needs, and the resolver enforces exactly that: a token
// just below it is FORBIDDEN, and (where it can be tried without changing
// anything) a token that has it gets past the check.
func TestMutationDocsStatePermissions(t *testing.T) {
	t.Parallel()
	es := NewExecutableSchema(Config{Resolvers: &Resolver{}})
	for _, f := range es.Schema().Mutation.Fields {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		want, ok := mutationPermissions[f.Name]
		if !ok {
			t.Errorf("mutation %s is not in mutationPermissions: document and test its permission", f.Name)
			continue
		}
		if !strings.Contains(strings.Join(strings.Fields(f.Description), " "), want.perm) &&
			!strings.Contains(strings.ToLower(f.Description), want.perm) {
			t.Errorf("%s: the description does not say %q: %q", f.Name, want.perm, f.Description)
		}
	}
	if t.Failed() {
		return
	}

	a := newTestAPI(t)
	a.createNamespace("perm")
	a.createRepository("perm", "img", "OCI", "PRIVATE")
	a.createRepository("perm", "js", "NPM", "PRIVATE")
	tok := func(name string, scopes []string, repos []string) string {
		return a.createToken(adminToken, "perm", name, scopes, repos).Secret
	}
	admin := tok("admin", []string{"ADMIN"}, nil)
	restrictedAdmin := tok("admin-img", []string{"ADMIN"}, []string{"img", "js"})
	writeDelete := tok("write-delete", []string{"WRITE", "DELETE"}, nil)
	write := tok("write", []string{"WRITE"}, nil)
	readDelete := tok("read-delete", []string{"READ", "DELETE"}, nil)
	del := tok("delete", []string{"DELETE"}, nil)

	refused := map[string][]string{
		permAdminToken: {admin},
		permNamespace:  {restrictedAdmin, writeDelete},
		permRepoAdmin:  {writeDelete},
		permRepoDelete: {write},
		permRepoWrite:  {readDelete},
	}
	allowed := map[string]string{permRepoDelete: del, permRepoWrite: write}
	for name, m := range mutationPermissions {
		for _, secret := range refused[m.perm] {
			a.expectError(secret, "mutation { "+m.doc+" }", nil, CodeForbidden)
		}
		if secret, ok := allowed[m.perm]; ok {
			if r := a.post(secret, "mutation { "+m.doc+" }", nil); r.code() == CodeForbidden || r.code() == CodeUnauthenticated {
				t.Errorf("%s with a token that has %q: %+v", name, m.perm, r.Errors)
			}
		}
	}
}
