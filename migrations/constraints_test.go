package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// base is the committed fixture every constraint case starts from: two
// namespaces A and B with a default collection each, A's active key, and A's
// repositories of each kind with their format child rows.
type base struct {
	nsA, nsB                   uuid.UUID
	collA, collB               uuid.UUID
	keyA                       uuid.UUID
	repoA, repoA2, repoB       uuid.UUID // docker hosted
	remoteRepoA, virtualRepoA  uuid.UUID // docker remote, docker virtual
	mavenVirtualRepoA          uuid.UUID
	npmVirtualRepoA            uuid.UUID
	crA, cvA, mvA, nvA, crB    uuid.UUID // container_repositories / *_virtual_repositories ids
	imageA                     uuid.UUID // container_images in crA
	blobA                      []byte    // blob sha256 in A
	attachA                    int64     // an attachment of blobA
	manifestA                  uuid.UUID // container_manifests in imageA
	npmRemoteRepoA, npmRepoIDA uuid.UUID // repositories ids (npm remote, npm hosted)
}

func newBase(t *testing.T, q db) *base {
	f := newFixture(t, q)
	b := &base{nsA: f.namespace(), nsB: f.namespace()}
	b.collA = f.collection(b.nsA, "default", true)
	b.collB = f.collection(b.nsB, "default", true)
	b.keyA = f.key(b.nsA, 1)
	b.repoA = f.repository(b.nsA, 0, 0)
	b.repoA2 = f.repository(b.nsA, 0, 0)
	b.repoB = f.repository(b.nsB, 0, 0)
	b.remoteRepoA = f.repository(b.nsA, 0, 2)
	b.virtualRepoA = f.repository(b.nsA, 0, 1)
	b.mavenVirtualRepoA = f.repository(b.nsA, 1, 1)
	b.npmVirtualRepoA = f.repository(b.nsA, 2, 1)
	b.npmRemoteRepoA = f.repository(b.nsA, 2, 2)
	b.npmRepoIDA = f.repository(b.nsA, 2, 0)
	b.crA = f.child("container_repositories", b.nsA, b.repoA)
	b.crB = f.child("container_repositories", b.nsB, b.repoB)
	b.cvA = f.child("container_virtual_repositories", b.nsA, b.virtualRepoA)
	b.mvA = f.child("maven_virtual_repositories", b.nsA, b.mavenVirtualRepoA)
	b.nvA = f.child("npm_virtual_repositories", b.nsA, b.npmVirtualRepoA)
	b.imageA = v7(t)
	f.must("container_images", row{"id", b.imageA, "namespace_id", b.nsA, "container_repository_id", b.crA, "name", "app"})
	b.blobA = digest("blob-a")
	b.attachA = f.blob(b.nsA, b.blobA, 100)
	b.manifestA = v7(t)
	f.must("container_manifests", row{"id", b.manifestA, "namespace_id", b.nsA, "container_image_id", b.imageA,
		"digest", b.blobA, "media_type", "application/vnd.oci.image.manifest.v1+json",
		"blob_storage_attachment_id", b.attachA, "blob_sha256", b.blobA, "size", int64(100)})
	return b
}

// constraintCase runs stmts in one rolled-back transaction on top of the base
// fixture; the last statement must fail with wantCode ("" = all succeed).
type constraintCase struct {
	name     string
	run      func(t *testing.T, ctx context.Context, tx pgx.Tx, b *base) error
	wantCode string
}

// ins returns a case body inserting one row.
func ins(table string, mk func(t *testing.T, b *base) row) func(*testing.T, context.Context, pgx.Tx, *base) error {
	return func(t *testing.T, ctx context.Context, tx pgx.Tx, b *base) error {
		return insert(ctx, tx, table, mk(t, b))
	}
}

// exec returns a case body running one statement.
func exec(sql string, args func(b *base) []any) func(*testing.T, context.Context, pgx.Tx, *base) error {
	return func(t *testing.T, ctx context.Context, tx pgx.Tx, b *base) error {
		var a []any
		if args != nil {
			a = args(b)
		}
		_, err := tx.Exec(ctx, sql, a...)
		return err
	}
}

