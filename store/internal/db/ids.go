package db

import (
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CollectIDs reads the single uuid column of a query; err is the query's
// own error, so a call reads CollectIDs(q.Query(...)).
func CollectIDs(rows pgx.Rows, err error) ([]uuid.UUID, error) {
	if err != nil {
		return nil, MapErr(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, MapErr(err)
}

// ExpiredSQL selects the ids of table's rows in namespace $1 soft-deleted
// at or before $2, oldest first, at most $3: a range scan of the table's
// trash index (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at
// IS NOT NULL. The expiry sweep and emptyTrash page every trashed kind
// with it.
func ExpiredSQL(table string) string {
	return `SELECT id FROM ` + table + `
		WHERE namespace_id = $1 AND soft_deleted_at IS NOT NULL AND soft_deleted_at <= $2
		ORDER BY soft_deleted_at, id LIMIT $3`
}
