-- +goose Up
-- The operator kill switch (docs/garbage-collection.md, "Operational controls"): it stops
-- every object deletion of the garbage collector without a deploy. docs/garbage-collection.md
-- keeps it apart from gc_sweep_state (that row coordinates workers and is
-- never an operator setting), hence its own singleton row. gc:cleanup reads
-- it before every storage delete and fails closed: a missing table, a
-- missing row or a failed read all mean "delete nothing".
--   reclaim_enabled  false: GC deletes nothing (candidates are still
--                    recorded and rechecked).
--   changed_by       who set it last (operator identity, for the metric and
--                    the GraphQL gcQueue view).
--   reason           free text given with the change.
CREATE TABLE gc_controls (
    singleton       boolean     NOT NULL DEFAULT true,
    reclaim_enabled boolean     NOT NULL DEFAULT true,
    changed_by      text        NULL,
    reason          text        NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gc_controls_pkey PRIMARY KEY (singleton),
    CONSTRAINT gc_controls_one_row CHECK (singleton),
    CONSTRAINT gc_controls_changed_by_length CHECK (char_length(changed_by) <= 255),
    CONSTRAINT gc_controls_reason_length CHECK (char_length(reason) <= 1024)
);
INSERT INTO gc_controls (singleton) VALUES (true);

-- +goose Down
DROP TABLE IF EXISTS gc_controls;