// seq runs steps in order; only the last may fail.
func seq(steps ...func(*testing.T, context.Context, pgx.Tx, *base) error) func(*testing.T, context.Context, pgx.Tx, *base) error {
	return func(t *testing.T, ctx context.Context, tx pgx.Tx, b *base) error {
		for i, s := range steps {
			err := s(t, ctx, tx, b)
			if i < len(steps)-1 && err != nil {
				t.Fatalf("setup step %d: %v", i, err)
			}
			if i == len(steps)-1 {
				return err
			}
		}
		return nil
	}
}

func namespaceRow(id uuid.UUID) row {
	return row{"id", id, "slug", "slug-" + id.String(), "platform", "gitlab", "entity_type", "organization",
		"entity_id", id.String(), "billing_entity_type", "organization", "billing_entity_id", id.String()}
}

func remoteRow(t *testing.T, ns, repo uuid.UUID, extra ...any) row {
	r := row{"id", v7(t), "namespace_id", ns, "repository_id", repo, "url", "https://upstream.example"}
	return append(r, extra...)
}

func upstreamRow(table string, t *testing.T, b *base, upstream uuid.UUID, position int) row {
	switch {
	case strings.HasPrefix(table, "container"):
		return row{"id", v7(t), "namespace_id", b.nsA, "container_virtual_repository_id", b.cvA,
			"upstream_repository_id", upstream, "position", position}
	case strings.HasPrefix(table, "maven"):
		return row{"id", v7(t), "namespace_id", b.nsA, "maven_virtual_repository_id", b.mvA,
			"upstream_repository_id", upstream, "position", position}
	default:
		return row{"id", v7(t), "namespace_id", b.nsA, "npm_virtual_repository_id", b.nvA,
			"upstream_repository_id", upstream, "position", position}
	}
}

// ruleCase inserts an upstream and then a rule with the given values.
func ruleCase(format string, ruleType, target int16, pattern string) func(*testing.T, context.Context, pgx.Tx, *base) error {
	return func(t *testing.T, ctx context.Context, tx pgx.Tx, b *base) error {
		up := upstreamRow(format, t, b, b.repoA, 1)
		if err := insert(ctx, tx, format+"_virtual_repository_upstreams", up); err != nil {
			t.Fatalf("insert upstream: %v", err)
		}
		return insert(ctx, tx, format+"_virtual_upstream_rules", row{"id", v7(t), "namespace_id", b.nsA,
			format + "_virtual_repository_upstream_id", up[1], "rule_type", ruleType, "pattern", pattern,
			"target_field", target})
	}
}

func keyRow(t *testing.T, ns uuid.UUID, version int, wrapped []byte, active bool, shredded bool) row {
	r := row{"id", v7(t), "namespace_id", ns, "version", version, "wrapped_key", wrapped,
		"root_key_uri", "kms://root/1", "active", active}
	if shredded {
		r = append(r, "shredded_at", "2026-09-01T00:00:00Z")
	}
	return r
}

