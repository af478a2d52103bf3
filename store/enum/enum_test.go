package enum

import (
	"strings"
	"testing"
)

// enumCase describes one enum: its values in integer order with the labels
// the schema gives them (docs/schema.md), and its String/Parse pair.
type enumCase struct {
	name   string
	want   []string // label of value i, exactly as the schema maps it
	values func() []int16
	str    func(int16) string
	parse  func(string) (int16, error)
	valid  func(int16) bool
}

func ints[T ~int16](vs []T) []int16 {
	out := make([]int16, len(vs))
	for i, v := range vs {
		out[i] = int16(v)
	}
	return out
}

func cases() []enumCase {
	return []enumCase{
		{"Format", []string{"docker", "maven", "npm", "oci"},
			func() []int16 { return ints(FormatValues()) },
			func(v int16) string { return Format(v).String() },
			func(s string) (int16, error) { v, err := ParseFormat(s); return int16(v), err },
			func(v int16) bool { return Format(v).Valid() }},
		{"Kind", []string{"hosted", "virtual", "remote"},
			func() []int16 { return ints(KindValues()) },
			func(v int16) string { return Kind(v).String() },
			func(s string) (int16, error) { v, err := ParseKind(s); return int16(v), err },
			func(v int16) bool { return Kind(v).Valid() }},
		{"Visibility", []string{"public", "private", "internal"},
			func() []int16 { return ints(VisibilityValues()) },
			func(v int16) string { return Visibility(v).String() },
			func(s string) (int16, error) { v, err := ParseVisibility(s); return int16(v), err },
			func(v int16) bool { return Visibility(v).Valid() }},
		{"DeliveryMode", []string{"redirect", "proxy"},
			func() []int16 { return ints(DeliveryModeValues()) },
			func(v int16) string { return DeliveryMode(v).String() },
			func(s string) (int16, error) { v, err := ParseDeliveryMode(s); return int16(v), err },
			func(v int16) bool { return DeliveryMode(v).Valid() }},
		{"LifecycleRuleType", []string{"keep_last_downloaded_at", "keep_last_n", "keep_regex", "keep_snapshot_builds"},
			func() []int16 { return ints(LifecycleRuleTypeValues()) },
			func(v int16) string { return LifecycleRuleType(v).String() },
			func(s string) (int16, error) { v, err := ParseLifecycleRuleType(s); return int16(v), err },
			func(v int16) bool { return LifecycleRuleType(v).Valid() }},
		{"HealthStatus", []string{"unknown", "healthy", "unhealthy"},
			func() []int16 { return ints(HealthStatusValues()) },
			func(v int16) string { return HealthStatus(v).String() },
			func(s string) (int16, error) { v, err := ParseHealthStatus(s); return int16(v), err },
			func(v int16) bool { return HealthStatus(v).Valid() }},
		{"UpstreamRuleType", []string{"allow", "deny"},
			func() []int16 { return ints(UpstreamRuleTypeValues()) },
			func(v int16) string { return UpstreamRuleType(v).String() },
			func(s string) (int16, error) { v, err := ParseUpstreamRuleType(s); return int16(v), err },
			func(v int16) bool { return UpstreamRuleType(v).Valid() }},
		{"ContainerTargetField", []string{"image", "tag"},
			func() []int16 { return ints(ContainerTargetFieldValues()) },
			func(v int16) string { return ContainerTargetField(v).String() },
			func(s string) (int16, error) { v, err := ParseContainerTargetField(s); return int16(v), err },
			func(v int16) bool { return ContainerTargetField(v).Valid() }},
		{"MavenTargetField", []string{"group_id", "artifact_id", "version"},
			func() []int16 { return ints(MavenTargetFieldValues()) },
			func(v int16) string { return MavenTargetField(v).String() },
			func(s string) (int16, error) { v, err := ParseMavenTargetField(s); return int16(v), err },
			func(v int16) bool { return MavenTargetField(v).Valid() }},
		{"NpmTargetField", []string{"full_package_name", "scope", "version"},
			func() []int16 { return ints(NpmTargetFieldValues()) },
			func(v int16) string { return NpmTargetField(v).String() },
			func(s string) (int16, error) { v, err := ParseNpmTargetField(s); return int16(v), err },
			func(v int16) bool { return NpmTargetField(v).Valid() }},
		{"NpmMetadataKind", []string{"full", "dist_tags", "abbreviated"},
			func() []int16 { return ints(NpmMetadataKindValues()) },
			func(v int16) string { return NpmMetadataKind(v).String() },
			func(s string) (int16, error) { v, err := ParseNpmMetadataKind(s); return int16(v), err },
			func(v int16) bool { return NpmMetadataKind(v).Valid() }},
		{"CounterTarget", []string{"repositories", "namespace_statistics", "container_images",
			"container_remote_images", "maven_packages", "maven_versions", "maven_remote_packages",
			"maven_remote_versions", "npm_packages", "npm_versions", "npm_remote_packages",
			"npm_remote_versions", "access_tokens", "container_remote_repositories", "npm_remote_repositories",
			"maven_remote_repositories"},
			func() []int16 { return ints(CounterTargetValues()) },
			func(v int16) string { return CounterTarget(v).String() },
			func(s string) (int16, error) { v, err := ParseCounterTarget(s); return int16(v), err },
			func(v int16) bool { return CounterTarget(v).Valid() }},
		{"CounterField", []string{"artifacts_count", "downloads_count", "size_bytes", "versions_count",
			"tags_count", "deduplicated_size_bytes", "components_count", "last_downloaded_at", "last_used_at", "last_updated_at",
			"cache_hits", "cache_misses"},
			func() []int16 { return ints(CounterFieldValues()) },
			func(v int16) string { return CounterField(v).String() },
			func(s string) (int16, error) { v, err := ParseCounterField(s); return int16(v), err },
			func(v int16) bool { return CounterField(v).Valid() }},
		{"TokenScope", []string{"read", "write", "delete", "admin"},
			func() []int16 { return ints(TokenScopeValues()) },
			func(v int16) string { return TokenScope(v).String() },
			func(s string) (int16, error) { v, err := ParseTokenScope(s); return int16(v), err },
			func(v int16) bool { return TokenScope(v).Valid() }},
		{"LegacyStatus", []string{"pending", "pre_importing", "pre_imported", "importing", "migrated", "failed", "skipped"},
			func() []int16 { return ints(LegacyStatusValues()) },
			func(v int16) string { return LegacyStatus(v).String() },
			func(s string) (int16, error) { v, err := ParseLegacyStatus(s); return int16(v), err },
			func(v int16) bool { return LegacyStatus(v).Valid() }},
	}
}

