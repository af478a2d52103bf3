-- +goose Up
-- Schema home for the 64 hash-partition children of every partitioned table
-- (ADR-007 "partitioning invariant"): parents live in public, children here.
CREATE SCHEMA IF NOT EXISTS partitions;

-- +goose Down
DROP SCHEMA IF EXISTS partitions CASCADE;
