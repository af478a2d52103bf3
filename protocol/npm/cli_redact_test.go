package npm

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

// logBuffer collects log output from concurrent requests.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNpmCLISecretsStayOutOfLogs: npm logout sends the token it drops in
// the URL path (DELETE /-/user/token/<token>), npm token revoke a whole
// secret in its path too (DELETE /-/npm/v1/tokens/token/<secret>). With
// the real CLI and every log line at debug level captured (the request
// log, npm's own), no secret appears in the log: not an access token, not
// the admin token. The log still shows the requests, redacted.
func TestNpmCLISecretsStayOutOfLogs(t *testing.T) {
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, envOptions{Options: Options{Logger: logger}})
	work := t.TempDir()

	// npm logout with an access token: the token is revoked, and logged
	// only redacted.
	secret := e.token(t, "ci", enum.TokenScopeWrite)
	user := e.newNPMToken(t, "js", secret)
	if out := user.must(work, "whoami"); strings.TrimSpace(out) != "ci" {
		t.Fatalf("whoami: %q", out)
	}
	user.must(work, "logout")
	if rc, _ := os.ReadFile(filepath.Join(user.home, ".npmrc")); strings.Contains(string(rc), secret) {
		t.Fatalf("the token is still in .npmrc after logout")
	}
	if out := e.newNPMToken(t, "js", secret).fails(work, "whoami"); !strings.Contains(out, "401") {
		t.Errorf("the token still works after logout: %s", out)
	}

	// npm token revoke with a whole secret, as the admin.
	other := e.token(t, "other", enum.TokenScopeRead)
	admin := e.newNPM(t, "js", true)
	admin.must(work, "token", "revoke", other)
	if out := e.newNPMToken(t, "js", other).fails(work, "whoami"); !strings.Contains(out, "401") {
		t.Errorf("the token still works after npm token revoke: %s", out)
	}

	// npm logout with the admin token (not revoked, dropped from .npmrc).
	admin.must(work, "logout")

	log := logs.String()
	for name, s := range map[string]string{"access token": secret, "revoked token": other, "admin token": testToken} {
		if strings.Contains(log, s) {
			t.Errorf("the log holds the %s:\n%s", name, log)
		}
	}
	for _, want := range []string{
		"path=/npm/acme/js/-/user/token/[REDACTED]",
		"path=/npm/acme/js/-/npm/v1/tokens/token/[REDACTED]",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}