func TestConstraints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	b := newBase(t, pool)

	v4 := uuid.New() // version 4: what a stray uuid.New() would write
	long := strings.Repeat("x", 256)
	multibyte255 := strings.Repeat("é", 255) // 510 bytes, 255 characters
	cred := []any{"wrapped_dek", []byte("dek"), "ns_key_id", nil, "ns_key_version", 1,
		"encrypted_username", []byte("u"), "encrypted_password", []byte("p")}
	withKey := func(b *base, kv []any) []any {
		out := append([]any(nil), kv...)
		for i := 0; i < len(out); i += 2 {
			if out[i] == "ns_key_id" {
				out[i+1] = b.keyA
			}
		}
		return out
	}

	cases := []constraintCase{
		// UUIDv7 version CHECK.
		{"namespace v7 id accepted", ins("namespaces", func(t *testing.T, b *base) row { return namespaceRow(v7(t)) }), ""},
		{"namespace v4 id rejected", ins("namespaces", func(t *testing.T, b *base) row { return namespaceRow(v4) }), codeCheck},
		{"namespace nil id rejected", ins("namespaces", func(t *testing.T, b *base) row { return namespaceRow(uuid.Nil) }), codeCheck},
		{"repository v4 id rejected", ins("repositories", func(t *testing.T, b *base) row {
			return row{"id", v4, "namespace_id", b.nsA, "name", "v4", "format", 0, "kind", 0, "visibility", 0}
		}), codeCheck},
		{"container image v4 id rejected", ins("container_images", func(t *testing.T, b *base) row {
			return row{"id", v4, "namespace_id", b.nsA, "container_repository_id", b.crA, "name", "v4"}
		}), codeCheck},
		{"access token v4 id rejected", ins("access_tokens", func(t *testing.T, b *base) row {
			return row{"id", v4, "namespace_id", b.nsA, "name", "t", "token_sha256", digest("t"), "scopes", []int16{0}}
		}), codeCheck},

		// Slug immutability trigger and anchor uniqueness.
		{"slug update rejected", exec(`UPDATE namespaces SET slug = 'renamed' WHERE id = $1`,
			func(b *base) []any { return []any{b.nsA} }), codeCheck},
		{"slug rewrite to same value accepted", exec(`UPDATE namespaces SET slug = slug, suspended_at = now() WHERE id = $1`,
			func(b *base) []any { return []any{b.nsA} }), ""},
		{"duplicate slug rejected", exec(`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
			SELECT $1, slug, 'p', 'e', 'other', 'b', 'b' FROM namespaces WHERE id = $2`,
			func(b *base) []any { return []any{mustV7(), b.nsA} }), codeUnique},
		{"duplicate unpurged anchor rejected", exec(`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
			SELECT $1, 'other-slug', platform, entity_type, entity_id, 'b', 'b' FROM namespaces WHERE id = $2`,
			func(b *base) []any { return []any{mustV7(), b.nsA} }), codeUnique},
		{"anchor reusable after purge", seq(
			exec(`UPDATE namespaces SET deleted_at = now(), purged_at = now() WHERE id = $1`, func(b *base) []any { return []any{b.nsA} }),
			exec(`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
				SELECT $1, 'reonboarded', platform, entity_type, entity_id, 'b', 'b' FROM namespaces WHERE id = $2`,
				func(b *base) []any { return []any{mustV7(), b.nsA} })), ""},
		{"delivery mode 2 rejected", exec(`UPDATE namespaces SET delivery_mode_override = 2 WHERE id = $1`,
			func(b *base) []any { return []any{b.nsA} }), codeCheck},
		{"256-char slug rejected", ins("namespaces", func(t *testing.T, b *base) row {
			r := namespaceRow(v7(t))
			r[3] = long
			return r
		}), codeCheck},

		// Composite FKs keep references inside one namespace.
		{"collection link across namespaces rejected", ins("repository_collection_repositories", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "repository_collection_id", b.collB, "repository_id", b.repoA}
		}), codeForeignKey},
		{"collection link in namespace accepted", ins("repository_collection_repositories", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "repository_collection_id", b.collA, "repository_id", b.repoA}
		}), ""},
		{"format child of another namespace's repository rejected", ins("container_repositories", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "repository_id", b.repoB}
		}), codeForeignKey},
		{"upstream in another namespace rejected", ins("container_virtual_repository_upstreams", func(t *testing.T, b *base) row {
			return upstreamRow("container", t, b, b.repoB, 1)
		}), codeForeignKey},
		{"image in another namespace's repository rejected", ins("container_images", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "container_repository_id", b.crB, "name", "x"}
		}), codeForeignKey},
		{"attachment of another namespace's blob rejected", ins("blob_storage_attachments", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsB, "sha256", b.blobA}
		}), codeForeignKey},
		{"format row with mismatched attachment digest rejected", ins("container_blobs", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "container_image_id", b.imageA, "digest", digest("other"),
				"media_type", "x", "blob_storage_attachment_id", b.attachA, "blob_sha256", digest("other")}
		}), codeForeignKey},
		{"upload session for another namespace's repository rejected", ins("upload_sessions", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "repository_id", b.repoB, "upload_id", uuid.New(), "expires_at", "2030-01-01T00:00:00Z"}
		}), codeForeignKey},

		// Credential all-or-nothing unit (all three remote tables).
		{"container remote without credentials accepted", ins("container_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.remoteRepoA)
		}), ""},
		{"container remote with full credentials accepted", ins("container_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.remoteRepoA, withKey(b, cred)...)
		}), ""},
		{"container remote username without password rejected", ins("container_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.remoteRepoA, "wrapped_dek", []byte("dek"), "ns_key_id", b.keyA,
				"ns_key_version", 1, "encrypted_username", []byte("u"))
		}), codeCheck},
		{"container remote ciphertext without wrapped DEK rejected", ins("container_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.remoteRepoA, "encrypted_username", []byte("u"), "encrypted_password", []byte("p"))
		}), codeCheck},
		{"container remote wrapped DEK alone rejected", ins("container_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.remoteRepoA, "wrapped_dek", []byte("dek"))
		}), codeCheck},
		{"maven remote password without key id rejected", ins("maven_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.remoteRepoA, "wrapped_dek", []byte("dek"), "ns_key_version", 1,
				"encrypted_username", []byte("u"), "encrypted_password", []byte("p"))
		}), codeCheck},
		{"npm remote token without DEK rejected", ins("npm_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.npmRemoteRepoA, "encrypted_auth_token", []byte("tok"))
		}), codeCheck},
		{"npm remote full unit accepted", ins("npm_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.npmRemoteRepoA, "wrapped_dek", []byte("dek"), "ns_key_id", b.keyA,
				"ns_key_version", 1, "encrypted_auth_token", []byte("tok"))
		}), ""},
		{"credential key of another namespace rejected", ins("container_remote_repositories", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsB, "repository_id", b.repoB, "url", "https://x",
				"wrapped_dek", []byte("dek"), "ns_key_id", b.keyA, "ns_key_version", 1,
				"encrypted_username", []byte("u"), "encrypted_password", []byte("p")}
		}), codeForeignKey},
		{"deleting a key still wrapping credentials restricted", seq(
			ins("container_remote_repositories", func(t *testing.T, b *base) row {
				return remoteRow(t, b.nsA, b.remoteRepoA, withKey(b, cred)...)
			}),
			exec(`DELETE FROM namespace_encryption_keys WHERE namespace_id = $1 AND id = $2`,
				func(b *base) []any { return []any{b.nsA, b.keyA} })), codeForeignKey}, // RESTRICT reports 23503 too; TestCatalog checks the action
		{"health status 3 rejected", ins("container_remote_repositories", func(t *testing.T, b *base) row {
			return remoteRow(t, b.nsA, b.remoteRepoA, "last_health_status", 3)
		}), codeCheck},

		// Repository collections.
		{"second default collection rejected", ins("repository_collections", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "other", "is_default", true}
		}), codeUnique},
		{"second non-default collection accepted", ins("repository_collections", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "team", "is_default", false}
		}), ""},
		{"duplicate collection name rejected", ins("repository_collections", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "default"}
		}), codeUnique},

		// Repositories.
		{"duplicate repository name rejected even when soft-deleted", seq(
			exec(`UPDATE repositories SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`,
				func(b *base) []any { return []any{b.nsA, b.repoA2} }),
			exec(`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility)
				SELECT $1, namespace_id, name, 0, 0, 0 FROM repositories WHERE namespace_id = $2 AND id = $3`,
				func(b *base) []any { return []any{mustV7(), b.nsA, b.repoA2} })), codeUnique},
		{"repository format 4 rejected", ins("repositories", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "f4", "format", 4, "kind", 0, "visibility", 0}
		}), codeCheck},
		{"repository kind 3 rejected", ins("repositories", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "k3", "format", 0, "kind", 3, "visibility", 0}
		}), codeCheck},
		{"repository 1025-char description rejected", ins("repositories", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "d", "format", 0, "kind", 0, "visibility", 0,
				"description", strings.Repeat("d", 1025)}
		}), codeCheck},

		// Encryption keys.
		{"second active key rejected", ins("namespace_encryption_keys", func(t *testing.T, b *base) row {
			return keyRow(t, b.nsA, 2, []byte("k2"), true, false)
		}), codeUnique},
		{"second inactive key accepted", ins("namespace_encryption_keys", func(t *testing.T, b *base) row {
			return keyRow(t, b.nsA, 2, []byte("k2"), false, false)
		}), ""},
		{"duplicate key version rejected", ins("namespace_encryption_keys", func(t *testing.T, b *base) row {
			return keyRow(t, b.nsA, 1, []byte("k2"), false, false)
		}), codeUnique},
		{"key version 0 rejected", ins("namespace_encryption_keys", func(t *testing.T, b *base) row {
			return keyRow(t, b.nsB, 0, []byte("k"), true, false)
		}), codeCheck},
		{"shredded key still active rejected", ins("namespace_encryption_keys", func(t *testing.T, b *base) row {
			return keyRow(t, b.nsB, 1, []byte{}, true, true)
		}), codeCheck},
		{"shredded key keeping material rejected", ins("namespace_encryption_keys", func(t *testing.T, b *base) row {
			return keyRow(t, b.nsB, 1, []byte("k"), false, true)
		}), codeCheck},
		{"live key without material rejected", ins("namespace_encryption_keys", func(t *testing.T, b *base) row {
			return keyRow(t, b.nsB, 1, []byte{}, true, false)
		}), codeCheck},
		{"proper tombstone accepted", exec(`UPDATE namespace_encryption_keys
			SET wrapped_key = ''::bytea, active = false, shredded_at = now() WHERE namespace_id = $1 AND id = $2`,
			func(b *base) []any { return []any{b.nsA, b.keyA} }), ""},

		// Virtual upstreams and rules.
		{"duplicate container upstream rejected", seq(
			ins("container_virtual_repository_upstreams", func(t *testing.T, b *base) row { return upstreamRow("container", t, b, b.repoA, 1) }),
			ins("container_virtual_repository_upstreams", func(t *testing.T, b *base) row { return upstreamRow("container", t, b, b.repoA, 2) })),
			codeUnique},
		{"duplicate maven upstream rejected", seq(
			ins("maven_virtual_repository_upstreams", func(t *testing.T, b *base) row { return upstreamRow("maven", t, b, b.repoA, 1) }),
			ins("maven_virtual_repository_upstreams", func(t *testing.T, b *base) row { return upstreamRow("maven", t, b, b.repoA, 2) })),
			codeUnique},
		{"duplicate npm upstream rejected", seq(
			ins("npm_virtual_repository_upstreams", func(t *testing.T, b *base) row { return upstreamRow("npm", t, b, b.repoA, 0) }),
			ins("npm_virtual_repository_upstreams", func(t *testing.T, b *base) row { return upstreamRow("npm", t, b, b.repoA, 1) })),
			codeUnique},
		{"container upstream position 0 rejected", ins("container_virtual_repository_upstreams", func(t *testing.T, b *base) row {
			return upstreamRow("container", t, b, b.repoA, 0)
		}), codeCheck},
		{"npm upstream position 0 accepted", ins("npm_virtual_repository_upstreams", func(t *testing.T, b *base) row {
			return upstreamRow("npm", t, b, b.repoA, 0)
		}), ""},
		{"npm upstream position -1 rejected", ins("npm_virtual_repository_upstreams", func(t *testing.T, b *base) row {
			return upstreamRow("npm", t, b, b.repoA, -1)
		}), codeCheck},
		{"container rule accepted", ruleCase("container", 1, 1, "v*"), ""},
		{"container rule type 2 rejected", ruleCase("container", 2, 0, "v*"), codeCheck},
		{"container target field 2 rejected", ruleCase("container", 0, 2, "v*"), codeCheck},
		{"maven target field 2 accepted", ruleCase("maven", 0, 2, "1.*"), ""},
		{"maven target field 3 rejected", ruleCase("maven", 0, 3, "1.*"), codeCheck},
		{"maven rule type -1 rejected", ruleCase("maven", -1, 0, "1.*"), codeCheck},
		{"npm target field 3 rejected", ruleCase("npm", 0, 3, "@scope/*"), codeCheck},
		{"container 256-char pattern rejected", ruleCase("container", 0, 0, long), codeCheck},
		{"maven 256-char pattern rejected", ruleCase("maven", 0, 0, long), codeCheck},
		{"npm 256-char pattern rejected", ruleCase("npm", 0, 0, long), codeCheck},
		{"npm 255 multi-byte characters accepted", ruleCase("npm", 0, 0, multibyte255), ""},

		// Lifecycle policies.
		{"lifecycle rule type 4 rejected", seq(
			ins("lifecycle_policy_settings", func(t *testing.T, b *base) row {
				return row{"id", uuid.MustParse("01900000-0000-7000-8000-000000000001"), "namespace_id", b.nsA, "enabled", true}
			}),
			ins("lifecycle_rules", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "lifecycle_policy_settings_id",
					uuid.MustParse("01900000-0000-7000-8000-000000000001"), "rule_type", 4, "rule_configuration", `{"count": 10}`}
			})), codeCheck},
		{"second namespace lifecycle policy rejected", seq(
			ins("lifecycle_policy_settings", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "enabled", true}
			}),
			ins("lifecycle_policy_settings", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "enabled", false}
			})), codeUnique},
		{"second repository override rejected", seq(
			ins("npm_repository_lifecycle_policy_settings", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "repository_id", b.npmRepoIDA, "enabled", true}
			}),
			ins("npm_repository_lifecycle_policy_settings", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "repository_id", b.npmRepoIDA, "enabled", true}
			})), codeUnique},

		// Container artifacts and hashes.
		{"31-byte digest rejected", ins("container_blobs", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "container_image_id", b.imageA, "digest", b.blobA[:31],
				"media_type", "x", "blob_storage_attachment_id", b.attachA, "blob_sha256", b.blobA}
		}), codeCheck},
		{"duplicate live image name rejected", ins("container_images", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "container_repository_id", b.crA, "name", "app"}
		}), codeUnique},
		{"image name reusable after soft delete", seq(
			exec(`UPDATE container_images SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`,
				func(b *base) []any { return []any{b.nsA, b.imageA} }),
			ins("container_images", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "container_repository_id", b.crA, "name", "app"}
			})), ""},
		{"duplicate live manifest digest rejected", ins("container_manifests", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "container_image_id", b.imageA, "digest", b.blobA,
				"media_type", "x", "blob_storage_attachment_id", b.attachA, "blob_sha256", b.blobA, "size", int64(1)}
		}), codeUnique},
		{"commit sha of 21 bytes rejected", exec(`UPDATE container_manifests SET gitlab_git_commit_sha = $3 WHERE namespace_id = $1 AND id = $2`,
			func(b *base) []any { return []any{b.nsA, b.manifestA, make([]byte, 21)} }), codeCheck},
		{"duplicate tag name rejected", seq(
			ins("container_tags", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "container_image_id", b.imageA, "container_manifest_id", b.manifestA, "name", "latest"}
			}),
			ins("container_tags", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "container_image_id", b.imageA, "container_manifest_id", b.manifestA, "name", "latest"}
			})), codeUnique},

		// Blob layer.
		{"blob with 31-byte sha256 rejected", ins("blob_storage_blobs", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "sha256", make([]byte, 31), "object_storage_key", "k", "size", int64(1)}
		}), codeCheck},
		{"blob with 19-byte metadata_sha1 rejected", ins("blob_storage_blobs", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "sha256", digest("m"), "object_storage_key", "k", "size", int64(1), "metadata_sha1", make([]byte, 19)}
		}), codeCheck},
		{"blob with 1025-char key rejected", ins("blob_storage_blobs", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "sha256", digest("k"), "object_storage_key", strings.Repeat("k", 1025), "size", int64(1)}
		}), codeCheck},
		{"duplicate blob rejected", ins("blob_storage_blobs", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "sha256", b.blobA, "object_storage_key", "k", "size", int64(1)}
		}), codeUnique},
		{"blob for unknown namespace rejected by the shadow FK", ins("blob_storage_blobs", func(t *testing.T, b *base) row {
			return row{"namespace_id", v7(t), "sha256", digest("nobody"), "object_storage_key", "k", "size", int64(1)}
		}), codeForeignKey},
		{"duplicate upload id rejected", seq(
			ins("upload_sessions", func(t *testing.T, b *base) row {
				return row{"namespace_id", b.nsA, "repository_id", b.repoA, "upload_id", uuid.MustParse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), "expires_at", "2030-01-01T00:00:00Z"}
			}),
			ins("upload_sessions", func(t *testing.T, b *base) row {
				return row{"namespace_id", b.nsA, "repository_id", b.repoA2, "upload_id", uuid.MustParse("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), "expires_at", "2030-01-01T00:00:00Z"}
			})), codeUnique},
		{"upload session without expiry rejected", ins("upload_sessions", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "repository_id", b.repoA, "upload_id", uuid.New()}
		}), codeNotNull},

		// GC tables.
		{"duplicate GC candidate rejected", seq(
			ins("gc_blob_review_queue", func(t *testing.T, b *base) row {
				return row{"namespace_id", b.nsA, "sha256", b.blobA, "review_after", "2030-01-01T00:00:00Z"}
			}),
			ins("gc_blob_review_queue", func(t *testing.T, b *base) row {
				return row{"namespace_id", b.nsA, "sha256", b.blobA, "review_after", "2030-01-02T00:00:00Z"}
			})), codeUnique},
		{"GC candidate survives without a blob row", ins("gc_blob_review_queue", func(t *testing.T, b *base) row {
			return row{"namespace_id", v7(t), "sha256", digest("gone"), "review_after", "2030-01-01T00:00:00Z"}
		}), ""},
		{"GC candidate with negative strikes rejected", ins("gc_blob_review_queue", func(t *testing.T, b *base) row {
			return row{"namespace_id", b.nsA, "sha256", digest("s"), "review_after", "2030-01-01T00:00:00Z", "strikes", -1}
		}), codeCheck},
		{"second sweep state row rejected", exec(`INSERT INTO gc_sweep_state (singleton) VALUES (true)`, nil), codeUnique},
		{"sweep state row false rejected", exec(`INSERT INTO gc_sweep_state (singleton) VALUES (false)`, nil), codeCheck},
		{"sweep pause accepted", exec(`UPDATE gc_sweep_state SET paused_until = now() + interval '5 minutes', pause_reason = 'storage 5xx', updated_at = now()`, nil), ""},

		// Counter deltas and access tokens.
		{"counter delta accepted", ins("counter_deltas", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "target", 0, "target_id", b.repoA, "field", 1, "delta", int64(1)}
		}), ""},
		{"counter delta for a column the target lacks rejected", ins("counter_deltas", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "target", 0, "target_id", b.repoA, "field", 7, "observed_at", "2026-01-01T00:00:00Z"}
		}), codeCheck},
		{"counter delta with a timestamp on a counter rejected", ins("counter_deltas", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "target", 0, "target_id", b.repoA, "field", 1, "observed_at", "2026-01-01T00:00:00Z"}
		}), codeCheck},
		{"namespace statistics delta for another namespace rejected", ins("counter_deltas", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "target", 1, "target_id", b.nsB, "field", 5, "delta", int64(1)}
		}), codeCheck},
		{"token with empty scopes rejected", ins("access_tokens", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "t", "token_sha256", digest("t"), "scopes", []int16{}}
		}), codeCheck},
		{"token with scope 4 rejected", ins("access_tokens", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "t", "token_sha256", digest("t"), "scopes", []int16{0, 4}}
		}), codeCheck},
		{"token with empty repository list rejected", ins("access_tokens", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "t", "token_sha256", digest("t"), "scopes", []int16{0}, "repository_ids", []uuid.UUID{}}
		}), codeCheck},
		{"token restricted to repositories accepted", ins("access_tokens", func(t *testing.T, b *base) row {
			return row{"id", v7(t), "namespace_id", b.nsA, "name", "t", "token_sha256", digest("t"), "scopes", []int16{0, 1}, "repository_ids", []uuid.UUID{b.repoA}}
		}), ""},
		{"duplicate live token name rejected", seq(
			ins("access_tokens", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "name", "ci", "token_sha256", digest("1"), "scopes", []int16{0}}
			}),
			ins("access_tokens", func(t *testing.T, b *base) row {
				return row{"id", v7(t), "namespace_id", b.nsA, "name", "ci", "token_sha256", digest("2"), "scopes", []int16{0}}
			})), codeUnique},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			err = c.run(t, ctx, tx, b)
			if err == nil {
				// Deferred constraints fire at commit; check them here too.
				_, err = tx.Exec(ctx, "SET CONSTRAINTS ALL IMMEDIATE")
			}
			if got := sqlState(err); got != c.wantCode {
				t.Errorf("SQLSTATE %q (%v), want %q", got, err, c.wantCode)
			}
		})
	}
}

func mustV7() uuid.UUID { return uuid.Must(uuid.NewV7()) }
