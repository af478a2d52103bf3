package npmpublish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
)

// fuzzMaxTarball and fuzzMaxUnpacked are the tarball limits of
// FuzzParsePublish, small so that the fuzzer reaches them.
const (
	fuzzMaxTarball  = 4096
	fuzzMaxUnpacked = 64 << 10
)

// FuzzParsePublish checks what PUT /<name> does with a body before it
// writes anything: Split, the tarball's decoding and inspection (Decoder,
// into memory here instead of the blob upload), ParseDocument, CheckName
// and Validate. A document it accepts carries
// exactly one attachment whose data decodes as base64 to the stored
// tarball, a gzip-compressed tar archive within the limit whose digests
// are the ones the document declares and the ones stored; the stored
// package.json is a JSON object naming the package and the version, text
// PostgreSQL can store; every dist-tag points at that version. A refusal
// is an *Error (npm's 400 or 413).
func FuzzParsePublish(f *testing.F) {
	for _, s := range publishSeeds(f) {
		f.Add(s.name, s.body)
	}
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		pub, tgz, err := parsePublish(name, body)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("refused with %v: a bad document is a client error", err)
			}
			return
		}
		if pub == nil {
			return // no attachment: a metadata update, not a publish
		}
		checkPublication(t, name, body, pub, tgz)
	})
}

// parsePublish runs what the npm protocol does with a body before the
// store, the tarball received into memory.
func parsePublish(name string, body []byte) (*Publication, []byte, error) {
	var tgz []byte
	var facts *Facts
	meta, err := Split(bytes.NewReader(body), MetadataAllowance, func(_ string, data io.Reader) error {
		var err error
		tgz, facts, err = receiveInMemory(data, fuzzMaxTarball, fuzzMaxUnpacked)
		return err
	})
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil, malformed("unexpected end of the body")
	}
	if err != nil {
		return nil, nil, err
	}
	doc, err := ParseDocument(meta)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckName(name, doc); err != nil {
		return nil, nil, err
	}
	if len(doc.Attachments) == 0 {
		return nil, nil, nil
	}
	if facts == nil {
		return nil, nil, refuse("the attachment is empty")
	}
	pub, err := Validate(name, doc, *facts, "fuzz")
	return pub, tgz, err
}

// receiveInMemory is the protocol's receipt of a tarball with a buffer in
// place of the blob upload.
func receiveInMemory(data io.Reader, maxTarball, maxUnpacked int64) ([]byte, *Facts, error) {
	d := NewDecoder(data, maxTarball, maxUnpacked)
	var buf bytes.Buffer
	_, err := io.Copy(&buf, d)
	facts, err := d.Finish(err, int64(buf.Len()), nil)
	if err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), &facts, nil
}

func checkPublication(t *testing.T, name string, body []byte, pub *Publication, tgz []byte) {
	t.Helper()
	doc := decodeExactly(t, body)
	if len(doc.Attachments) != 1 || len(doc.Versions) != 1 {
		t.Fatalf("accepted %d attachments and %d versions", len(doc.Attachments), len(doc.Versions))
	}
	for _, a := range doc.Attachments {
		var data string
		if err := json.Unmarshal(a["data"], &data); err != nil {
			t.Fatalf("accepted an attachment whose data is not a string: %s", a["data"])
		}
		decoded, err := base64.StdEncoding.DecodeString(data)
		if err != nil || !bytes.Equal(decoded, tgz) {
			t.Fatalf("accepted an attachment that does not decode to the stored tarball: %v", err)
		}
	}
	if len(tgz) == 0 || len(tgz) > fuzzMaxTarball {
		t.Fatalf("accepted a tarball of %d bytes (limit %d)", len(tgz), fuzzMaxTarball)
	}
	if err := readTarGz(tgz); err != nil {
		t.Fatalf("accepted a tarball that does not read: %v", err)
	}
	integrity, shasum := tarballDigests(tgz)
	var dist struct {
		Dist struct {
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
	}
	raw, ok := doc.Versions[pub.Version]
	if !ok || !npmsemver.ValidVersion(pub.Version) || json.Unmarshal(raw, &dist) != nil {
		t.Fatalf("accepted version %q", pub.Version)
	}
	if dist.Dist.Shasum != "" && !strings.EqualFold(dist.Dist.Shasum, shasum) {
		t.Fatalf("accepted dist.shasum %q for a tarball of SHA-1 %s", dist.Dist.Shasum, shasum)
	}
	for _, e := range strings.Fields(dist.Dist.Integrity) {
		if strings.HasPrefix(e, "sha512-") && strings.SplitN(e, "?", 2)[0] != integrity {
			t.Fatalf("accepted dist.integrity %q for a tarball of %s", e, integrity)
		}
	}
	for tag, v := range doc.DistTags {
		if v != pub.Version || !slices.Contains(pub.Tags, tag) {
			t.Fatalf("dist-tags[%q] = %q, the stored tags are %q for %s", tag, v, pub.Tags, pub.Version)
		}
	}
	checkStoredPackageJSON(t, name, pub, integrity, shasum)
}

// exactDocument is a publish document decoded by its exact member names
// (as npm's JavaScript reads it), duplicates keeping the last.
type exactDocument struct {
	DistTags    map[string]string
	Versions    map[string]json.RawMessage
	Attachments map[string]map[string]json.RawMessage
}

func decodeExactly(t *testing.T, body []byte) exactDocument {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("accepted a body that does not decode: %v", err)
	}
	var doc exactDocument
	for key, v := range map[string]any{"dist-tags": &doc.DistTags, "versions": &doc.Versions, "_attachments": &doc.Attachments} {
		if raw, ok := top[key]; ok {
			if err := json.Unmarshal(raw, v); err != nil {
				t.Fatalf("accepted a body whose %s does not decode: %v", key, err)
			}
		}
	}
	return doc
}

