package maven

import (
	"bytes"
	"encoding/xml"
	"slices"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store/enum"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// The maven-metadata.xml merge of a virtual repository (as Nexus and
// Artifactory groups do it): the union of the upstreams' versions, each
// upstream's filtered by its VERSION rules, in Maven's version order;
// <latest> and <release> recomputed from the union (not taken from any
// upstream, whose own may be stale or name a version the rules deny);
// <lastUpdated> the newest of the documents that contributed; plugin
// prefixes united, the first upstream's entry winning a prefix. The
// output is a function of the inputs, so the same upstream state gives
// the same bytes, ETag and checksums.

// metadataDocument is what the merge reads of an upstream's
// maven-metadata.xml.
type metadataDocument struct {
	XMLName    xml.Name `xml:"metadata"`
	GroupID    string   `xml:"groupId"`
	ArtifactID string   `xml:"artifactId"`
	Version    string   `xml:"version"`
	Versioning *struct {
		Snapshot *struct {
			Timestamp   string `xml:"timestamp"`
			BuildNumber int    `xml:"buildNumber"`
		} `xml:"snapshot"`
		Versions    []string `xml:"versions>version"`
		LastUpdated string   `xml:"lastUpdated"`
	} `xml:"versioning"`
	Plugins []metadataPlugin `xml:"plugins>plugin"`
}

type metadataPlugin struct {
	Name       string `xml:"name"`
	Prefix     string `xml:"prefix"`
	ArtifactID string `xml:"artifactId"`
}

func parseMetadataDocument(raw []byte) (*metadataDocument, error) {
	var d metadataDocument
	dec := xml.NewDecoder(bytes.NewReader(raw))
	dec.Strict = true
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (d *metadataDocument) lastUpdated() string {
	if d.Versioning == nil {
		return ""
	}
	return d.Versioning.LastUpdated
}

// isGroupLevel: plugin prefixes and no artifactId.
func (d *metadataDocument) isGroupLevel() bool { return d.ArtifactID == "" && len(d.Plugins) > 0 }

// parseLastUpdated reads a lastUpdated value (yyyyMMddHHmmss, UTC); zero
// when it is not one.
func parseLastUpdated(s string) time.Time {
	t, err := time.Parse("20060102150405", s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// mergeMetadata merges the package-level documents of the candidates
// (ref names the path): artifact-level ones whose upstream admits the
// artifact contribute their admitted versions, group-level ones whose
// upstream admits the group their plugins. ok is false when nothing was
// contributed.
func mergeMetadata(ref mavenstore.FileRef, docs []memberDocument) (merged []byte, lastUpdated time.Time, ok bool) {
	var (
		versions []string
		seen     = map[string]bool{}
		plugins  []metadataPlugin
		prefixes = map[string]bool{}
		newest   string
		artifact bool
	)
	for _, md := range docs {
		d, m := md.doc, md.c.m
		contributed := false
		switch {
		case d.isGroupLevel():
			if !admitsGroup(m, ref) {
				continue
			}
			for _, p := range d.Plugins {
				if p.Prefix != "" && !prefixes[p.Prefix] {
					prefixes[p.Prefix] = true
					plugins = append(plugins, p)
					contributed = true
				}
			}
		case d.Versioning != nil && admitsArtifact(m, ref):
			for _, v := range d.Versioning.Versions {
				if v == "" || seen[v] || !m.Admits(int16(enum.MavenTargetVersion), v) {
					continue
				}
				seen[v] = true
				versions = append(versions, v)
				contributed, artifact = true, true
			}
		}
		if contributed && d.lastUpdated() > newest {
			newest = d.lastUpdated()
		}
	}
	if len(versions) == 0 && len(plugins) == 0 {
		return nil, time.Time{}, false
	}
	slices.SortStableFunc(versions, mavenstore.CompareVersions)
	return renderMerged(ref, artifact, versions, newest, plugins), parseLastUpdated(newest), true
}

// renderMerged writes the merged document.
func renderMerged(ref mavenstore.FileRef, artifact bool, versions []string, lastUpdated string, plugins []metadataPlugin) []byte {
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata>\n")
	elem := func(indent, name, value string) {
		b.WriteString(indent + "<" + name + ">")
		_ = xml.EscapeText(&b, []byte(value))
		b.WriteString("</" + name + ">\n")
	}
	if artifact {
		elem("  ", "groupId", ref.GroupID)
		elem("  ", "artifactId", ref.ArtifactID)
		b.WriteString("  <versioning>\n")
		elem("    ", "latest", versions[len(versions)-1])
		for i := len(versions) - 1; i >= 0; i-- {
			if !mavenlayout.IsSnapshotVersion(versions[i]) {
				elem("    ", "release", versions[i])
				break
			}
		}
		b.WriteString("    <versions>\n")
		for _, v := range versions {
			elem("      ", "version", v)
		}
		b.WriteString("    </versions>\n")
		if lastUpdated != "" {
			elem("    ", "lastUpdated", lastUpdated)
		}
		b.WriteString("  </versioning>\n")
	}
	if len(plugins) > 0 {
		b.WriteString("  <plugins>\n")
		for _, p := range plugins {
			b.WriteString("    <plugin>\n")
			if p.Name != "" {
				elem("      ", "name", p.Name)
			}
			elem("      ", "prefix", p.Prefix)
			elem("      ", "artifactId", p.ArtifactID)
			b.WriteString("    </plugin>\n")
		}
		b.WriteString("  </plugins>\n")
	}
	b.WriteString("</metadata>\n")
	return b.Bytes()
}

// newestSnapshot picks, among SNAPSHOT version-level documents, the one
// with the newest build (timestamp, then build number, then
// lastUpdated); the first candidate wins a tie. nil when none describes
// a build.
func newestSnapshot(docs []memberDocument) *memberDocument {
	var best *memberDocument
	key := func(d *metadataDocument) (string, int, string) {
		if d.Versioning == nil {
			return "", 0, ""
		}
		if s := d.Versioning.Snapshot; s != nil {
			return s.Timestamp, s.BuildNumber, d.Versioning.LastUpdated
		}
		return "", 0, d.Versioning.LastUpdated
	}
	for i := range docs {
		d := &docs[i]
		if d.doc.Versioning == nil {
			continue
		}
		if best == nil {
			best = d
			continue
		}
		ts, bn, lu := key(d.doc)
		bts, bbn, blu := key(best.doc)
		if ts > bts || (ts == bts && (bn > bbn || (bn == bbn && lu > blu))) {
			best = d
		}
	}
	return best
}
