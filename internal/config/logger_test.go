package config

import (
	"bytes"
	"io"
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