func checkStoredPackageJSON(t *testing.T, name string, pub *Publication, integrity, shasum string) {
	t.Helper()
	if err := storableText(pub.PackageJSON); err != nil {
		t.Fatalf("stored package.json is not text PostgreSQL stores: %v", err)
	}
	var pj struct {
		ID      string `json:"_id"`
		Name    string `json:"name"`
		Version string `json:"version"`
		Dist    struct {
			Integrity string `json:"integrity"`
			Shasum    string `json:"shasum"`
		} `json:"dist"`
		Attachments json.RawMessage `json:"_attachments"`
	}
	if err := json.Unmarshal(pub.PackageJSON, &pj); err != nil {
		t.Fatalf("stored package.json does not decode: %v", err)
	}
	if pj.Name != name || pj.Version != pub.Version || pj.ID != name+"@"+pub.Version {
		t.Fatalf("stored package.json names %q %q %q for %s@%s", pj.ID, pj.Name, pj.Version, name, pub.Version)
	}
	if pj.Dist.Integrity != integrity || pj.Dist.Shasum != shasum {
		t.Fatalf("stored dist %+v, the tarball is %s %s", pj.Dist, integrity, shasum)
	}
	if pj.Attachments != nil {
		t.Fatalf("stored package.json keeps _attachments")
	}
}

// storableText is what PostgreSQL requires of jsonb text: valid UTF-8,
// no \u0000 escape, and \u escapes of UTF-16 surrogates only in pairs.
// It reads the JSON text with the strings it decodes itself, not with
// encoding/json, which replaces what PostgreSQL refuses.
func storableText(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("invalid UTF-8")
	}
	var pendingHigh bool
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			if pendingHigh {
				return fmt.Errorf("a high surrogate without its low half at %d", i)
			}
			continue
		}
		i++
		if i >= len(b) || b[i] != 'u' {
			if pendingHigh {
				return fmt.Errorf("a high surrogate without its low half at %d", i)
			}
			continue
		}
		if i+5 > len(b) {
			return fmt.Errorf("a truncated \\u escape at %d", i)
		}
		v, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 16)
		if err != nil {
			return fmt.Errorf("an invalid \\u escape at %d", i)
		}
		r := rune(v)
		i += 4
		switch {
		case r == 0:
			return errors.New(`the escape \u0000`)
		case pendingHigh && (r < 0xdc00 || r > 0xdfff):
			return fmt.Errorf("a high surrogate followed by %U", r)
		case pendingHigh:
			pendingHigh = false
		case r >= 0xd800 && r <= 0xdbff:
			pendingHigh = true
		case utf16.IsSurrogate(r):
			return fmt.Errorf("a low surrogate %U without its high half", r)
		}
	}
	if pendingHigh {
		return errors.New("a high surrogate at the end")
	}
	return nil
}

func tarballDigests(tgz []byte) (integrity, shasum string) {
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	return "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), hex.EncodeToString(s1[:])
}

// readTarGz reads a .tgz to the end with the standard library alone.
func readTarGz(tgz []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		if _, err := tr.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return err
		}
	}
}

type publishSeed struct {
	name string
	body []byte
}

