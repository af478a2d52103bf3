// A virtual repository: its upstreams in resolution order with their
// rules, deploy target and reserved names; the editor that creates and
// changes them (the whole list is sent, and replaced, at once).
import { useEffect, useState, type FormEvent } from "react";
import { Link } from "react-router";
import { useMutation, useQuery } from "urql";
import { Badge, Empty, ErrorBox, Loading } from "../components/ui";
import { graphql } from "../gql";
import type {
  Format,
  VirtualResolutionOutcome,
  VirtualResolveQuery,
  VirtualRuleField,
  VirtualRuleType,
} from "../gql/graphql";
import { paths } from "../paths";

const VirtualQuery = graphql(`
  query VirtualRepository($namespace: String!, $name: String!) {
    repository(namespace: $namespace, name: $name) {
      id
      format
      virtual {
        reservedPatterns
        deployTo {
          id
          name
        }
        upstreams {
          position
          repository {
            id
            name
            kind
          }
          rules {
            type
            field
            pattern
          }
        }
      }
    }
  }
`);

const ResolveQuery = graphql(`
  query VirtualResolve($namespace: String!, $name: String!, $artifact: String!, $version: String) {
    repository(namespace: $namespace, name: $name) {
      id
      virtual {
        resolve(name: $artifact, version: $version) {
          resolvedFrom {
            id
            name
            kind
          }
          resolvedPosition
          asksUpstream
          steps {
            position
            hidden
            kind
            outcome
            repository {
              id
              name
            }
            deniedField
            deniedBy {
              type
              field
              pattern
            }
            reservedPattern
            via {
              id
              name
            }
          }
        }
      }
    }
  }
`);

const CandidatesQuery = graphql(`
  query VirtualCandidates($namespace: String!, $format: Format!) {
    namespace(slug: $namespace) {
      id
      repositories(first: 100, filter: { format: $format }) {
        edges {
          node {
            id
            name
            kind
          }
        }
      }
    }
  }
`);

const UpdateVirtualMutation = graphql(`
  mutation UpdateVirtual($input: UpdateRepositoryInput!) {
    updateRepository(input: $input) {
      repository {
        id
        virtual {
          reservedPatterns
          deployTo {
            id
            name
          }
          upstreams {
            position
            repository {
              id
              name
              kind
            }
            rules {
              type
              field
              pattern
            }
          }
        }
      }
    }
  }
`);

const ctx = { additionalTypenames: ["Repository"] };

export interface RuleDraft {
  type: VirtualRuleType;
  field: VirtualRuleField;
  pattern: string;
}

export interface UpstreamDraft {
  repository: string;
  kind: string;
  rules: RuleDraft[];
}

export interface VirtualDraft {
  upstreams: UpstreamDraft[];
  deployTo: string;
  reserved: string; // one pattern per line
}

export const emptyVirtual: VirtualDraft = { upstreams: [], deployTo: "", reserved: "" };

// The rule fields each format has (the server refuses the others).
export function ruleFields(format: Format): VirtualRuleField[] {
  switch (format) {
    case "NPM":
      return ["NAME", "SCOPE", "VERSION"];
    case "MAVEN":
      return ["NAME", "ARTIFACT_ID", "VERSION"];
    default:
      return ["NAME", "VERSION"];
  }
}

const FIELD_LABEL: Record<VirtualRuleField, string> = {
  NAME: "name",
  VERSION: "version / tag",
  SCOPE: "scope",
  ARTIFACT_ID: "artifactId",
};

// Same syntax bounds as the server (store.ValidateVirtualPattern).
export function patternOk(p: string): boolean {
  return p.length > 0 && [...p].length <= 255 && !/[\s\p{Cc}]/u.test(p);
}

