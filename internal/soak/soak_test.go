package soak_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/cluster"
	"github.com/artifact-registry/artifact-registry/internal/soak"
)

func TestMain(m *testing.M) { os.Exit(cluster.Main(m)) }

// TestSoak runs the mixed workload against three instances for
// SOAK_DURATION (default one minute; make soak runs ten) while one
// instance is killed and started again, PostgreSQL restarts and object
// storage refuses connections. The report goes to the log and to
// SOAK_REPORT (and its .json twin) when set; the instances' logs to
// SOAK_LOGDIR when set.
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	c := cluster.Start(t, cluster.Options{Instances: 3, LogDir: os.Getenv("SOAK_LOGDIR")})
	rep, err := soak.Run(context.Background(), soak.Config{
		BaseURL: c.URL, AdminToken: c.AdminToken, Duration: d, Faults: faults(c, d),
	})
	if err != nil {
		t.Fatal(err)
	}
	table := rep.Table()
	t.Log("\n" + table)
	writeReport(t, rep, table)

	for _, e := range rep.FaultErrors() {
		t.Errorf("fault not carried out: %s", e)
	}
	for _, kind := range []string{"oci", "npm", "maven"} {
		if rep.Acked[kind] == 0 {
			t.Errorf("no %s write was acknowledged", kind)
		}
	}
	if n := len(rep.Lost); n > 0 {
		t.Errorf("%d acknowledged writes lost", n)
	}
	if n := rep.StatusCount("500"); n > 0 {
		t.Errorf("%d answers were 500 (unavailability must answer 503)", n)
	}
	if n := rep.OutsideErrors(); n > 0 {
		t.Errorf("%d errors outside the fault windows", n)
	}
}

func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("SOAK_DURATION")
	if v == "" {
		return time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute {
		t.Fatalf("SOAK_DURATION=%q: a duration of at least 1m", v)
	}
	return d
}

// faults spreads one fault of each kind over the run; a long run holds
// them longer (storage out for 30 s).
func faults(c *cluster.Cluster, d time.Duration) []soak.Fault {
	killHold, pgHold, storageHold := 3*time.Second, 3*time.Second, 10*time.Second
	if d >= 5*time.Minute {
		killHold, pgHold, storageHold = 30*time.Second, 10*time.Second, 30*time.Second
	}
	at := func(f float64) time.Duration { return time.Duration(f * float64(d)) }
	return []soak.Fault{
		{
			Kind: "kill-instance", At: at(0.10), Hold: killHold,
			Inject: func(context.Context) error { return c.Kill(1) },
			Heal: func(ctx context.Context) error {
				if err := c.Start(1); err != nil {
					return err
				}
				return c.WaitBalanced(ctx)
			},
		},
		{
			Kind: "restart-postgres", At: at(0.35), Hold: pgHold,
			Inject: func(context.Context) error { return c.StopPostgres() },
			Heal:   func(context.Context) error { return c.StartPostgres() },
		},
		{
			Kind: "break-storage", At: at(0.60), Hold: storageHold,
			Inject: func(context.Context) error { c.BreakStorage(); return nil },
			Heal:   func(context.Context) error { c.HealStorage(); return nil },
		},
	}
}

func writeReport(t *testing.T, rep *soak.Report, table string) {
	path := os.Getenv("SOAK_REPORT")
	if path == "" {
		path = filepath.Join(t.ArtifactDir(), "soak-report.txt")
	}
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		t.Fatalf("write report: %v", err)
	}
	if err := os.WriteFile(path+".json", js, 0o644); err != nil {
		t.Fatalf("write report: %v", err)
	}
	t.Logf("report written to %s", path)
}
