// Package pgxuuid teaches pgx to encode and scan github.com/google/uuid
// values in PostgreSQL's binary uuid format directly. Without it pgx sees
// uuid.UUID as a driver.Valuer and sql.Scanner, and every id of every
// statement makes a round trip through its 36-character text form (a
// tenth of the Go CPU time of an npm publish). It does what the
// pgx-google-uuid adapter does; that module is not served here.
package pgxuuid

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Register installs the uuid.UUID plans in a connection's type map.
func Register(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapEncode}, m.TryWrapEncodePlanFuncs...)
	m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryWrapScan}, m.TryWrapScanPlanFuncs...)
	// Where the parameter type is unknown (simple protocol, exec mode).
	m.RegisterDefaultPgType(uuid.UUID{}, "uuid")
	m.RegisterDefaultPgType([]uuid.UUID{}, "_uuid")
}

// AfterConnect is a pgxpool.Config.AfterConnect that calls Register.
func AfterConnect(_ context.Context, c *pgx.Conn) error {
	Register(c.TypeMap())
	return nil
}

// value is uuid.UUID with pgx's UUIDValuer and UUIDScanner methods.
type value uuid.UUID

func (u value) UUIDValue() (pgtype.UUID, error) {
	return pgtype.UUID{Bytes: u, Valid: true}, nil
}

func (u *value) ScanUUID(v pgtype.UUID) error {
	if !v.Valid {
		return nil // like uuid.UUID's own Scan of NULL: left unchanged
	}
	*u = v.Bytes
	return nil
}

func tryWrapEncode(v any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if u, ok := v.(uuid.UUID); ok {
		return &encodePlan{}, value(u), true
	}
	return nil, nil, false
}

type encodePlan struct{ next pgtype.EncodePlan }

func (p *encodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *encodePlan) Encode(v any, buf []byte) ([]byte, error) {
	return p.next.Encode(value(v.(uuid.UUID)), buf)
}

func tryWrapScan(target any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	if u, ok := target.(*uuid.UUID); ok {
		return &scanPlan{}, (*value)(u), true
	}
	return nil, nil, false
}

type scanPlan struct{ next pgtype.ScanPlan }

func (p *scanPlan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *scanPlan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*value)(dst.(*uuid.UUID)))
}
