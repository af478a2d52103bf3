package mavenlayout

import "testing"

func TestParseMavenSnapshotFile(t *testing.T) {
	t.Parallel()
	const a, v = "anchor-lib", "1.1.0-SNAPSHOT"
	cases := []struct {
		name string
		ok   bool
		want SnapshotFile
	}{
		{"anchor-lib-1.1.0-20261129.210811-2.jar", true, SnapshotFile{"20261129.210811", 2, "", "jar"}},
		{"anchor-lib-1.1.0-20261129.210811-2.pom", true, SnapshotFile{"20261129.210811", 2, "", "pom"}},
		{"anchor-lib-1.1.0-20261129.210811-12-sources.jar", true, SnapshotFile{"20261129.210811", 12, "sources", "jar"}},
		{"anchor-lib-1.1.0-20261129.210811-3.jar.asc", true, SnapshotFile{"20261129.210811", 3, "", "jar.asc"}},
		{"anchor-lib-1.1.0-20261129.210811-3-dist.tar.gz", true, SnapshotFile{"20261129.210811", 3, "dist", "tar.gz"}},
		{"anchor-lib-1.1.0-SNAPSHOT.jar", false, SnapshotFile{}},
		{"anchor-lib-1.1.0-20261329.210811-2.jar", false, SnapshotFile{}}, // month 13
		{"anchor-lib-1.1.0-20261129.210811-.jar", false, SnapshotFile{}},
		{"anchor-lib-1.1.0-20261129.210811-2", false, SnapshotFile{}},
		{"anchor-lib-1.1.0-20261129.210811-2.", false, SnapshotFile{}},
		{"anchor-lib-1.1.0-20261129.210811-2-.jar", false, SnapshotFile{}},
		{"other-1.1.0-20261129.210811-2.jar", false, SnapshotFile{}},
	}
	for _, c := range cases {
		got, ok := ParseSnapshotFile(a, v, c.name)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: got %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if _, ok := ParseSnapshotFile(a, "1.1.0", "anchor-lib-1.1.0-20261129.210811-2.jar"); ok {
		t.Error("a release version has no timestamped files")
	}
	f, _ := ParseSnapshotFile(a, v, "anchor-lib-1.1.0-20261129.210811-2.jar")
	if f.Value(v) != "1.1.0-20261129.210811-2" || f.Updated() != "20261129210811" {
		t.Errorf("value %s updated %s", f.Value(v), f.Updated())
	}
}

func TestSplitChecksumName(t *testing.T) {
	t.Parallel()
	if b, a, ok := SplitChecksumName("x-1.0.jar.sha512"); !ok || b != "x-1.0.jar" || a != SHA512 {
		t.Errorf("split: %s %s %v", b, a, ok)
	}
	if _, _, ok := SplitChecksumName("x-1.0.jar"); ok {
		t.Error("not a sidecar")
	}
}
