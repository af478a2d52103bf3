package config

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// The process logger never writes the admin token, wherever a log line
// carries it (message, attribute, error text).
func TestLoggerRedactsAdminToken(t *testing.T) {
	const admin = "config-admin-token-9f8e7d6c5b4a3210"
	c, err := parse(t, "--admin-token", admin, "--log-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	log := c.Logger()
	os.Stderr = stderr
	log.Info("request with "+admin, "path", "/npm/acme/js/-/user/token/"+admin, "detail", "Bearer "+admin)
	w.Close()
	out, _ := io.ReadAll(r)
	if bytes.Contains(out, []byte(admin)) || !strings.Contains(string(out), "[REDACTED]") {
		t.Fatalf("log line: %s", out)
	}
}

func TestJobsLoggerDemotesInfo(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log := JobsLogger(base).With("component", "river")
	log.Info("producer: Producer job counts")
	log.Warn("job failed")
	if out := buf.String(); strings.Contains(out, "Producer job counts") || !strings.Contains(out, "job failed") || !strings.Contains(out, "component=river") {
		t.Fatalf("at INFO the job logger printed:\n%s", out)
	}
	buf.Reset()
	debug := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	JobsLogger(debug).Info("producer: Producer job counts")
	if !strings.Contains(buf.String(), "level=DEBUG") {
		t.Fatalf("at DEBUG the job logger printed %q", buf.String())
	}
}
