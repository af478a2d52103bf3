package graph

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// VirtualRepository.resolve: where a request through a virtual would be
// served from, from stored data only. The decision per member is the
// protocols' own (store.DecideVirtual over store.FlattenVirtual); each
// format contributes the values its rules match, which hosted members
// hold the name (what shadows remotes, as the protocol tests it) and
// which members hold the artifact in stored or cached content.

// Bounds of resolve's input and output.
const (
	maxResolveInput = 512
	maxResolveSteps = 400
)

// virtualLookup is one format's side of a resolution.
type virtualLookup struct {
	// name is what reserved patterns match; values what rules must admit.
	name   string
	values []store.VirtualValue
	// holding: the hosted members that hold the name, whatever its
	// version (they shadow the name from remotes).
	holding func(ctx context.Context, hosted []uuid.UUID) (map[uuid.UUID]bool, error)
	// stored: the members that hold the artifact (the version when one
	// is asked) in stored or cached content.
	stored func(ctx context.Context, hosted, remote []uuid.UUID) (map[uuid.UUID]bool, error)
}

func (r *Resolver) virtualLookup(format model.Format, nsID uuid.UUID, name, version string) (*virtualLookup, error) {
	switch format {
	case model.FormatDocker, model.FormatOci:
		return r.containerLookup(nsID, name, version), nil
	case model.FormatNpm:
		return r.npmLookup(nsID, name, version), nil
	case model.FormatMaven:
		return r.mavenLookup(nsID, name, version)
	}
	return nil, invalidInput("resolve: %s repositories cannot be resolved", format)
}

func (r *Resolver) containerLookup(nsID uuid.UUID, name, tag string) *virtualLookup {
	l := &virtualLookup{name: name, values: []store.VirtualValue{{Field: int16(enum.ContainerTargetImage), Value: name}}}
	if tag != "" {
		l.values = append(l.values, store.VirtualValue{Field: int16(enum.ContainerTargetTag), Value: tag})
	}
	l.holding = func(ctx context.Context, hosted []uuid.UUID) (map[uuid.UUID]bool, error) {
		return r.container.HoldingImage(ctx, nsID, hosted, name)
	}
	l.stored = func(ctx context.Context, hosted, remote []uuid.UUID) (map[uuid.UUID]bool, error) {
		return r.container.StoredImage(ctx, nsID, hosted, remote, name, tag)
	}
	return l
}

func (r *Resolver) npmLookup(nsID uuid.UUID, name, version string) *virtualLookup {
	l := &virtualLookup{name: name, values: []store.VirtualValue{
		{Field: int16(enum.NpmTargetFullPackageName), Value: name},
		{Field: int16(enum.NpmTargetScope), Value: npmstore.ScopeOf(name)},
	}}
	if version != "" {
		l.values = append(l.values, store.VirtualValue{Field: int16(enum.NpmTargetVersion), Value: version})
	}
	l.holding = func(ctx context.Context, hosted []uuid.UUID) (map[uuid.UUID]bool, error) {
		return r.npm.HoldingRepositories(ctx, nsID, hosted, name)
	}
	l.stored = func(ctx context.Context, hosted, remote []uuid.UUID) (map[uuid.UUID]bool, error) {
		return r.npm.StoredPackage(ctx, nsID, append(hosted, remote...), name, version)
	}
	return l
}

