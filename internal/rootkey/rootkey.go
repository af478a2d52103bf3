// Package rootkey opens the deployment root key that wraps the namespace
// keys of store/credentials: a gocloud.dev/secrets keeper URL
// (--root-key-url), or, for the embedded default only, a key generated
// once into a file under the data directory that only its owner can read.
//
// A root key URL can be key material itself (base64key://<key>), so it is
// never logged, never put in an error and never stored: what the database
// records in namespace_encryption_keys.root_key_uri, and what logs show, is
// the key's URI, the URL without user information, or for base64key a
// fingerprint of the key.
package rootkey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"gocloud.dev/secrets"
	// The keeper drivers a root key URL may name.
	_ "gocloud.dev/secrets/awskms"
	_ "gocloud.dev/secrets/azurekeyvault"
	_ "gocloud.dev/secrets/gcpkms"
	_ "gocloud.dev/secrets/hashivault"
	"gocloud.dev/secrets/localsecrets"

	"github.com/artifact-registry/artifact-registry/internal/redact"
	"github.com/artifact-registry/artifact-registry/store/credentials"
)

// FileName is the generated key's file in the data directory.
const FileName = "root-key"

// Path is where the generated key of dataDir lives.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Schemes are the keeper URL schemes accepted.
var Schemes = []string{localsecrets.Scheme, "awskms", "gcpkms", "azurekeyvault", "hashivault"}

// Settings say where the keys come from.
type Settings struct {
	// URL is --root-key-url: the current root key.
	URL string
	// Previous are --previous-root-key-urls: older root keys still
	// wrapping namespace keys until a root-key rotation rewraps them.
	Previous []string
	// DataDir holds the generated key when URL is empty and Embedded.
	DataDir string
	// Embedded: the registry runs on its private database (no
	// DATABASE_URL), the only case where a key is generated; instances
	// sharing an external database must share their root key.
	Embedded bool
}

// Keys are the opened root keys.
type Keys struct {
	// Root is nil when no key is configured on an external database:
	// storing credentials is then refused (credentials.CodeRootKeyMissing).
	Root     *credentials.RootKey
	Previous []*credentials.RootKey
	// File is the generated key's path when Root is that key, and Created
	// reports that this call generated it.
	File    string
	Created bool
}

// Close closes every keeper.
func (k *Keys) Close() {
	for _, r := range append([]*credentials.RootKey{k.Root}, k.Previous...) {
		if r != nil {
			_ = r.Keeper.Close()
		}
	}
}

// Load opens the keys of s.
func Load(ctx context.Context, s Settings) (*Keys, error) {
	k := &Keys{}
	rootURL := s.URL
	if rootURL == "" && s.Embedded {
		var err error
		rootURL, k.Created, err = LoadOrCreate(s.DataDir)
		if err != nil {
			return nil, err
		}
		k.File = Path(s.DataDir)
	}
	if rootURL != "" {
		r, err := Open(ctx, rootURL)
		if err != nil {
			return nil, fmt.Errorf("--root-key-url: %w", err)
		}
		k.Root = r
	}
	for i, u := range s.Previous {
		r, err := Open(ctx, u)
		if err != nil {
			k.Close()
			return nil, fmt.Errorf("--previous-root-key-urls, entry %d: %w", i+1, err)
		}
		k.Previous = append(k.Previous, r)
	}
	return k, nil
}

// Open opens one root key URL. Errors never quote the URL.
func Open(ctx context.Context, raw string) (*credentials.RootKey, error) {
	uri, err := URI(raw)
	if err != nil {
		return nil, err
	}
	keeper, err := secrets.OpenKeeper(ctx, raw)
	if err != nil {
		// The drivers' errors name the scheme, not the key material
		// (localsecrets takes care not to quote its URL).
		return nil, fmt.Errorf("open root key %s: %s", uri, redact.Text(err.Error()))
	}
	return &credentials.RootKey{URI: uri, Keeper: keeper}, nil
}

// fingerprintDomain separates the fingerprint from any other hash of the
// key.
const fingerprintDomain = "artifact-registry root key fingerprint\x00"

// URI is what the database records for the root key URL raw, and what logs
// show: raw without user information, or for base64key a fingerprint of
// the key (the first 16 bytes of a SHA-256 of it, hex). It registers any
// key material of raw with the log redaction.
func URI(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "", errors.New("not a URL (scheme://...)")
	}
	known := false
	for _, s := range Schemes {
		known = known || u.Scheme == s
	}
	if !known {
		return "", fmt.Errorf("scheme %q is not one of %s", u.Scheme, strings.Join(Schemes, ", "))
	}
	if u.Scheme == localsecrets.Scheme {
		redact.Secret(raw)
		redact.Secret(u.Host)
		if u.Host == "" {
			// localsecrets would make up a random key on every start,
			// and nothing stored under it would open after a restart.
			return "", errors.New("base64key:// needs a key: base64key://<32 random bytes, URL-safe base64> (e.g. openssl rand 32 | basenc --base64url)")
		}
		key, err := localsecrets.Base64Key(u.Host)
		if err != nil {
			return "", errors.New("base64key:// needs 32 bytes of URL-safe base64 (e.g. openssl rand 32 | basenc --base64url)")
		}
		sum := sha256.Sum256(append([]byte(fingerprintDomain), key[:]...))
		return localsecrets.Scheme + "://sha256:" + hex.EncodeToString(sum[:16]), nil
	}
	if p, ok := u.User.Password(); ok {
		redact.Secret(p)
	}
	u.User = nil
	s := u.String()
	if n := utf8.RuneCountInString(s); n > credentials.MaxRootKeyURI {
		return "", fmt.Errorf("the URL is %d characters long; at most %d are stored with each key", n, credentials.MaxRootKeyURI)
	}
	return s, nil
}

// LoadOrCreate returns the base64key URL of the key stored under dataDir,
// generating it first when there is none (created reports that). A key
// is never replaced: losing it loses every stored credential.
func LoadOrCreate(dataDir string) (keyURL string, created bool, err error) {
	path := Path(dataDir)
	keyURL, err = read(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return keyURL, false, err
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return "", false, fmt.Errorf("root key: random bytes: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", false, fmt.Errorf("root key: create %s: %w", dataDir, err)
	}
	tmp, err := os.CreateTemp(dataDir, "."+FileName+"-*") // mode 0600
	if err != nil {
		return "", false, fmt.Errorf("root key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(base64.URLEncoding.EncodeToString(key[:]) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, fmt.Errorf("root key: write %s: %w", tmp.Name(), err)
	}
	// A link, unlike a rename, never replaces a key another process
	// stored first: that one wins and is read back.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("root key: %w", err)
	} else if err != nil {
		keyURL, err = read(path)
		return keyURL, false, err
	}
	keyURL, err = read(path)
	return keyURL, err == nil, err
}

// read returns the base64key URL of the key file at path. A file others
// may read or write is refused, as ssh refuses such a key.
func read(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("root key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("root key: %s is accessible to other users (mode %v): run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("root key: %w", err)
	}
	enc := strings.TrimSpace(string(b))
	if _, err := localsecrets.Base64Key(enc); err != nil {
		return "", fmt.Errorf("root key: %s does not hold 32 bytes of URL-safe base64", path)
	}
	redact.Secret(enc)
	return localsecrets.Scheme + "://" + enc, nil
}
