-- +goose Up
-- GraphQL gcQueue.excludedCandidates lists a namespace's excluded candidates
-- newest first, keyset-paginated on (excluded_at, sha256). The dequeue index
-- leaves excluded rows out on purpose, so without this one the listing
-- reads every candidate of the namespace in every partition. Partial: only
-- excluded rows, which are few and wait for an operator.
CREATE INDEX gc_blob_review_queue_excluded_idx
    ON gc_blob_review_queue (namespace_id, excluded_at DESC, sha256 DESC)
    WHERE excluded_at IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS gc_blob_review_queue_excluded_idx;
