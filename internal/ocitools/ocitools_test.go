package ocitools

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsBuild makes sure every pinned tool can be fetched and built here.
func TestToolsBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(testing.TB) string
		args []string
		want string
	}{
		{"crane", Crane, []string{"version"}, ""},
		{"oras", Oras, []string{"version"}, "Version"},
		{"conformance", Conformance, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path(t)
			if tc.args == nil {
				return
			}
			out, err := exec.Command(p, tc.args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", p, tc.args, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("%s %v: unexpected output %q", p, tc.args, out)
			}
		})
	}
}
