-- +goose Up
-- Trash retention per namespace (docs/schema.md "Soft delete, trash and
-- purge"): a soft-deleted row becomes eligible for the expiry sweep at
-- soft_deleted_at + trash_retention_days days. 0 purges at the next sweep.
-- A column of namespaces rather than a settings table: it is one value read
-- with the namespace row, and adding a NOT NULL column with a constant
-- default gives every existing namespace the default without rewriting the
-- table.
ALTER TABLE namespaces
    ADD COLUMN trash_retention_days integer NOT NULL DEFAULT 7,
    ADD CONSTRAINT namespaces_trash_retention_days_range CHECK (trash_retention_days BETWEEN 0 AND 3650);

-- +goose Down
ALTER TABLE namespaces DROP COLUMN trash_retention_days;
