package npm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
)

// The merge of a virtual repository's packuments (virtual.go).

// mergeInput is one candidate's packument (the hosted full document or the
// upstream's, as cached), in resolution order.
type mergeInput struct {
	body []byte
	// keep, when not empty, narrows the versions (a stale remote copy).
	keep map[string]bool
	// admits tells whether the candidate's VERSION rules admit a version.
	admits func(string) bool
}

// merger assembles a merged packument in one pass over each input with
// the package's JSON scanner (jsonscan.go): versions are copied, their
// dist.tarball rewritten, never decoded into maps, so three documents of
// 1,000 versions merge in milliseconds.
type merger struct {
	name, base string
	corgi      bool
	versions   []byte
	taken      map[string]int
	order      []string
	times      map[string][]byte
	tags       map[string]string
	// top holds each input's other top-level members (full documents).
	top               [][][2][]byte
	created, modified time.Time
	vbuf, dbuf, sbuf  []byte
}

// mergePackuments merges the candidates' packuments of name: the first
// candidate wins per version and per dist-tag (a tag whose version the
// candidate does not serve is left to the next one), latest is the
// highest release served when no candidate's latest is, time merged,
// every dist.tarball under base. The other top-level members (readme,
// description, maintainers ...) are those of the candidate that supplies
// latest.
func mergePackuments(name string, inputs []mergeInput, base string, corgi bool) ([]byte, error) {
	size := 0
	for _, in := range inputs {
		size += len(in.body)
	}
	// Sized once: growing a buffer of megabytes by appends costs more
	// than the scan.
	m := &merger{name: name, base: base, corgi: corgi, taken: map[string]int{}, times: map[string][]byte{}, tags: map[string]string{},
		versions: make([]byte, 0, size+size/8)}
	for i, in := range inputs {
		if err := m.add(i, in); err != nil {
			return nil, err
		}
	}
	return m.finish()
}