export function reservedList(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

// draftOk tells whether the server would take the draft as far as the
// page can tell (the server checks the rest: formats, cycles, rights).
export function draftOk(d: VirtualDraft): boolean {
  const reserved = reservedList(d.reserved);
  return (
    d.upstreams.length > 0 &&
    d.upstreams.length <= 50 &&
    d.upstreams.every((u) => u.rules.length <= 50 && u.rules.every((r) => patternOk(r.pattern))) &&
    reserved.length <= 50 &&
    reserved.every(patternOk) &&
    (d.deployTo === "" || d.upstreams.some((u) => u.repository === d.deployTo && u.kind === "HOSTED"))
  );
}

export function virtualInput(d: VirtualDraft) {
  return {
    upstreams: d.upstreams.map((u) => ({
      repository: u.repository,
      rules: u.rules.map((r) => ({ type: r.type, field: r.field, pattern: r.pattern })),
    })),
    deployTo: d.deployTo || null,
    reservedPatterns: reservedList(d.reserved),
  };
}

export function moveUpstream(d: VirtualDraft, i: number, by: number): VirtualDraft {
  const j = i + by;
  if (j < 0 || j >= d.upstreams.length) return d;
  const ups = [...d.upstreams];
  [ups[i], ups[j]] = [ups[j], ups[i]];
  return { ...d, upstreams: ups };
}

export function removeUpstream(d: VirtualDraft, i: number): VirtualDraft {
  const gone = d.upstreams[i];
  return {
    ...d,
    upstreams: d.upstreams.filter((_, k) => k !== i),
    deployTo: gone && gone.repository === d.deployTo ? "" : d.deployTo,
  };
}

function describeRule(r: RuleDraft): string {
  return `${r.type === "ALLOW" ? "allow" : "deny"} ${FIELD_LABEL[r.field]} ${r.pattern}`;
}

// VirtualEditor edits a draft: the ordered upstreams (add, move, remove),
// each upstream's rules, the deploy target and the reserved names.
export function VirtualEditor({
  ns,
  format,
  self,
  value,
  onChange,
}: {
  ns: string;
  format: Format;
  self: string;
  value: VirtualDraft;
  onChange(d: VirtualDraft): void;
}) {
  const [{ data }] = useQuery({ query: CandidatesQuery, variables: { namespace: ns, format }, context: ctx });
  const [pick, setPick] = useState("");
  const listed = new Set(value.upstreams.map((u) => u.repository));
  const candidates = (data?.namespace?.repositories.edges ?? [])
    .map((e) => e.node)
    .filter((n) => n.name !== self && !listed.has(n.name));
  const fields = ruleFields(format);
  const setUpstream = (i: number, u: UpstreamDraft) =>
    onChange({ ...value, upstreams: value.upstreams.map((x, k) => (k === i ? u : x)) });
  const add = () => {
    const c = candidates.find((n) => n.name === pick);
    if (!c) return;
    onChange({ ...value, upstreams: [...value.upstreams, { repository: c.name, kind: c.kind, rules: [] }] });
    setPick("");
  };
  const hosted = value.upstreams.filter((u) => u.kind === "HOSTED");
  return (
    <div className="virtual-editor">
      <fieldset>
        <legend>Upstreams, in resolution order</legend>
        <p className="help">
          The first upstream whose rules admit a name and that has it wins. A name any hosted upstream has is never
          asked of a remote one.
        </p>
        {value.upstreams.length === 0 && <p className="muted">No upstream yet: add at least one.</p>}
        <ol className="upstream-list">
          {value.upstreams.map((u, i) => (
            <li key={u.repository} className="upstream">
              <div className="upstream-head">
                <strong>{u.repository}</strong> <Badge>{u.kind.toLowerCase()}</Badge>
                <span className="upstream-actions">
                  <button
                    type="button"
                    className="btn btn-ghost btn-small"
                    aria-label={`Move ${u.repository} up`}
                    disabled={i === 0}
                    onClick={() => onChange(moveUpstream(value, i, -1))}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    className="btn btn-ghost btn-small"
                    aria-label={`Move ${u.repository} down`}
                    disabled={i === value.upstreams.length - 1}
                    onClick={() => onChange(moveUpstream(value, i, 1))}
                  >
                    ↓
                  </button>
                  <button
                    type="button"
                    className="btn btn-ghost btn-small"
                    aria-label={`Remove ${u.repository}`}
                    onClick={() => onChange(removeUpstream(value, i))}
                  >
                    Remove
                  </button>
                </span>
              </div>
              {u.rules.map((r, j) => (
                <div key={j} className="rule-row">
                  <select
                    aria-label={`Rule ${j + 1} of ${u.repository}: type`}
                    value={r.type}
                    onChange={(e) =>
                      setUpstream(i, {
                        ...u,
                        rules: u.rules.map((x, k) => (k === j ? { ...x, type: e.target.value as VirtualRuleType } : x)),
                      })
                    }
                  >
                    <option value="ALLOW">allow</option>
                    <option value="DENY">deny</option>
                  </select>
                  <select
                    aria-label={`Rule ${j + 1} of ${u.repository}: field`}
                    value={r.field}
                    onChange={(e) =>
                      setUpstream(i, {
                        ...u,
                        rules: u.rules.map((x, k) => (k === j ? { ...x, field: e.target.value as VirtualRuleField } : x)),
                      })
                    }
                  >
                    {fields.map((f) => (
                      <option key={f} value={f}>
                        {FIELD_LABEL[f]}
                      </option>
                    ))}
                  </select>
                  <input
                    aria-label={`Rule ${j + 1} of ${u.repository}: pattern`}
                    value={r.pattern}
                    maxLength={255}
                    placeholder="library/** or *-rc*"
                    aria-invalid={r.pattern !== "" && !patternOk(r.pattern)}
                    spellCheck={false}
                    onChange={(e) =>
                      setUpstream(i, {
                        ...u,
                        rules: u.rules.map((x, k) => (k === j ? { ...x, pattern: e.target.value } : x)),
                      })
                    }
                  />
                  <button
                    type="button"
                    className="btn btn-ghost btn-small"
                    aria-label={`Remove rule ${j + 1} of ${u.repository}`}
                    onClick={() => setUpstream(i, { ...u, rules: u.rules.filter((_, k) => k !== j) })}
                  >
                    ×
                  </button>
                </div>
              ))}
              <button
                type="button"
                className="btn btn-ghost btn-small"
                disabled={u.rules.length >= 50}
                onClick={() => setUpstream(i, { ...u, rules: [...u.rules, { type: "ALLOW", field: "NAME", pattern: "" }] })}
              >
                Add rule to {u.repository}
              </button>
            </li>
          ))}
        </ol>
        <div className="add-upstream">
          <label htmlFor="virtual-add">Add an upstream</label>
          <select id="virtual-add" value={pick} onChange={(e) => setPick(e.target.value)}>
            <option value="">Choose a {format.toLowerCase()} repository…</option>
            {candidates.map((c) => (
              <option key={c.id} value={c.name}>
                {c.name} ({c.kind.toLowerCase()})
              </option>
            ))}
          </select>
          <button type="button" className="btn" disabled={pick === ""} onClick={add}>
            Add
          </button>
        </div>
        <p className="help">
          Patterns: <code>*</code> matches within one path segment, <code>**</code> across <code>/</code>,{" "}
          <code>?</code> one character. Deny wins over allow; with allow rules, only what they match is served.
        </p>
      </fieldset>

      <label htmlFor="virtual-deploy">Deploy target</label>
      <select id="virtual-deploy" value={value.deployTo} onChange={(e) => onChange({ ...value, deployTo: e.target.value })}>
        <option value="">None: pushes and publishes to the virtual are refused</option>
        {hosted.map((u) => (
          <option key={u.repository} value={u.repository}>
            {u.repository}
          </option>
        ))}
      </select>
      <p className="help">A hosted upstream that receives what is pushed or published to the virtual.</p>

      <label htmlFor="virtual-reserved">Reserved names (one pattern per line)</label>
      <textarea
        id="virtual-reserved"
        rows={3}
        value={value.reserved}
        spellCheck={false}
        placeholder={format === "NPM" ? "@acme/*" : format === "MAVEN" ? "com/acme/**" : "acme/*"}
        aria-invalid={!reservedList(value.reserved).every(patternOk)}
        onChange={(e) => onChange({ ...value, reserved: e.target.value })}
      />
      <p className="help">Names matching these are never asked of a remote upstream, even when no hosted one has them.</p>
    </div>
  );
}

type VirtualData = NonNullable<NonNullable<ReturnType<typeof useVirtual>[0]["data"]>["repository"]>;

function useVirtual(ns: string, repo: string) {
  return useQuery({ query: VirtualQuery, variables: { namespace: ns, name: repo }, context: ctx });
}

export function draftOf(v: NonNullable<VirtualData["virtual"]>): VirtualDraft {
  return {
    upstreams: v.upstreams.map((u) => ({
      repository: u.repository.name,
      kind: u.repository.kind,
      rules: u.rules.map((r) => ({ type: r.type, field: r.field, pattern: r.pattern })),
    })),
    deployTo: v.deployTo?.name ?? "",
    reserved: v.reservedPatterns.join("\n"),
  };
}

export type Resolution = NonNullable<
  NonNullable<VirtualResolveQuery["repository"]>["virtual"]
>["resolve"];
type ResolutionStep = Resolution["steps"][number];

const OUTCOME: Record<VirtualResolutionOutcome, { label: string; tone?: string }> = {
  SERVES: { label: "serves", tone: "ok" },
  ABSENT: { label: "absent" },
  DENIED_BY_RULE: { label: "denied by rule", tone: "bad" },
  SHADOWED: { label: "shadowed", tone: "warn" },
  RESERVED: { label: "reserved", tone: "warn" },
  NOT_CACHED: { label: "not cached", tone: "info" },
  SKIPPED: { label: "skipped" },
  HIDDEN: { label: "hidden" },
};

// stepReason says in words why a member serves the artifact or not.
export function stepReason(s: ResolutionStep): string {
  const field = s.deniedField ? FIELD_LABEL[s.deniedField] : "name";
  switch (s.outcome) {
    case "SERVES":
      return s.kind === "REMOTE"
        ? "Has a cached copy, and its rules admit it."
        : s.hidden
          ? "Serves it (an upstream you may not read)."
          : "Has it, and its rules admit it.";
    case "ABSENT":
      return "Does not have it.";
    case "DENIED_BY_RULE":
      return s.deniedBy
        ? `Refused by the rule “deny ${field} ${s.deniedBy.pattern}”.`
        : `No allow rule on the ${field} matches.`;
    case "SHADOWED":
      return "Not asked: a hosted upstream has this name, so it is never fetched from a remote.";
    case "RESERVED":
      return s.reservedPattern
        ? `Not asked: the name matches the reserved pattern “${s.reservedPattern}”.`
        : "Not asked: the name is reserved.";
    case "NOT_CACHED":
      return "Admits it but has no cached copy: a request would ask its upstream.";
    case "SKIPPED":
      return "Not consulted: an earlier upstream serves it.";
    case "HIDDEN":
      return "An upstream you may not read.";
  }
}

const RESOLVE_HINT: Record<string, { name: string; version: string; help: string }> = {
  NPM: { name: "@acme/ui", version: "1.0.0", help: "A package name (with its scope) and, optionally, a version." },
  MAVEN: { name: "com.acme:core", version: "1.0", help: "groupId:artifactId and, optionally, a version." },
  OCI: { name: "library/alpine", version: "3.20", help: "An image name and, optionally, a tag." },
};

// ResolveBox asks where the virtual would serve an artifact from (stored
// and cached content only: no upstream is contacted) and shows the answer
// member by member.
export function ResolveBox({
  ns,
  repo,
  format,
  onResolved,
}: {
  ns: string;
  repo: string;
  format: Format;
  onResolved(r: Resolution | null): void;
}) {
  const hint = RESOLVE_HINT[format] ?? RESOLVE_HINT.OCI;
  const [name, setName] = useState("");
  const [version, setVersion] = useState("");
  const [asked, setAsked] = useState<{ artifact: string; version: string | null } | null>(null);
  const [{ data, fetching, error }] = useQuery({
    query: ResolveQuery,
    variables: { namespace: ns, name: repo, artifact: asked?.artifact ?? "", version: asked?.version ?? null },
    pause: !asked,
    requestPolicy: "network-only",
  });
  const res = asked ? (data?.repository?.virtual?.resolve ?? null) : null;
  // The panel marks the upstream the answer resolves from.
  useEffect(() => onResolved(res), [res, onResolved]);
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const n = name.trim();
    if (n === "") return;
    setAsked({ artifact: n, version: version.trim() === "" ? null : version.trim() });
  };
  return (
    <section className="panel resolve-box" aria-labelledby="resolve-title">
      <h3 id="resolve-title">Resolve</h3>
      <p className="help">
        Where would a request through this virtual be served from? {hint.help} Answered from what is stored and
        cached: no upstream is contacted.
      </p>
      <form className="resolve-form" onSubmit={onSubmit} autoComplete="off">
        <label htmlFor="resolve-name">Name</label>
        <input
          id="resolve-name"
          value={name}
          maxLength={512}
          placeholder={hint.name}
          spellCheck={false}
          onChange={(e) => setName(e.target.value)}
        />
        <label htmlFor="resolve-version">Version (optional)</label>
        <input
          id="resolve-version"
          value={version}
          maxLength={512}
          placeholder={hint.version}
          spellCheck={false}
          onChange={(e) => setVersion(e.target.value)}
        />
        <button type="submit" className="btn btn-primary" disabled={name.trim() === "" || fetching}>
          {fetching ? "Resolving…" : "Resolve"}
        </button>
      </form>
      {error && <ErrorBox error={error} title="Could not resolve" />}
      {res && asked && <ResolutionView ns={ns} asked={asked} res={res} />}
    </section>
  );
}

