package legacytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TokenServer is the token service of a legacy registry configured with
// distribution's `auth: token`: it checks HTTP Basic credentials and
// issues ES256 JWTs, signed by a test key whose self-signed certificate
// the registry trusts (auth.token.rootcertbundle), granting the scopes
// asked for. The registry verifying the tokens is the real one.
type TokenServer struct {
	URL      string // base URL; the realm is URL+"/token"
	Service  string
	Issuer   string
	Username string
	Password string
	// ExpiresIn is the lifetime of the tokens issued, in seconds.
	ExpiresIn int

	accessToken bool

	key      *ecdsa.PrivateKey
	certDER  []byte
	certFile string

	mu     sync.Mutex
	issued []string // the scope parameters of each token issued
	denied int
}

// StartTokenServer starts a token service for user/password.
func StartTokenServer(t testing.TB, user, password string) *TokenServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "legacytest token issuer"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ts := &TokenServer{Service: "legacy-registry", Issuer: "legacytest", Username: user, Password: password,
		ExpiresIn: 300, key: key, certDER: der, certFile: filepath.Join(t.TempDir(), "root.pem")}
	if err := os.WriteFile(ts.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(srv.Close)
	ts.URL = srv.URL
	return ts
}

// RegistryConfig is the auth section for StartRegistryConfig.
func (ts *TokenServer) RegistryConfig() string {
	return fmt.Sprintf("auth:\n  token:\n    realm: %s/token\n    service: %s\n    issuer: %s\n    rootcertbundle: %s\n",
		ts.URL, ts.Service, ts.Issuer, ts.certFile)
}

// UseAccessToken makes the answers {"access_token":…} instead of
// {"token":…}, the other form the token auth spec allows.
func (ts *TokenServer) UseAccessToken() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.accessToken = true
}

// Issued returns the scope parameters of the tokens issued so far.
func (ts *TokenServer) Issued() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.issued...)
}

// Denied counts token requests refused for bad credentials.
func (ts *TokenServer) Denied() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.denied
}

func (ts *TokenServer) serve(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	user, pass, want, expires, access := ts.Username, ts.Password, ts.Service, ts.ExpiresIn, ts.accessToken
	ts.mu.Unlock()
	if u, p, ok := r.BasicAuth(); r.URL.Path != "/token" || !ok || u != user || p != pass {
		ts.mu.Lock()
		ts.denied++
		ts.mu.Unlock()
		http.Error(w, `{"details":"bad credentials"}`, http.StatusUnauthorized)
		return
	}
	if r.URL.Query().Get("service") != want {
		http.Error(w, "unknown service", http.StatusBadRequest)
		return
	}
	scopes := r.URL.Query()["scope"]
	tok, err := ts.sign(user, scopes, expires)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ts.mu.Lock()
	ts.issued = append(ts.issued, strings.Join(scopes, " "))
	ts.mu.Unlock()
	field := "token"
	if access {
		field = "access_token"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{field: tok, "expires_in": expires, "issued_at": time.Now().UTC().Format(time.RFC3339)})
}

type accessEntry struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// sign issues a JWT granting every scope asked ("repository:name:a,b").
func (ts *TokenServer) sign(subject string, scopes []string, expires int) (string, error) {
	access := []accessEntry{}
	for _, s := range scopes {
		for _, one := range strings.Fields(s) {
			i, j := strings.Index(one, ":"), strings.LastIndex(one, ":")
			if i < 0 || i == j {
				return "", fmt.Errorf("bad scope %q", one)
			}
			access = append(access, accessEntry{Type: one[:i], Name: one[i+1 : j], Actions: strings.Split(one[j+1:], ",")})
		}
	}
	now := time.Now()
	header := map[string]any{"alg": "ES256", "typ": "JWT", "x5c": []string{base64.StdEncoding.EncodeToString(ts.certDER)}}
	claims := map[string]any{
		"iss": ts.Issuer, "sub": subject, "aud": ts.Service,
		"exp": now.Add(time.Duration(expires) * time.Second).Unix(), "nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(),
		"jti": fmt.Sprintf("%d", now.UnixNano()), "access": access,
	}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, ts.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + enc.EncodeToString(sig), nil
}
