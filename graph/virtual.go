package graph

import (
	"context"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Virtual repositories in the management API (virtual.graphqls): the
// rule fields of each format, the conversion of the settings input and
// the authorization of what it names, and the settings output, one batch
// per level (loaders.go).

// Bounds of the lists of VirtualRepository (the store's own limits).
const (
	maxVirtualUpstreams = store.MaxVirtualUpstreams
	maxVirtualRules     = store.MaxVirtualRulesPerUpstream
	maxVirtualReserved  = store.MaxVirtualReservedPatterns
)

// ruleFieldToEnum maps a rule field to the format's target field; a
// field the format has not is absent.
func ruleFieldToEnum(f model.Format, field model.VirtualRuleField) (int16, bool) {
	switch f {
	case model.FormatDocker, model.FormatOci:
		switch field {
		case model.VirtualRuleFieldName:
			return int16(enum.ContainerTargetImage), true
		case model.VirtualRuleFieldVersion:
			return int16(enum.ContainerTargetTag), true
		}
	case model.FormatNpm:
		switch field {
		case model.VirtualRuleFieldName:
			return int16(enum.NpmTargetFullPackageName), true
		case model.VirtualRuleFieldScope:
			return int16(enum.NpmTargetScope), true
		case model.VirtualRuleFieldVersion:
			return int16(enum.NpmTargetVersion), true
		}
	case model.FormatMaven:
		switch field {
		case model.VirtualRuleFieldName:
			return int16(enum.MavenTargetGroupID), true
		case model.VirtualRuleFieldArtifactID:
			return int16(enum.MavenTargetArtifactID), true
		case model.VirtualRuleFieldVersion:
			return int16(enum.MavenTargetVersion), true
		}
	}
	return 0, false
}

func ruleFieldFromEnum(f model.Format, v int16) model.VirtualRuleField {
	for _, field := range model.AllVirtualRuleField {
		if e, ok := ruleFieldToEnum(f, field); ok && e == v {
			return field
		}
	}
	return model.VirtualRuleFieldName
}

var ruleTypesToEnum = map[model.VirtualRuleType]enum.UpstreamRuleType{
	model.VirtualRuleTypeAllow: enum.UpstreamRuleAllow,
	model.VirtualRuleTypeDeny:  enum.UpstreamRuleDeny,
}

// virtualInput converts the settings of a virtual repository of format f.
func virtualInput(f model.Format, in *model.VirtualRepositoryInput) (store.VirtualInput, error) {
	out := store.VirtualInput{DeployTo: in.DeployTo, ReservedPatterns: in.ReservedPatterns}
	if len(in.Upstreams) > maxVirtualUpstreams {
		return out, invalidInput("virtual.upstreams: at most %d upstreams, not %d", maxVirtualUpstreams, len(in.Upstreams))
	}
	for i, u := range in.Upstreams {
		su := store.VirtualUpstreamInput{Repository: u.Repository}
		if len(u.Rules) > maxVirtualRules {
			return out, invalidInput("virtual.upstreams[%d].rules: at most %d rules, not %d", i, maxVirtualRules, len(u.Rules))
		}
		for j, r := range u.Rules {
			field, ok := ruleFieldToEnum(f, r.Field)
			if !ok {
				return out, invalidInput("virtual.upstreams[%d].rules[%d]: %s repositories have no %s rules", i, j, f, r.Field)
			}
			su.Rules = append(su.Rules, store.VirtualRule{Type: ruleTypesToEnum[r.Type], Field: field, Pattern: r.Pattern})
		}
		out.Upstreams = append(out.Upstreams, su)
	}
	return out, nil
}

// authorizeVirtualMembers checks what a virtual's settings name: the
// virtual serves its upstreams to its readers, so whoever configures it
// must be able to read each of them, and to write the deploy target.
// Without this a namespace administrator of one repository could read
// another through a virtual of its own.
func (r *Resolver) authorizeVirtualMembers(ctx context.Context, namespace string, in *model.VirtualRepositoryInput) error {
	for _, u := range in.Upstreams {
		if err := r.repositoryFor(ctx, store.RepositoryRef{Namespace: namespace, Name: u.Repository}, auth.ActionRead); err != nil {
			return err
		}
	}
	if in.DeployTo != nil {
		return r.repositoryFor(ctx, store.RepositoryRef{Namespace: namespace, Name: *in.DeployTo}, auth.ActionWrite)
	}
	return nil
}

// virtualSettings is a virtual repository's settings as loaded, before
// the caller's read rights filter the upstreams it is shown.
type virtualSettings struct {
	format model.Format
	vs     *store.VirtualSettings
}

func virtualSettingsLoader(st *store.Store) func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*virtualSettings, error) {
	return func(ctx context.Context, ns uuid.UUID, repos []uuid.UUID) (map[uuid.UUID]*virtualSettings, error) {
		m, err := st.VirtualSettingsByRepositories(ctx, ns, repos)
		if err != nil {
			return nil, err
		}
		out := make(map[uuid.UUID]*virtualSettings, len(m))
		for id, vs := range m {
			out[id] = &virtualSettings{format: formatsFromEnum[vs.Format], vs: vs}
		}
		return out, nil
	}
}

// toVirtualRepository presents settings to a caller: upstreams it cannot
// read are left out (their positions keep their place, so the gap
// shows), and so is a deploy target it cannot read.
func toVirtualRepository(s *virtualSettings, readable auth.RepositoryFilter) *model.VirtualRepository {
	out := &model.VirtualRepository{ReservedPatterns: capList(s.vs.ReservedPatterns, maxVirtualReserved), Upstreams: []*model.VirtualUpstream{}}
	for _, u := range s.vs.Upstreams {
		if !readable.Allows(*auth.RepositoryOf(u.Repository)) {
			continue
		}
		mu := &model.VirtualUpstream{Position: u.Position, Repository: toRepository(u.Repository), Rules: []*model.VirtualRule{}}
		for _, rule := range u.Rules {
			t := model.VirtualRuleTypeAllow
			if rule.Type == enum.UpstreamRuleDeny {
				t = model.VirtualRuleTypeDeny
			}
			mu.Rules = append(mu.Rules, &model.VirtualRule{Type: t, Field: ruleFieldFromEnum(s.format, rule.Field), Pattern: rule.Pattern})
		}
		mu.Rules = capList(mu.Rules, maxVirtualRules)
		out.Upstreams = append(out.Upstreams, mu)
		if s.vs.DeployTo != nil && *s.vs.DeployTo == u.Repository.ID {
			out.DeployTo = mu.Repository
		}
	}
	out.Upstreams = capList(out.Upstreams, maxVirtualUpstreams)
	return out
}