// unquote is a JSON string's text (keys and short values).
func unquote(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

func (m *merger) add(i int, in mergeInput) error {
	var versions, tags, times []byte
	var top [][2][]byte
	var tbuf []byte
	err := eachMember(in.body, &tbuf, func(key, val []byte) error {
		switch {
		case keyIs(key, "versions"):
			versions = val
		case keyIs(key, "dist-tags"):
			tags = val
		case keyIs(key, "time"):
			times = val
		case m.corgi, keyIs(key, "_id"), keyIs(key, "name"), keyIs(key, "_rev"), keyIs(key, "_attachments"), keyIs(key, "users"):
			// No revision: nothing is unpublished through a virtual.
		default:
			top = append(top, [2][]byte{key, val})
		}
		tbuf = nil // val stays valid: the next compaction allocates anew
		return nil
	})
	if err != nil {
		return fmt.Errorf("packument %d: %w", i, err)
	}
	m.top = append(m.top, top)
	served := map[string]bool{}
	if versions != nil {
		err = eachMember(versions, &m.sbuf, func(key, val []byte) error {
			v, ok := unquote(key)
			if !ok || (len(in.keep) > 0 && !in.keep[v]) || !in.admits(v) {
				return nil
			}
			served[v] = true
			if _, dup := m.taken[v]; dup {
				return nil
			}
			m.taken[v] = i
			m.order = append(m.order, v)
			if len(m.order) > 1 {
				m.versions = append(m.versions, ',')
			}
			m.versions = append(append(m.versions, key...), ':')
			var err error
			m.versions, err = m.renderVersion(m.versions, val, v)
			return err
		})
		if err != nil {
			return fmt.Errorf("packument %d versions: %w", i, err)
		}
	}
	if tags != nil {
		var raw map[string]json.RawMessage
		if json.Unmarshal(tags, &raw) == nil {
			for tag, tv := range raw {
				if v, ok := unquote(tv); ok && served[v] {
					if _, set := m.tags[tag]; !set {
						m.tags[tag] = v
					}
				}
			}
		}
	}
	if times != nil {
		var buf []byte
		_ = eachMember(times, &buf, func(key, val []byte) error {
			switch {
			case keyIs(key, "created"):
				m.created = earliest(m.created, val)
			case keyIs(key, "modified"):
				m.modified = latestTime(m.modified, val)
			default:
				if v, ok := unquote(key); ok && m.taken[v] == i && served[v] {
					m.times[v] = append([]byte(nil), val...)
				}
			}
			return nil
		})
	}
	return nil
}

// renderVersion appends one version: its members (npm's install fields
// only when abbreviated), dist.tarball under the virtual's base.
func (m *merger) renderVersion(dst, raw []byte, version string) ([]byte, error) {
	dst = append(dst, '{')
	n, hasFlag, installs := 0, false, false
	err := eachMember(raw, &m.vbuf, func(key, val []byte) error {
		plain := bytes.IndexByte(key, '\\') < 0
		if m.corgi {
			if keyIs(key, "scripts") {
				installs = scriptsInstall(val)
			}
			if !plain || !abbreviatedSet[string(key[1:len(key)-1])] {
				return nil
			}
			hasFlag = hasFlag || keyIs(key, "hasInstallScript")
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(append(dst, key...), ':')
		if !keyIs(key, "dist") {
			dst = append(dst, val...)
			return nil
		}
		var err error
		dst, err = m.renderDist(dst, val, version)
		return err
	})
	if err != nil {
		return nil, err
	}
	if m.corgi && installs && !hasFlag {
		dst = append(dst, `,"hasInstallScript":true`...)
	}
	return append(dst, '}'), nil
}

// renderDist appends a version's dist with its tarball under the base.
func (m *merger) renderDist(dst, dist []byte, version string) ([]byte, error) {
	dst = append(dst, '{')
	var listed string
	err := eachMember(dist, &m.dbuf, func(key, val []byte) error {
		if keyIs(key, "tarball") {
			listed, _ = unquote(val)
			return nil
		}
		dst = append(append(append(dst, key...), ':'), val...)
		dst = append(dst, ',')
		return nil
	})
	if err != nil {
		return nil, err
	}
	dst = append(dst, `"tarball":`...)
	dst = appendJSONString(dst, m.base+servedFile(m.name, version, remoteDist{Tarball: listed}))
	return append(dst, '}'), nil
}

// scriptsInstall tells whether a scripts object runs at install.
func scriptsInstall(scripts []byte) bool {
	found := false
	var buf []byte
	_ = eachMember(scripts, &buf, func(key, _ []byte) error {
		found = found || keyIs(key, "preinstall") || keyIs(key, "install") || keyIs(key, "postinstall")
		return nil
	})
	return found
}

func (m *merger) finish() ([]byte, error) {
	if _, ok := m.tags["latest"]; !ok {
		if l := highestRelease(m.taken); l != "" {
			m.tags["latest"] = l
		}
	}
	tb, err := json.Marshal(m.tags)
	if err != nil {
		return nil, err
	}
	nameJSON := jsonString(m.name)
	size := len(m.versions) + 64*len(m.order) + 4096
	for _, top := range m.top {
		for _, kv := range top {
			size += len(kv[0]) + len(kv[1]) + 2
		}
	}
	out := bytes.NewBuffer(make([]byte, 0, size))
	if m.corgi {
		out.WriteString(`{"name":`)
		out.Write(nameJSON)
		if !m.modified.IsZero() {
			out.WriteString(`,"modified":`)
			out.Write(jsonString(formatTime(m.modified)))
		}
	} else {
		out.WriteString(`{"_id":`)
		out.Write(nameJSON)
		out.WriteString(`,"name":`)
		out.Write(nameJSON)
		if l, ok := m.tags["latest"]; ok {
			for _, kv := range m.top[m.taken[l]] {
				out.WriteByte(',')
				out.Write(kv[0])
				out.WriteByte(':')
				out.Write(kv[1])
			}
		}
	}
	out.WriteString(`,"dist-tags":`)
	out.Write(tb)
	out.WriteString(`,"versions":{`)
	out.Write(m.versions)
	out.WriteByte('}')
	if !m.corgi {
		out.WriteString(`,"time":{`)
		n := 0
		sep := func() {
			if n > 0 {
				out.WriteByte(',')
			}
			n++
		}
		if !m.created.IsZero() {
			sep()
			out.WriteString(`"created":`)
			out.Write(jsonString(formatTime(m.created)))
		}
		if !m.modified.IsZero() {
			sep()
			out.WriteString(`"modified":`)
			out.Write(jsonString(formatTime(m.modified)))
		}
		for _, v := range m.order {
			if t, ok := m.times[v]; ok {
				sep()
				out.Write(jsonString(v))
				out.WriteByte(':')
				out.Write(t)
			}
		}
		out.WriteByte('}')
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

func parseTime(raw json.RawMessage) (time.Time, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func earliest(cur time.Time, raw json.RawMessage) time.Time {
	if t, ok := parseTime(raw); ok && (cur.IsZero() || t.Before(cur)) {
		return t
	}
	return cur
}

func latestTime(cur time.Time, raw json.RawMessage) time.Time {
	if t, ok := parseTime(raw); ok && t.After(cur) {
		return t
	}
	return cur
}

// highestRelease is the highest version without a prerelease, or without
// one, the highest version ("" when none parses).
func highestRelease[V any](versions map[string]V) string {
	var best, bestPre *npmsemver.Version
	for v := range versions {
		pv, ok := npmsemver.ParseVersion(v)
		if !ok {
			continue
		}
		if pv.IsPrerelease() {
			if bestPre == nil || pv.Compare(*bestPre) > 0 {
				bestPre = &pv
			}
		} else if best == nil || pv.Compare(*best) > 0 {
			best = &pv
		}
	}
	switch {
	case best != nil:
		return best.String()
	case bestPre != nil:
		return bestPre.String()
	}
	return ""
}
