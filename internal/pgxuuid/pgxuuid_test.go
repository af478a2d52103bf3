package pgxuuid_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgxuuid"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// TestRoundTrip checks every shape the store passes (values, pointers,
// NULLs, arrays) in every query mode, against the text PostgreSQL prints.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect = pgxuuid.AfterConnect
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewRandom())
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			var (
				text  string
				got   uuid.UUID
				ptr   *uuid.UUID
				null  = b // NULL leaves a uuid.UUID unchanged, as uuid.UUID.Scan does
				nullp = &b
				arr   []uuid.UUID
				arrT  string
			)
			err := pool.QueryRow(ctx, `SELECT $1::uuid::text, $1::uuid, $2::uuid, NULL::uuid, NULL::uuid, $3::uuid[], $3::uuid[]::text`,
				mode, a, &b, []uuid.UUID{a, b}).Scan(&text, &got, &ptr, &null, &nullp, &arr, &arrT)
			if err != nil {
				t.Fatal(err)
			}
			if text != a.String() || got != a || ptr == nil || *ptr != b || null != b || nullp != nil {
				t.Fatalf("text %s got %s ptr %v null %s nullp %v; want %s and %s", text, got, ptr, null, nullp, a, b)
			}
			if !slices.Equal(arr, []uuid.UUID{a, b}) || arrT != "{"+a.String()+","+b.String()+"}" {
				t.Fatalf("array %v (%s), want [%s %s]", arr, arrT, a, b)
			}
			var isNull bool
			if err := pool.QueryRow(ctx, `SELECT $1::uuid IS NULL`, mode, (*uuid.UUID)(nil)).Scan(&isNull); err != nil || !isNull {
				t.Fatalf("nil *uuid.UUID: null=%v err=%v", isNull, err)
			}
		})
	}
}

// BenchmarkEncodeScan is the client-side cost of a statement that sends and
// reads back ten ids, with and without the adapter.
func BenchmarkEncodeScan(b *testing.B) {
	ctx := context.Background()
	url := testdb.NewURL(b)
	ids := make([]uuid.UUID, 10)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	for _, registered := range []bool{false, true} {
		name := "pgx-default"
		if registered {
			name = "pgxuuid"
		}
		b.Run(name, func(b *testing.B) {
			cfg, err := pgx.ParseConfig(url)
			if err != nil {
				b.Fatal(err)
			}
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			if registered {
				pgxuuid.Register(conn.TypeMap())
			}
			out := make([]uuid.UUID, len(ids))
			dst := make([]any, len(ids))
			for i := range out {
				dst[i] = &out[i]
			}
			args := make([]any, len(ids))
			for i := range ids {
				args[i] = ids[i]
			}
			const q = `SELECT $1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::uuid, $7::uuid, $8::uuid, $9::uuid, $10::uuid`
			b.ReportAllocs()
			for b.Loop() {
				if err := conn.QueryRow(ctx, q, args...).Scan(dst...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
