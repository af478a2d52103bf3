package enum

// LegacyStatus is legacy_repositories.status: where a repository of the
// legacy registry:2 stands in its migration (docs/registry2-migration.md). importing is the
// read-only window of pass 2.
type LegacyStatus int16

const (
	LegacyPending      LegacyStatus = 0
	LegacyPreImporting LegacyStatus = 1
	LegacyPreImported  LegacyStatus = 2
	LegacyImporting    LegacyStatus = 3
	LegacyMigrated     LegacyStatus = 4
	LegacyFailed       LegacyStatus = 5
	LegacySkipped      LegacyStatus = 6
)

var legacyStatusNames = names{"pending", "pre_importing", "pre_imported", "importing", "migrated", "failed", "skipped"}

func (v LegacyStatus) String() string { return legacyStatusNames.str("LegacyStatus", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v LegacyStatus) Valid() bool { return legacyStatusNames.valid(int16(v)) }

// LegacyStatusValues lists every LegacyStatus in integer order.
func LegacyStatusValues() []LegacyStatus { return values[LegacyStatus](legacyStatusNames) }

// ParseLegacyStatus parses a label as returned by String.
func ParseLegacyStatus(s string) (LegacyStatus, error) {
	v, err := legacyStatusNames.parse("legacy status", s)
	return LegacyStatus(v), err
}