function ResolutionView({
  ns,
  asked,
  res,
}: {
  ns: string;
  asked: { artifact: string; version: string | null };
  res: Resolution;
}) {
  const what = asked.version ? `${asked.artifact} ${asked.version}` : asked.artifact;
  return (
    <div className="resolution" aria-live="polite">
      <p className="resolution-answer" data-testid="resolution-answer">
        {res.resolvedFrom ? (
          <>
            <strong>{what}</strong> resolves from{" "}
            <Link to={paths.repository(ns, res.resolvedFrom.name)}>{res.resolvedFrom.name}</Link> (
            {res.resolvedFrom.kind.toLowerCase()}, member {res.resolvedPosition}).
          </>
        ) : res.resolvedPosition ? (
          <>
            <strong>{what}</strong> resolves from member {res.resolvedPosition}, an upstream you may not read.
          </>
        ) : (
          <>
            No member serves <strong>{what}</strong> from stored or cached content.
          </>
        )}
        {res.asksUpstream && (
          <>
            {" "}
            <Badge tone="info">asks upstream first</Badge> A remote member without a cached copy comes first: a request
            would ask its upstream, and its answer decides.
          </>
        )}
      </p>
      <div className="table-wrap">
        <table className="table resolution-steps">
          <thead>
            <tr>
              <th scope="col" className="num">
                #
              </th>
              <th scope="col">Member</th>
              <th scope="col">Kind</th>
              <th scope="col">Outcome</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            {res.steps.map((s) => (
              <tr key={s.position} className={s.outcome === "SERVES" ? "resolution-winner" : undefined}>
                <td className="num">{s.position}</td>
                <td>
                  {s.repository ? (
                    <Link to={paths.repository(ns, s.repository.name)}>{s.repository.name}</Link>
                  ) : (
                    <span className="muted">hidden</span>
                  )}
                  {s.repository && s.via && s.via.id !== s.repository.id && (
                    <span className="muted"> via {s.via.name}</span>
                  )}
                </td>
                <td>{s.kind ? s.kind.toLowerCase() : "–"}</td>
                <td>
                  <Badge tone={OUTCOME[s.outcome].tone}>{OUTCOME[s.outcome].label}</Badge>
                </td>
                <td>{stepReason(s)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

// servedVia is the id of the upstream the serving member is reached
// through, when the answer has one the caller may read.
function servedVia(r: Resolution | null): string | undefined {
  return r?.steps.find((s) => s.outcome === "SERVES")?.via?.id;
}

// VirtualPanel shows where the virtual resolves names from: its upstreams
// in order with their rules, and the Resolve box; the upstream an answer
// resolves from is marked in the list.
export function VirtualPanel({ ns, repo, format }: { ns: string; repo: string; format?: Format }) {
  const [{ data, fetching, error }] = useVirtual(ns, repo);
  const [resolution, setResolution] = useState<Resolution | null>(null);
  if (error) return <ErrorBox error={error} />;
  if (!data && fetching) return <Loading what="Loading upstreams" />;
  const v = data?.repository?.virtual;
  if (!v) return null;
  return (
    <>
      <h2>Resolution order</h2>
      {v.upstreams.length === 0 ? (
        <Empty>No upstream you may read.</Empty>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col" className="num">
                  #
                </th>
                <th scope="col">Upstream</th>
                <th scope="col">Kind</th>
                <th scope="col">Rules</th>
              </tr>
            </thead>
            <tbody>
              {v.upstreams.map((u) => (
                <tr key={u.repository.id}>
                  <td className="num">{u.position}</td>
                  <td>
                    <Link to={paths.repository(ns, u.repository.name)}>{u.repository.name}</Link>
                    {v.deployTo?.id === u.repository.id && (
                      <>
                        {" "}
                        <Badge tone="info">deploy target</Badge>
                      </>
                    )}
                    {resolution?.resolvedFrom?.id === u.repository.id ? (
                      <>
                        {" "}
                        <Badge tone="ok">resolved from here</Badge>
                      </>
                    ) : (
                      servedVia(resolution) === u.repository.id && (
                        <>
                          {" "}
                          <Badge tone="ok">resolved through here</Badge>
                        </>
                      )
                    )}
                  </td>
                  <td>{u.repository.kind.toLowerCase()}</td>
                  <td>{u.rules.length === 0 ? <span className="muted">everything</span> : u.rules.map(describeRule).join("; ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p className="help">
        {v.reservedPatterns.length > 0 ? (
          <>
            Never asked of remote upstreams: <code>{v.reservedPatterns.join(", ")}</code>.{" "}
          </>
        ) : null}
        {v.deployTo ? `Pushes and publishes go to ${v.deployTo.name}.` : "Pushes and publishes to this virtual are refused."}
      </p>
      <ResolveBox ns={ns} repo={repo} format={format ?? data?.repository?.format ?? "OCI"} onResolved={setResolution} />
    </>
  );
}

// VirtualSettings edits the settings of an existing virtual repository.
export function VirtualSettings({ ns, repo, format }: { ns: string; repo: string; format: Format }) {
  const [{ data }] = useVirtual(ns, repo);
  const [saved, setSaved] = useState(false);
  const v = data?.repository?.virtual;
  if (!v) return null;
  // A saved change comes back in the query's answer: the form starts again
  // from the new settings.
  return (
    <VirtualSettingsForm
      key={JSON.stringify(v)}
      ns={ns}
      repo={repo}
      format={format}
      initial={draftOf(v)}
      saved={saved}
      setSaved={setSaved}
    />
  );
}

function VirtualSettingsForm({
  ns,
  repo,
  format,
  initial,
  saved,
  setSaved,
}: {
  ns: string;
  repo: string;
  format: Format;
  initial: VirtualDraft;
  saved: boolean;
  setSaved(saved: boolean): void;
}) {
  const [draft, setDraft] = useState(initial);
  const [{ fetching, error }, update] = useMutation(UpdateVirtualMutation);
  const dirty = JSON.stringify(draft) !== JSON.stringify(initial);
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const res = await update({ input: { namespace: ns, name: repo, virtual: virtualInput(draft) } }, ctx);
    if (res.data) setSaved(true);
  };
  return (
    <form className="form panel" onSubmit={onSubmit} autoComplete="off">
      <h3>Virtual settings</h3>
      <VirtualEditor
        ns={ns}
        format={format}
        self={repo}
        value={draft}
        onChange={(d) => {
          setSaved(false);
          setDraft(d);
        }}
      />
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={fetching || !dirty || !draftOk(draft)}>
          {fetching ? "Saving…" : "Save upstreams"}
        </button>
        {saved && !dirty && (
          <span role="status" className="muted">
            Saved.
          </span>
        )}
      </div>
      {error && <ErrorBox error={error} title="Could not save the virtual settings" />}
    </form>
  );
}
