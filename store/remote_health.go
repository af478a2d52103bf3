package store

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// MaxRemoteHealthError bounds the last_health_error of every remote table.
const MaxRemoteHealthError = 1024

// RecordRemoteHealth stores what the upstream layer last saw of a remote
// in its table (container_, npm_ or maven_remote_repositories): lastError
// is cut to MaxRemoteHealthError characters, empty clears it.
func RecordRemoteHealth(ctx context.Context, pool *pgxpool.Pool, table string, nsID, remoteID uuid.UUID,
	status enum.HealthStatus, at time.Time, lastError string) error {
	var e *string
	if lastError != "" {
		if utf8.RuneCountInString(lastError) > MaxRemoteHealthError {
			lastError = string([]rune(lastError)[:MaxRemoteHealthError])
		}
		e = &lastError
	}
	// table is one of three constants of the callers, never input.
	if _, err := pool.Exec(ctx, `UPDATE `+table+`
		SET last_health_status = $3, last_health_checked_at = $4, last_health_error = $5
		WHERE namespace_id = $1 AND id = $2`, nsID, remoteID, int16(status), at, e); err != nil {
		return db.MapErr(fmt.Errorf("store: record the health of a remote in %s: %w", table, err))
	}
	return nil
}