func publishSeeds(t testing.TB) []publishSeed {
	valid := npmpack.NewPublish(t, "fuzz-pkg", "1.0.0", nil)
	scoped := npmpack.NewPublish(t, "@scope/pkg", "2.0.0-rc.1", map[string]any{"scripts": map[string]string{"install": "x"}})
	scoped.Tags = []string{"latest", "next"}
	withNUL := npmpack.NewPublish(t, "nul", "1.0.0", map[string]any{"description": "a\u0000b"})
	body := valid.Body("http://registry/")
	seeds := []publishSeed{
		{valid.Name, body},
		{scoped.Name, scoped.Body("http://registry/")},
		{withNUL.Name, withNUL.Body("http://registry/")},
		{"other", body},
		{valid.Name, []byte(`{"name":"fuzz-pkg","versions":{"1.0.0":{"deprecated":"no"}}}`)},
		{valid.Name, []byte(`{"_attachments":{"a.tgz":{"data":"!!!"}},"name":"fuzz-pkg","versions":{"1.0.0":{"name":"fuzz-pkg","version":"1.0.0","dist":{"shasum":"x"}}}}`)},
		{valid.Name, []byte(`{"_attachments":{"a.tgz":{"data":"","length":-1}},"name":"fuzz-pkg","versions":{"1.0.0":{"name":"fuzz-pkg","version":"1.0.0","dist":{}}}}`)},
		{valid.Name, []byte(`{"_attachments":{"a.tgz":{"data":"H4sIAAAAAAAAAwMAAAAAAAAAAAA=","length":20}},"name":"fuzz-pkg","versions":{"1.0.0":{"name":"fuzz-pkg","version":"1.0.0","dist":{"shasum":"x"}}}}`)},
	}
	// The same document with its data wrapped (base64 with newlines), with
	// the integrity in uppercase, with a wrong tag, with text PostgreSQL
	// cannot store in the version's package.json, with its attachment
	// named twice.
	for _, edit := range []func(string) string{
		func(s string) string { return strings.Replace(s, `"data":"H4sI`, `"data":"H4\nsI`, 1) },
		func(s string) string { return strings.Replace(s, `"shasum":"`, `"shasum":"A`, 1) },
		func(s string) string { return strings.Replace(s, `"latest":"1.0.0"`, `"latest":"1.0.1"`, 1) },
		func(s string) string {
			return strings.Replace(s, `"integrity":"sha512-`, `"integrity":"sha1-AAAA sha512-`, 1)
		},
		func(s string) string { return strings.Replace(s, `"main":"index.js"`, `"main":"index\ud800.js"`, 1) },
		func(s string) string { return strings.Replace(s, `"main":"index.js"`, `"main":"index\u0000.js"`, 1) },
		func(s string) string { return strings.Replace(s, `"main":"index.js"`, "\"main\":\"index\xff.js\"", 1) },
		func(s string) string { return strings.Replace(s, `"main":"index.js"`, `"\ud800":"index.js"`, 1) },
		func(s string) string {
			return strings.Replace(s, `"_attachments":{"fuzz-pkg-1.0.0.tgz":`, `"_attachments":{"fuzz-pkg-1.0.0.tgz":null,"fuzz-pkg-1.0.0.tgz":`, 1)
		},
		func(s string) string {
			return strings.Replace(s, `}},"_id":`, `},"fuzz-pkg-1.0.0.tgz":null},"_id":`, 1)
		},
	} {
		seeds = append(seeds, publishSeed{valid.Name, []byte(edit(string(body)))})
	}
	return seeds
}

// TestParsePublishOversizeAttachment checks that an attachment over the
// limit is refused while it streams: no allocation proportional to its
// size.
func TestParsePublishOversizeAttachment(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	p := npmpack.NewPublish(t, "big", "1.0.0", nil)
	head, tail, ok := bytes.Cut(p.Body("http://registry/"), []byte(base64.StdEncoding.EncodeToString(p.Tarball)))
	if !ok {
		t.Fatal("the body has no data string")
	}
	body := io.MultiReader(bytes.NewReader(head), streamedTarball(t, 48<<20), bytes.NewReader(tail))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Split(body, MetadataAllowance, func(_ string, data io.Reader) error {
		d := NewDecoder(data, 1<<20, 1<<30)
		_, err := io.Copy(io.Discard, d)
		_, err = d.Finish(err, 0, nil)
		return err
	})
	runtime.ReadMemStats(&after)
	var pe *Error
	if !errors.As(err, &pe) || !pe.TooLarge {
		t.Fatalf("a 48 MiB attachment over a 1 MiB limit: %v, want TooLarge", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("refusing a 48 MiB attachment allocated %d bytes", grew)
	}
}

// streamedTarball is the base64 of a stored (uncompressed) .tgz with one
// file of size zero bytes, generated while it is read.
func streamedTarball(t *testing.T, size int64) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		b64 := base64.NewEncoder(base64.StdEncoding, pw)
		zw, _ := gzip.NewWriterLevel(b64, gzip.NoCompression)
		tw := tar.NewWriter(zw)
		err := tw.WriteHeader(&tar.Header{Name: "package/big", Mode: 0o644, Size: size})
		if err == nil {
			_, err = io.Copy(tw, io.LimitReader(zeros{}, size))
		}
		for _, c := range []io.Closer{tw, zw, b64} {
			if err == nil {
				err = c.Close()
			}
		}
		_ = pw.CloseWithError(err)
	}()
	t.Cleanup(func() { _ = pr.Close() })
	return pr
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestPublishSeedsAccepted makes sure FuzzParsePublish starts from
// documents the parser accepts, so that its properties are exercised.
func TestPublishSeedsAccepted(t *testing.T) {
	t.Parallel()
	for _, s := range publishSeeds(t)[:2] {
		if pub, _, err := parsePublish(s.name, s.body); err != nil || pub == nil {
			t.Fatalf("seed publish of %s refused: %v", s.name, err)
		}
	}
}