func (r *Resolver) mavenLookup(nsID uuid.UUID, name, version string) (*virtualLookup, error) {
	groupID, artifactID, ok := strings.Cut(name, ":")
	if !ok || groupID == "" || artifactID == "" || strings.Contains(artifactID, ":") {
		return nil, invalidInput("resolve.name: a Maven name is groupId:artifactId")
	}
	// Reserved patterns match the layout path, as the Maven protocol
	// matches them: com/acme/** reserves groupId com.acme and below.
	l := &virtualLookup{name: maven.LayoutName(groupID, artifactID), values: []store.VirtualValue{
		{Field: int16(enum.MavenTargetGroupID), Value: groupID},
		{Field: int16(enum.MavenTargetArtifactID), Value: artifactID},
	}}
	if version != "" {
		l.values = append(l.values, store.VirtualValue{Field: int16(enum.MavenTargetVersion), Value: version})
	}
	l.holding = func(ctx context.Context, hosted []uuid.UUID) (map[uuid.UUID]bool, error) {
		return r.maven.HoldingRepositories(ctx, nsID, hosted, groupID, artifactID)
	}
	l.stored = func(ctx context.Context, hosted, remote []uuid.UUID) (map[uuid.UUID]bool, error) {
		return r.maven.StoredPackage(ctx, nsID, append(hosted, remote...), groupID, artifactID, version)
	}
	return l, nil
}

// checkResolveInput bounds and checks resolve's arguments.
func checkResolveInput(name string, version *string) (string, error) {
	v := ""
	if version != nil {
		v = *version
	}
	for what, s := range map[string]string{"resolve.name": name, "resolve.version": v} {
		switch {
		case !utf8.ValidString(s):
			return "", invalidInput("%s: not valid UTF-8", what)
		case len(s) > maxResolveInput:
			return "", invalidInput("%s: at most %d bytes", what, maxResolveInput)
		case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return "", invalidInput("%s: holds a control character", what)
		}
	}
	if name == "" {
		return "", invalidInput("resolve.name: name an artifact")
	}
	return v, nil
}

// resolveVirtual answers VirtualRepository.resolve for the virtual v.
func (r *Resolver) resolveVirtual(ctx context.Context, v *model.Repository, name string, version *string) (*model.VirtualResolution, error) {
	ver, err := checkResolveInput(name, version)
	if err != nil {
		return nil, err
	}
	l, err := r.virtualLookup(v.Format, v.NamespaceID, name, ver)
	if err != nil {
		return nil, err
	}
	tree, err := r.store.VirtualTree(ctx, formatsToEnum[v.Format], v.NamespaceID, v.ID)
	if err != nil {
		return nil, err
	}
	members := store.FlattenVirtual(tree, v.ID)
	var hosted []uuid.UUID
	for _, m := range members {
		if m.Repository.Kind == enum.KindHosted {
			hosted = append(hosted, m.Repository.ID)
		}
	}
	holding, err := l.holding(ctx, hosted)
	if err != nil {
		return nil, err
	}
	decisions := store.DecideVirtual(members, holding, l.name, l.values...)
	var candHosted, candRemote []uuid.UUID
	for _, d := range decisions {
		if d.Outcome != store.VirtualCandidate {
			continue
		}
		if d.Member.Repository.Kind == enum.KindHosted {
			candHosted = append(candHosted, d.Member.Repository.ID)
		} else {
			candRemote = append(candRemote, d.Member.Repository.ID)
		}
	}
	stored := map[uuid.UUID]bool{}
	if len(candHosted)+len(candRemote) > 0 {
		if stored, err = l.stored(ctx, candHosted, candRemote); err != nil {
			return nil, err
		}
	}
	readable := auth.ReadableRepositories(principal(ctx), auth.Namespace{ID: v.NamespaceID})
	return resolutionOf(v.Format, decisions, stored, viaOf(tree, v.ID), l.name, readable), nil
}

// viaOf maps each member of the flattened root to the root's upstream it
// is reached through: itself, or the nested virtual that lists it. The
// subtrees are flattened in the root's order, so a member reached twice
// is assigned where FlattenVirtual places it, at its first place.
func viaOf(tree map[uuid.UUID]*store.VirtualSettings, root uuid.UUID) map[uuid.UUID]*store.Repository {
	out := map[uuid.UUID]*store.Repository{}
	vs := tree[root]
	if vs == nil {
		return out
	}
	for _, u := range vs.Upstreams {
		if u.Repository.Kind != enum.KindVirtual {
			if out[u.Repository.ID] == nil {
				out[u.Repository.ID] = u.Repository
			}
			continue
		}
		for _, m := range store.FlattenVirtual(tree, u.Repository.ID) {
			if out[m.Repository.ID] == nil {
				out[m.Repository.ID] = u.Repository
			}
		}
	}
	return out
}

