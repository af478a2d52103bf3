// Package enum is the one place that maps the database's smallint enum
// columns to Go. The schema stores enum-style columns as SMALLINT (PostgreSQL
// ENUM types are hard to change safely) and keeps the integer-to-label
// mapping in the application (docs/schema.md "Digests, hashes and enums");
// the values below are that mapping, and
// every column's CHECK in migrations/ accepts exactly Values() (asserted by the
// migrations tests). Never renumber a value: the integers live in the data.
package enum

import "fmt"

// names maps each value of an enum to its label; index = integer value.
type names []string

func (n names) str(kind string, v int16) string {
	if v >= 0 && int(v) < len(n) {
		return n[v]
	}
	return fmt.Sprintf("%s(%d)", kind, v)
}

func (n names) parse(kind, s string) (int16, error) {
	for i, name := range n {
		if name == s {
			return int16(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", kind, s)
}

func (n names) valid(v int16) bool { return v >= 0 && int(v) < len(n) }

func values[T ~int16](n names) []T {
	out := make([]T, len(n))
	for i := range n {
		out[i] = T(i)
	}
	return out
}

// Format is repositories.format.
type Format int16

const (
	FormatDocker Format = 0
	FormatMaven  Format = 1
	FormatNpm    Format = 2
	FormatOCI    Format = 3
)

var formatNames = names{"docker", "maven", "npm", "oci"}

func (v Format) String() string { return formatNames.str("Format", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v Format) Valid() bool { return formatNames.valid(int16(v)) }

// FormatValues lists every Format in integer order.
func FormatValues() []Format { return values[Format](formatNames) }

// ParseFormat parses a label as returned by String.
func ParseFormat(s string) (Format, error) {
	v, err := formatNames.parse("format", s)
	return Format(v), err
}

// Kind is repositories.kind.
type Kind int16

const (
	KindHosted  Kind = 0
	KindVirtual Kind = 1
	KindRemote  Kind = 2
)

var kindNames = names{"hosted", "virtual", "remote"}

func (v Kind) String() string { return kindNames.str("Kind", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v Kind) Valid() bool { return kindNames.valid(int16(v)) }

// KindValues lists every Kind in integer order.
func KindValues() []Kind { return values[Kind](kindNames) }

// ParseKind parses a label as returned by String.
func ParseKind(s string) (Kind, error) {
	v, err := kindNames.parse("kind", s)
	return Kind(v), err
}

// Visibility is repositories.visibility.
type Visibility int16

const (
	VisibilityPublic   Visibility = 0
	VisibilityPrivate  Visibility = 1
	VisibilityInternal Visibility = 2
)

var visibilityNames = names{"public", "private", "internal"}

func (v Visibility) String() string { return visibilityNames.str("Visibility", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v Visibility) Valid() bool { return visibilityNames.valid(int16(v)) }

// VisibilityValues lists every Visibility in integer order.
func VisibilityValues() []Visibility { return values[Visibility](visibilityNames) }

// ParseVisibility parses a label as returned by String.
func ParseVisibility(s string) (Visibility, error) {
	v, err := visibilityNames.parse("visibility", s)
	return Visibility(v), err
}

// DeliveryMode is namespaces.delivery_mode_override (docs/schema.md "Slugs
// and anchors"). NULL in the
// column inherits the instance default; future per-repository overrides
// reuse the same mapping.
type DeliveryMode int16

const (
	DeliveryModeRedirect DeliveryMode = 0
	DeliveryModeProxy    DeliveryMode = 1
)

var deliveryModeNames = names{"redirect", "proxy"}

func (v DeliveryMode) String() string { return deliveryModeNames.str("DeliveryMode", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v DeliveryMode) Valid() bool { return deliveryModeNames.valid(int16(v)) }

// DeliveryModeValues lists every DeliveryMode in integer order.
func DeliveryModeValues() []DeliveryMode { return values[DeliveryMode](deliveryModeNames) }

// ParseDeliveryMode parses a label as returned by String.
func ParseDeliveryMode(s string) (DeliveryMode, error) {
	v, err := deliveryModeNames.parse("delivery mode", s)
	return DeliveryMode(v), err
}

// LifecycleRuleType is rule_type of lifecycle_rules and of the
// <format>_repository_lifecycle_rules override tables.
type LifecycleRuleType int16

const (
	LifecycleRuleKeepLastDownloadedAt LifecycleRuleType = 0
	LifecycleRuleKeepLastN            LifecycleRuleType = 1
	LifecycleRuleKeepRegex            LifecycleRuleType = 2
	// LifecycleRuleKeepSnapshotBuilds keeps the last N timestamped builds
	// of each Maven -SNAPSHOT version.
	LifecycleRuleKeepSnapshotBuilds LifecycleRuleType = 3
)

var lifecycleRuleTypeNames = names{"keep_last_downloaded_at", "keep_last_n", "keep_regex", "keep_snapshot_builds"}

func (v LifecycleRuleType) String() string {
	return lifecycleRuleTypeNames.str("LifecycleRuleType", int16(v))
}

// Valid reports whether v is one of the defined values.
func (v LifecycleRuleType) Valid() bool { return lifecycleRuleTypeNames.valid(int16(v)) }

// LifecycleRuleTypeValues lists every LifecycleRuleType in integer order.
func LifecycleRuleTypeValues() []LifecycleRuleType {
	return values[LifecycleRuleType](lifecycleRuleTypeNames)
}

// ParseLifecycleRuleType parses a label as returned by String.
func ParseLifecycleRuleType(s string) (LifecycleRuleType, error) {
	v, err := lifecycleRuleTypeNames.parse("lifecycle rule type", s)
	return LifecycleRuleType(v), err
}

// HealthStatus is last_health_status of the three remote repository tables.
type HealthStatus int16

const (
	HealthUnknown   HealthStatus = 0
	HealthHealthy   HealthStatus = 1
	HealthUnhealthy HealthStatus = 2
)

var healthStatusNames = names{"unknown", "healthy", "unhealthy"}

func (v HealthStatus) String() string { return healthStatusNames.str("HealthStatus", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v HealthStatus) Valid() bool { return healthStatusNames.valid(int16(v)) }

// HealthStatusValues lists every HealthStatus in integer order.
func HealthStatusValues() []HealthStatus { return values[HealthStatus](healthStatusNames) }

// ParseHealthStatus parses a label as returned by String.
func ParseHealthStatus(s string) (HealthStatus, error) {
	v, err := healthStatusNames.parse("health status", s)
	return HealthStatus(v), err
}

// UpstreamRuleType is rule_type of the container, maven and npm
// virtual_upstream_rules tables.
type UpstreamRuleType int16

const (
	UpstreamRuleAllow UpstreamRuleType = 0
	UpstreamRuleDeny  UpstreamRuleType = 1
)

var upstreamRuleTypeNames = names{"allow", "deny"}

func (v UpstreamRuleType) String() string {
	return upstreamRuleTypeNames.str("UpstreamRuleType", int16(v))
}

// Valid reports whether v is one of the defined values.
func (v UpstreamRuleType) Valid() bool { return upstreamRuleTypeNames.valid(int16(v)) }

// UpstreamRuleTypeValues lists every UpstreamRuleType in integer order.
func UpstreamRuleTypeValues() []UpstreamRuleType {
	return values[UpstreamRuleType](upstreamRuleTypeNames)
}

// ParseUpstreamRuleType parses a label as returned by String.
func ParseUpstreamRuleType(s string) (UpstreamRuleType, error) {
	v, err := upstreamRuleTypeNames.parse("upstream rule type", s)
	return UpstreamRuleType(v), err
}

// ContainerTargetField is container_virtual_upstream_rules.target_field.
type ContainerTargetField int16

const (
	ContainerTargetImage ContainerTargetField = 0
	ContainerTargetTag   ContainerTargetField = 1
)

var containerTargetFieldNames = names{"image", "tag"}

func (v ContainerTargetField) String() string {
	return containerTargetFieldNames.str("ContainerTargetField", int16(v))
}

// Valid reports whether v is one of the defined values.
func (v ContainerTargetField) Valid() bool { return containerTargetFieldNames.valid(int16(v)) }

// ContainerTargetFieldValues lists every ContainerTargetField in integer order.
func ContainerTargetFieldValues() []ContainerTargetField {
	return values[ContainerTargetField](containerTargetFieldNames)
}

// ParseContainerTargetField parses a label as returned by String.
func ParseContainerTargetField(s string) (ContainerTargetField, error) {
	v, err := containerTargetFieldNames.parse("container target field", s)
	return ContainerTargetField(v), err
}

// MavenTargetField is maven_virtual_upstream_rules.target_field.
type MavenTargetField int16

const (
	MavenTargetGroupID    MavenTargetField = 0
	MavenTargetArtifactID MavenTargetField = 1
	MavenTargetVersion    MavenTargetField = 2
)

var mavenTargetFieldNames = names{"group_id", "artifact_id", "version"}

func (v MavenTargetField) String() string {
	return mavenTargetFieldNames.str("MavenTargetField", int16(v))
}

// Valid reports whether v is one of the defined values.
func (v MavenTargetField) Valid() bool { return mavenTargetFieldNames.valid(int16(v)) }

// MavenTargetFieldValues lists every MavenTargetField in integer order.
func MavenTargetFieldValues() []MavenTargetField {
	return values[MavenTargetField](mavenTargetFieldNames)
}

// ParseMavenTargetField parses a label as returned by String.
func ParseMavenTargetField(s string) (MavenTargetField, error) {
	v, err := mavenTargetFieldNames.parse("maven target field", s)
	return MavenTargetField(v), err
}

// NpmTargetField is npm_virtual_upstream_rules.target_field.
type NpmTargetField int16

const (
	NpmTargetFullPackageName NpmTargetField = 0
	NpmTargetScope           NpmTargetField = 1
	NpmTargetVersion         NpmTargetField = 2
)

var npmTargetFieldNames = names{"full_package_name", "scope", "version"}

func (v NpmTargetField) String() string { return npmTargetFieldNames.str("NpmTargetField", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v NpmTargetField) Valid() bool { return npmTargetFieldNames.valid(int16(v)) }

// NpmTargetFieldValues lists every NpmTargetField in integer order.
func NpmTargetFieldValues() []NpmTargetField { return values[NpmTargetField](npmTargetFieldNames) }

// ParseNpmTargetField parses a label as returned by String.
func ParseNpmTargetField(s string) (NpmTargetField, error) {
	v, err := npmTargetFieldNames.parse("npm target field", s)
	return NpmTargetField(v), err
}

// NpmMetadataKind is kind of npm_metadata_files (all three values) and of
// npm_remote_metadata_files (Full and DistTags only, see
// NpmRemoteMetadataKindValues): the abbreviated install projection is built
// locally, never cached from upstream.
type NpmMetadataKind int16

const (
	NpmMetadataFull        NpmMetadataKind = 0
	NpmMetadataDistTags    NpmMetadataKind = 1
	NpmMetadataAbbreviated NpmMetadataKind = 2
)

var npmMetadataKindNames = names{"full", "dist_tags", "abbreviated"}

func (v NpmMetadataKind) String() string {
	return npmMetadataKindNames.str("NpmMetadataKind", int16(v))
}

// Valid reports whether v is one of the defined values.
func (v NpmMetadataKind) Valid() bool { return npmMetadataKindNames.valid(int16(v)) }

// NpmMetadataKindValues lists every NpmMetadataKind in integer order (the
// values npm_metadata_files.kind accepts).
func NpmMetadataKindValues() []NpmMetadataKind {
	return values[NpmMetadataKind](npmMetadataKindNames)
}

// NpmRemoteMetadataKindValues lists the kinds npm_remote_metadata_files.kind
// accepts.
func NpmRemoteMetadataKindValues() []NpmMetadataKind {
	return []NpmMetadataKind{NpmMetadataFull, NpmMetadataDistTags}
}

// ParseNpmMetadataKind parses a label as returned by String.
func ParseNpmMetadataKind(s string) (NpmMetadataKind, error) {
	v, err := npmMetadataKindNames.parse("npm metadata kind", s)
	return NpmMetadataKind(v), err
}

// CounterTarget is counter_deltas.target: the row a buffered delta applies to.
type CounterTarget int16

const (
	CounterTargetRepository           CounterTarget = 0
	CounterTargetNamespaceStatistics  CounterTarget = 1
	CounterTargetContainerImage       CounterTarget = 2
	CounterTargetContainerRemoteImage CounterTarget = 3
	CounterTargetMavenPackage         CounterTarget = 4
	CounterTargetMavenVersion         CounterTarget = 5
	CounterTargetMavenRemotePackage   CounterTarget = 6
	CounterTargetMavenRemoteVersion   CounterTarget = 7
	CounterTargetNpmPackage           CounterTarget = 8
	CounterTargetNpmVersion           CounterTarget = 9
	CounterTargetNpmRemotePackage     CounterTarget = 10
	CounterTargetNpmRemoteVersion     CounterTarget = 11
	CounterTargetAccessToken          CounterTarget = 12
	// CounterTargetContainerRemoteRepository holds a pull-through cache's
	// hit and miss counters (migration 00053).
	CounterTargetContainerRemoteRepository CounterTarget = 13
	// CounterTargetNpmRemoteRepository holds an npm pull-through cache's
	// hit and miss counters (migration 00055).
	CounterTargetNpmRemoteRepository CounterTarget = 14
	// CounterTargetMavenRemoteRepository holds a Maven proxy's hit and
	// miss counters (migration 00056).
	CounterTargetMavenRemoteRepository CounterTarget = 15
)

// counterTargetNames are the target tables.
var counterTargetNames = names{
	"repositories", "namespace_statistics", "container_images", "container_remote_images",
	"maven_packages", "maven_versions", "maven_remote_packages", "maven_remote_versions",
	"npm_packages", "npm_versions", "npm_remote_packages", "npm_remote_versions",
	"access_tokens", "container_remote_repositories", "npm_remote_repositories", "maven_remote_repositories",
}

// String returns the target table name.
func (v CounterTarget) String() string { return counterTargetNames.str("CounterTarget", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v CounterTarget) Valid() bool { return counterTargetNames.valid(int16(v)) }

// CounterTargetValues lists every CounterTarget in integer order.
func CounterTargetValues() []CounterTarget { return values[CounterTarget](counterTargetNames) }

// ParseCounterTarget parses a table name as returned by String.
func ParseCounterTarget(s string) (CounterTarget, error) {
	v, err := counterTargetNames.parse("counter target", s)
	return CounterTarget(v), err
}

// Fields lists the buffered columns of the target table, i.e. the fields
// counter_deltas accepts for it (CHECK counter_deltas_target_field_valid).
func (v CounterTarget) Fields() []CounterField {
	switch v {
	case CounterTargetRepository:
		return []CounterField{CounterFieldArtifactsCount, CounterFieldDownloadsCount, CounterFieldSizeBytes, CounterFieldLastUpdatedAt}
	case CounterTargetNamespaceStatistics:
		return []CounterField{CounterFieldDeduplicatedSizeBytes, CounterFieldComponentsCount}
	case CounterTargetContainerImage:
		return []CounterField{CounterFieldArtifactsCount, CounterFieldLastDownloadedAt}
	case CounterTargetContainerRemoteImage, CounterTargetMavenPackage, CounterTargetMavenRemotePackage,
		CounterTargetNpmRemotePackage:
		return []CounterField{CounterFieldLastDownloadedAt}
	case CounterTargetMavenVersion, CounterTargetMavenRemoteVersion, CounterTargetNpmVersion,
		CounterTargetNpmRemoteVersion:
		return []CounterField{CounterFieldSizeBytes, CounterFieldLastDownloadedAt}
	case CounterTargetNpmPackage:
		return []CounterField{CounterFieldVersionsCount, CounterFieldTagsCount, CounterFieldLastDownloadedAt}
	case CounterTargetAccessToken:
		return []CounterField{CounterFieldLastUsedAt}
	case CounterTargetContainerRemoteRepository, CounterTargetNpmRemoteRepository,
		CounterTargetMavenRemoteRepository:
		return []CounterField{CounterFieldCacheHits, CounterFieldCacheMisses}
	}
	return nil
}

// CounterField is counter_deltas.field: the buffered column. Counters merge
// by sum (counter_deltas.delta), timestamps by max (counter_deltas.observed_at).
type CounterField int16

const (
	CounterFieldArtifactsCount        CounterField = 0
	CounterFieldDownloadsCount        CounterField = 1
	CounterFieldSizeBytes             CounterField = 2
	CounterFieldVersionsCount         CounterField = 3
	CounterFieldTagsCount             CounterField = 4
	CounterFieldDeduplicatedSizeBytes CounterField = 5
	CounterFieldComponentsCount       CounterField = 6
	CounterFieldLastDownloadedAt      CounterField = 7
	CounterFieldLastUsedAt            CounterField = 8
	// CounterFieldLastUpdatedAt is repositories.last_updated_at, the time
	// of the last content change, recorded by the accounting triggers.
	CounterFieldLastUpdatedAt CounterField = 9
	// CounterFieldCacheHits and CounterFieldCacheMisses count the content
	// requests a pull-through cache answered from its cache and those it
	// had to fetch upstream.
	CounterFieldCacheHits   CounterField = 10
	CounterFieldCacheMisses CounterField = 11
)

// counterFieldNames are the column names.
var counterFieldNames = names{
	"artifacts_count", "downloads_count", "size_bytes", "versions_count", "tags_count",
	"deduplicated_size_bytes", "components_count", "last_downloaded_at", "last_used_at",
	"last_updated_at", "cache_hits", "cache_misses",
}

// String returns the column name.
func (v CounterField) String() string { return counterFieldNames.str("CounterField", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v CounterField) Valid() bool { return counterFieldNames.valid(int16(v)) }

// IsTimestamp reports whether the field merges by max of observed_at rather
// than by sum of delta.
func (v CounterField) IsTimestamp() bool {
	return v == CounterFieldLastDownloadedAt || v == CounterFieldLastUsedAt || v == CounterFieldLastUpdatedAt
}

// CounterFieldValues lists every CounterField in integer order.
func CounterFieldValues() []CounterField { return values[CounterField](counterFieldNames) }

// ParseCounterField parses a column name as returned by String.
func ParseCounterField(s string) (CounterField, error) {
	v, err := counterFieldNames.parse("counter field", s)
	return CounterField(v), err
}

// TokenScope is an element of access_tokens.scopes.
type TokenScope int16

const (
	TokenScopeRead   TokenScope = 0 // pull / download, read the management API
	TokenScopeWrite  TokenScope = 1 // push / publish
	TokenScopeDelete TokenScope = 2 // delete artifacts
	TokenScopeAdmin  TokenScope = 3 // manage repositories, settings and tokens
)

var tokenScopeNames = names{"read", "write", "delete", "admin"}

func (v TokenScope) String() string { return tokenScopeNames.str("TokenScope", int16(v)) }

// Valid reports whether v is one of the defined values.
func (v TokenScope) Valid() bool { return tokenScopeNames.valid(int16(v)) }

// TokenScopeValues lists every TokenScope in integer order.
func TokenScopeValues() []TokenScope { return values[TokenScope](tokenScopeNames) }

// ParseTokenScope parses a label as returned by String.
func ParseTokenScope(s string) (TokenScope, error) {
	v, err := tokenScopeNames.parse("token scope", s)
	return TokenScope(v), err
}
