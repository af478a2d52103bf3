package npm

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
	"github.com/artifact-registry/artifact-registry/upstream"
)

// Rendering of a cached upstream packument. The stored document is the
// upstream's, verbatim; what clients get is derived from it at serve time:
// dist.tarball of every version points at this registry, the abbreviated
// document keeps npm's install fields, dist-tags never point at a version
// that is not listed, and a stale copy may be narrowed to the versions
// whose tarballs are cached.

// remotePackument is a parsed upstream packument: its top-level members
// and its versions, each kept as raw JSON.
type remotePackument struct {
	top      map[string]json.RawMessage
	versions map[string]json.RawMessage
	tags     map[string]string
}

func parseRemote(body []byte) (*remotePackument, error) {
	p := &remotePackument{}
	if err := json.Unmarshal(body, &p.top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if raw, ok := p.top["versions"]; ok {
		if err := json.Unmarshal(raw, &p.versions); err != nil {
			return nil, fmt.Errorf("versions: %w", err)
		}
	}
	if p.versions == nil {
		p.versions = map[string]json.RawMessage{}
	}
	if raw, ok := p.top["dist-tags"]; ok {
		var tags map[string]json.RawMessage
		if err := json.Unmarshal(raw, &tags); err != nil {
			return nil, fmt.Errorf("dist-tags: %w", err)
		}
		p.tags = make(map[string]string, len(tags))
		for k, v := range tags {
			var s string
			if json.Unmarshal(v, &s) == nil {
				p.tags[k] = s
			}
		}
	}
	return p, nil
}

// sanitizedTags are the dist-tags restricted to versions in keep (nil:
// every listed version): tags pointing at a version that is not served
// are dropped, and latest, when dropped or missing, is recomputed as the
// highest release (or, without one, the highest version) served.
func (p *remotePackument) sanitizedTags(keep map[string]bool) map[string]string {
	served := func(v string) bool {
		_, listed := p.versions[v]
		return listed && (keep == nil || keep[v])
	}
	out := make(map[string]string, len(p.tags))
	for k, v := range p.tags {
		if served(v) {
			out[k] = v
		}
	}
	if _, ok := out["latest"]; !ok {
		var best, bestPre *npmsemver.Version
		for v := range p.versions {
			if !served(v) {
				continue
			}
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
			out["latest"] = best.String()
		case bestPre != nil:
			out["latest"] = bestPre.String()
		}
	}
	return out
}

// remoteDist is a version's dist as the upstream lists it.
type remoteDist struct {
	Tarball   string `json:"tarball,omitempty"`
	Integrity string `json:"integrity,omitempty"`
	Shasum    string `json:"shasum,omitempty"`
}

// expect is the digest a tarball must match: dist.integrity's strongest
// entry, else dist.shasum.
func (d remoteDist) expect() (upstream.Digest, error) {
	if d.Integrity != "" {
		dg, err := upstream.ParseIntegrity(d.Integrity)
		if err == nil {
			return dg, nil
		}
		if d.Shasum == "" {
			return upstream.Digest{}, err
		}
	}
	if d.Shasum != "" {
		sum, err := hex.DecodeString(strings.ToLower(d.Shasum))
		if err != nil || len(sum) != 20 {
			return upstream.Digest{}, errors.New("dist.shasum is not a sha1 in hex")
		}
		return upstream.Digest{Algorithm: upstream.SHA1, Sum: sum}, nil
	}
	return upstream.Digest{}, errors.New("neither dist.integrity nor dist.shasum")
}

func versionDist(raw json.RawMessage) (remoteDist, bool) {
	var v struct {
		Dist *remoteDist `json:"dist"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Dist == nil {
		return remoteDist{}, false
	}
	return *v.Dist, true
}

// servedFile is the file name a version's tarball is served under: the
// upstream URL's last segment, or the registry's own name when that is
// not a plausible tarball name.
func servedFile(name, version string, d remoteDist) string {
	f := fileOfURL(d.Tarball)
	if f == "" || f == "." || f == "/" || !strings.HasSuffix(f, ".tgz") || !npmname.URLSafe(f) || len(f) > 255 {
		return tarballFileName(name, version)
	}
	return f
}

// versionOfFile finds the version whose tarball is served as file.
func (p *remotePackument) versionOfFile(name, file string) (string, remoteDist, bool) {
	if v, ok := versionFromFileName(name, file); ok {
		if raw, listed := p.versions[v]; listed {
			if d, ok := versionDist(raw); ok && servedFile(name, v, d) == file {
				return v, d, true
			}
		}
	}
	for v, raw := range p.versions {
		if d, ok := versionDist(raw); ok && servedFile(name, v, d) == file {
			return v, d, true
		}
	}
	return "", remoteDist{}, false
}

// rewriteVersion renders one version: every member kept (or, abbreviated,
// npm's install fields), dist.tarball pointing at base + its file.
func rewriteVersion(raw json.RawMessage, base, version, name string, corgi bool) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, fmt.Errorf("version %s: %w", version, err)
	}
	if distRaw, ok := members["dist"]; ok {
		var dist map[string]json.RawMessage
		if err := json.Unmarshal(distRaw, &dist); err != nil {
			return nil, fmt.Errorf("version %s dist: %w", version, err)
		}
		d, _ := versionDist(raw)
		dist["tarball"] = jsonString(base + servedFile(name, version, d))
		b, err := json.Marshal(dist)
		if err != nil {
			return nil, err
		}
		members["dist"] = b
	}
	if corgi {
		for k := range members {
			if !abbreviatedSet[k] {
				delete(members, k)
			}
		}
		if _, ok := members["hasInstallScript"]; !ok && versionHasInstallScript(raw) {
			members["hasInstallScript"] = json.RawMessage("true")
		}
	}
	return json.Marshal(members)
}

// versionHasInstallScript tells whether a version runs scripts at install (npm's
// abbreviated documents carry the flag instead of the scripts).
func versionHasInstallScript(raw json.RawMessage) bool {
	var v struct {
		Scripts map[string]json.RawMessage `json:"scripts"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	for _, s := range []string{"preinstall", "install", "postinstall"} {
		if _, ok := v.Scripts[s]; ok {
			return true
		}
	}
	return false
}

// renderRemote renders the full or abbreviated document of a cached
// upstream packument for the tarball base; keep, when not nil and not
// empty, narrows the versions to those (a stale copy's cached tarballs).
func renderRemote(body []byte, base string, corgi bool, keep map[string]bool) ([]byte, error) {
	p, err := parseRemote(body)
	if err != nil {
		return nil, err
	}
	if len(keep) == 0 {
		keep = nil
	}
	var name string
	_ = json.Unmarshal(p.top["name"], &name)
	versions := make(map[string]json.RawMessage, len(p.versions))
	for v, raw := range p.versions {
		if keep != nil && !keep[v] {
			continue
		}
		out, err := rewriteVersion(raw, base, v, name, corgi)
		if err != nil {
			return nil, err
		}
		versions[v] = out
	}
	vb, err := json.Marshal(versions)
	if err != nil {
		return nil, err
	}
	tb, err := json.Marshal(p.sanitizedTags(keep))
	if err != nil {
		return nil, err
	}
	if corgi {
		doc := map[string]json.RawMessage{"name": p.top["name"], "dist-tags": tb, "versions": vb}
		if t, ok := p.top["time"]; ok {
			var times struct {
				Modified json.RawMessage `json:"modified"`
			}
			if json.Unmarshal(t, &times) == nil && times.Modified != nil {
				doc["modified"] = times.Modified
			}
		}
		if m, ok := p.top["modified"]; ok {
			doc["modified"] = m
		}
		return json.Marshal(doc)
	}
	doc := make(map[string]json.RawMessage, len(p.top))
	for k, v := range p.top {
		switch k {
		case "_rev", "_attachments":
			// The upstream's revision and attachments are not ours to
			// hand out: this registry takes no writes for a remote.
			continue
		}
		doc[k] = v
	}
	doc["versions"], doc["dist-tags"] = vb, tb
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