// resolutionOf presents the decisions: the first candidate holding the
// artifact serves it, the members after it are skipped, a remote
// candidate before it without a cached copy would be asked upstream.
// Members the caller may not read show only SERVES, SKIPPED or HIDDEN.
func resolutionOf(format model.Format, decisions []store.VirtualDecision, stored map[uuid.UUID]bool, via map[uuid.UUID]*store.Repository,
	name string, readable auth.RepositoryFilter) *model.VirtualResolution {
	out := &model.VirtualResolution{Steps: []*model.VirtualResolutionStep{}}
	found := false
	for i, d := range decisions {
		repo := d.Member.Repository
		step := &model.VirtualResolutionStep{Position: i + 1}
		switch {
		case found:
			step.Outcome = model.VirtualResolutionOutcomeSkipped
		case d.Outcome == store.VirtualCandidate && stored[repo.ID]:
			step.Outcome = model.VirtualResolutionOutcomeServes
			found = true
			pos := i + 1
			out.ResolvedPosition = &pos
		case d.Outcome == store.VirtualCandidate && repo.Kind == enum.KindHosted:
			step.Outcome = model.VirtualResolutionOutcomeAbsent
		case d.Outcome == store.VirtualCandidate:
			step.Outcome = model.VirtualResolutionOutcomeNotCached
			out.AsksUpstream = true
		case d.Outcome == store.VirtualAbsent:
			step.Outcome = model.VirtualResolutionOutcomeAbsent
		case d.Outcome == store.VirtualShadowed:
			step.Outcome = model.VirtualResolutionOutcomeShadowed
		case d.Outcome == store.VirtualReserved:
			step.Outcome = model.VirtualResolutionOutcomeReserved
			step.ReservedPattern = reservedPatternOf(d.Member, name)
		case d.Outcome == store.VirtualDenied:
			step.Outcome = model.VirtualResolutionOutcomeDeniedByRule
			field := ruleFieldFromEnum(format, d.Refused.Field)
			step.DeniedField = &field
			if d.Rule != nil {
				step.DeniedBy = &model.VirtualRule{Type: model.VirtualRuleTypeDeny, Field: field, Pattern: d.Rule.Pattern}
			}
		}
		if !readable.Allows(*auth.RepositoryOf(repo)) {
			hideStep(step)
		} else {
			step.Repository = toRepository(repo)
			step.Kind = &step.Repository.Kind
			switch w := via[repo.ID]; {
			case w == nil || w.ID == repo.ID:
				step.Via = step.Repository
			case readable.Allows(*auth.RepositoryOf(w)):
				step.Via = toRepository(w)
			}
			if step.Outcome == model.VirtualResolutionOutcomeServes {
				out.ResolvedFrom = step.Repository
			}
		}
		out.Steps = append(out.Steps, step)
	}
	out.Steps = capList(out.Steps, maxResolveSteps)
	return out
}

// hideStep keeps of a hidden member's step only what a pull through the
// virtual shows anyway: whether it serves.
func hideStep(step *model.VirtualResolutionStep) {
	step.Hidden = true
	step.DeniedField, step.DeniedBy, step.ReservedPattern, step.Via = nil, nil, nil, nil
	if step.Outcome != model.VirtualResolutionOutcomeServes && step.Outcome != model.VirtualResolutionOutcomeSkipped {
		step.Outcome = model.VirtualResolutionOutcomeHidden
	}
}

// reservedPatternOf is the first reserved pattern of the member that
// name matches.
func reservedPatternOf(m *store.VirtualMember, name string) *string {
	for _, p := range m.Reserved {
		if store.MatchVirtualPattern(p, name) {
			return &p
		}
	}
	return nil
}
