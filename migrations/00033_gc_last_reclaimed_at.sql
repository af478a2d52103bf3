-- +goose Up
-- When the garbage collector last deleted a blob of the namespace (GraphQL
-- gcQueue.lastReclaimedAt). gc:cleanup sets it in the transaction that
-- deletes the blob row, with GREATEST so that concurrent workers committing
-- in any order never move it backward. NULL: nothing reclaimed yet.
-- Bookkeeping on the existing one-row-per-namespace table rather than a
-- reclaim log: operators need "is GC reclaiming here, and since when not",
-- and the structured delete events already are the log.
ALTER TABLE namespace_statistics ADD COLUMN gc_last_reclaimed_at timestamptz NULL;

-- +goose Down
ALTER TABLE namespace_statistics DROP COLUMN IF EXISTS gc_last_reclaimed_at;