func TestEnums(t *testing.T) {
	t.Parallel()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			vals := c.values()
			if len(vals) != len(c.want) {
				t.Fatalf("%d values, want %d", len(vals), len(c.want))
			}
			for i, v := range vals {
				if int(v) != i {
					t.Errorf("value %d is %d; values must be 0..n-1 in order", i, v)
				}
				if got := c.str(v); got != c.want[i] {
					t.Errorf("String(%d) = %q, want %q", v, got, c.want[i])
				}
				if !c.valid(v) {
					t.Errorf("Valid(%d) = false", v)
				}
				p, err := c.parse(c.want[i])
				if err != nil || p != v {
					t.Errorf("Parse(%q) = %d, %v; want %d", c.want[i], p, err, v)
				}
			}
			for _, bad := range []int16{-1, int16(len(vals))} {
				if c.valid(bad) {
					t.Errorf("Valid(%d) = true", bad)
				}
				if s := c.str(bad); !strings.Contains(s, "(") {
					t.Errorf("String(%d) = %q, want a marked unknown value", bad, s)
				}
			}
			if _, err := c.parse("no-such-label"); err == nil {
				t.Error("Parse of an unknown label succeeded")
			}
		})
	}
}

func TestCounterTargetFields(t *testing.T) {
	t.Parallel()
	for _, target := range CounterTargetValues() {
		fields := target.Fields()
		if len(fields) == 0 {
			t.Errorf("%v has no fields", target)
		}
		for _, f := range fields {
			if !f.Valid() {
				t.Errorf("%v lists invalid field %d", target, f)
			}
		}
	}
	if CounterTarget(99).Fields() != nil {
		t.Error("unknown target has fields")
	}
	for _, f := range CounterFieldValues() {
		want := f == CounterFieldLastDownloadedAt || f == CounterFieldLastUsedAt || f == CounterFieldLastUpdatedAt
		if f.IsTimestamp() != want {
			t.Errorf("%v.IsTimestamp() = %v", f, !want)
		}
	}
}
