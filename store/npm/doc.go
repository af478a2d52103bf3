// Package npm is the data path of hosted npm repositories: the tables
// npm_packages, npm_versions, npm_tags, npm_files and npm_metadata_files
// (docs/schema.md, Format tables), read and written for the npm registry
// protocol (protocol/npm) and the management API (graph, store/catalog).
// It owns npm's strict SemVer and range grammar, the dist-tag rules and
// the JSON schema of npm_versions.package_json, which it validates before
// every write.
//
// It builds on the core store (package store): blobs, attachments, upload
// staging and transactions come from there; New wraps a core store.
//
// Contract:
//   - Partitions: every statement carries namespace_id = $1 so that each
//     partitioned table is pruned to the namespace's partition; the hot
//     statements name the partitions themselves (docs/schema.md,
//     Partitioning and Per-partition statements).
//   - Transactions: each write runs in one foreground transaction under
//     the retry rule (db.Retry; docs/architecture.md, Transactions and the
//     retry rule). Writers take the package row lock first (FOR SHARE for
//     publishes and tag changes, FOR NO KEY UPDATE for changes checked
//     against a document revision), force-expire the package's metadata
//     files in the same transaction, and may enqueue a background rebuild
//     through their WriteHook, which runs before the commit (an error
//     rolls the write back).
//   - Metadata rebuilds (RebuildMetadata) build outside any lock, then lock
//     the package row FOR NO KEY UPDATE, check that the package state has
//     not changed since they read it, and swap the metadata files and their
//     attachments in one transaction. Blob rows are locked in ascending
//     digest order before attachments change (docs/garbage-collection.md,
//     Lock protocol).
//   - Errors: expected failures are store errors carrying one of this
//     package's codes (CodeRepositoryUnknown, CodeVersionExists, ...) or a
//     core code (store.CodeRetryable); test them with store.HasCode
//     (docs/architecture.md, Errors).
package npm
