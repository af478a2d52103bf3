// Lifecycle policy editor: the namespace default (/n/:ns/lifecycle) or a
// repository's override (/n/:ns/r/:repo/lifecycle). Enable, minimum age
// and the keep rules are edited as a draft; "Preview" runs the server's dry
// run of that draft, and "Save" is offered only once the current draft has
// been previewed, so nobody saves a policy without seeing what it deletes.
import { useState, type FormEvent } from "react";
import { Link, useParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { LifecycleRuleType } from "../gql/graphql";
import { formatBytes, formatCount, formatTime, shortDigest } from "../format";
import { paths } from "../paths";

const PolicyQuery = graphql(`
  query LifecyclePolicyOf($namespace: String!, $repository: String!, $withRepo: Boolean!) {
    namespace(slug: $namespace) {
      id
      lifecyclePolicy {
        id
        enabled
        minAgeDays
        rules {
          type
          count
          pattern
          days
        }
      }
    }
    repository(namespace: $namespace, name: $repository) @include(if: $withRepo) {
      id
      format
      lifecyclePolicy {
        id
        enabled
        minAgeDays
        rules {
          type
          count
          pattern
          days
        }
      }
    }
  }
`);

const PreviewQuery = graphql(`
  query LifecyclePreview($namespace: String!, $repository: String, $policy: LifecyclePolicyDraft) {
    previewLifecyclePolicy(namespace: $namespace, repository: $repository, policy: $policy) {
      artifactCount
      sizeBytes
      items(first: 20) {
        pageInfo {
          hasNextPage
        }
        edges {
          cursor
          node {
            kind
            id
            repository
            group
            name
            tags
            createdAt
            sizeBytes
          }
        }
      }
    }
  }
`);

const SetPolicyMutation = graphql(`
  mutation SetLifecyclePolicy($input: SetLifecyclePolicyInput!) {
    setLifecyclePolicy(input: $input) {
      policy {
        id
        enabled
        minAgeDays
        rules {
          type
          count
          pattern
          days
        }
      }
    }
  }
`);

const RunPolicyMutation = graphql(`
  mutation RunLifecyclePolicy($input: RunLifecyclePolicyInput!) {
    runLifecyclePolicy(input: $input) {
      deletedCount
    }
  }
`);

type Rule = { type: LifecycleRuleType; value: string };
type Draft = { enabled: boolean; minAgeDays: string; rules: Rule[] };

const RULES: [LifecycleRuleType, string, string][] = [
  ["KEEP_LAST_N", "Keep the last N", "count"],
  ["KEEP_REGEX", "Keep matching (regex)", "pattern"],
  ["KEEP_DOWNLOADED_WITHIN", "Keep downloaded within N days", "days"],
  ["KEEP_SNAPSHOT_BUILDS", "Keep the last N SNAPSHOT builds (Maven)", "count"],
];
const MAX_RULES = 10;

type StoredRule = { type: LifecycleRuleType; count?: number | null; pattern?: string | null; days?: number | null };

function toDraft(p: { enabled: boolean; minAgeDays: number; rules: StoredRule[] } | null | undefined): Draft {
  if (!p) return { enabled: false, minAgeDays: "1", rules: [] };
  return {
    enabled: p.enabled,
    minAgeDays: String(p.minAgeDays),
    rules: p.rules.map((r) => ({ type: r.type, value: String(r.pattern ?? r.count ?? r.days ?? "") })),
  };
}

function ruleInput(r: Rule) {
  const field = RULES.find(([t]) => t === r.type)?.[2];
  if (field === "pattern") return { type: r.type, pattern: r.value };
  const n = Number.parseInt(r.value, 10);
  return { type: r.type, [field ?? "count"]: Number.isNaN(n) ? null : n };
}

function draftInput(d: Draft) {
  const age = Number.parseInt(d.minAgeDays, 10);
  return { enabled: d.enabled, minAgeDays: Number.isNaN(age) ? -1 : age, rules: d.rules.map(ruleInput) };
}

export function LifecyclePolicy() {
  const { ns = "", repo } = useParams();
  const [{ data, fetching, error }] = useQuery({
    query: PolicyQuery,
    variables: { namespace: ns, repository: repo ?? "", withRepo: repo !== undefined },
  });
  if (fetching && !data) return <Loading what="Loading the lifecycle policy" />;
  if (error && !data) return <ErrorBox error={error} />;
  const stored = repo ? data?.repository?.lifecyclePolicy : data?.namespace?.lifecyclePolicy;
  const key = stored?.id ?? "none";
  return (
    <section aria-labelledby="page-heading">
      <PageTitle>{repo ? `Lifecycle policy of ${repo}` : "Namespace lifecycle policy"}</PageTitle>
      <p className="muted">
        An artifact is deleted (moved to the <Link to={paths.trash(ns)}>trash</Link>) when the policy is enabled, it is
        older than the minimum age and no keep rule retains it. Rules count per image or package, newest push first.
        {!repo && " Repositories with their own policy ignore this default."}
        {repo && stored && " This override replaces the namespace default for this repository."}
        {repo && !stored && " This repository has no override yet: the namespace default applies until one is saved here."}
      </p>
      <Editor key={key} ns={ns} repo={repo} initial={toDraft(stored)} />
    </section>
  );
}

function Editor({ ns, repo, initial }: { ns: string; repo?: string; initial: Draft }) {
  const [draft, setDraft] = useState<Draft>(initial);
  const [previewed, setPreviewed] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const input = draftInput(draft);
  const inputKey = JSON.stringify(input);
  const [preview, runPreview] = useQuery({
    query: PreviewQuery,
    variables: { namespace: ns, repository: repo ?? null, policy: input },
    pause: previewed !== inputKey,
    requestPolicy: "network-only",
  });
  const [setResult, setPolicy] = useMutation(SetPolicyMutation);
  const [runResult, runPolicy] = useMutation(RunPolicyMutation);

  const change = (d: Draft) => {
    setDraft(d);
    setSaved(false);
  };
  const setRule = (i: number, r: Partial<Rule>) =>
    change({ ...draft, rules: draft.rules.map((x, j) => (j === i ? { ...x, ...r } : x)) });
  const onPreview = (e: FormEvent) => {
    e.preventDefault();
    if (previewed === inputKey) runPreview({ requestPolicy: "network-only" });
    setPreviewed(inputKey);
  };
  const canSave = previewed === inputKey && !!preview.data && !preview.error;
  const onSave = async () => {
    const r = await setPolicy({ input: { namespace: ns, repository: repo ?? null, ...input } });
    if (!r.error) setSaved(true);
  };
  const onRun = async () => {
    if (!window.confirm("Apply the saved policy now? What it deletes goes to the trash.")) return;
    await runPolicy({ input: { namespace: ns, repository: repo ?? null } });
  };
  const pv = canSave ? preview.data?.previewLifecyclePolicy : undefined;

  return (
    <>
      <form className="form panel" onSubmit={onPreview} aria-label="Lifecycle policy">
        <label className="checkbox">
          <input
            type="checkbox"
            checked={draft.enabled}
            onChange={(e) => change({ ...draft, enabled: e.target.checked })}
          />{" "}
          Enabled
        </label>
        <label htmlFor="lc-min-age">Minimum age (days): nothing younger is deleted</label>
        <input
          id="lc-min-age"
          type="number"
          min={0}
          max={3650}
          value={draft.minAgeDays}
          onChange={(e) => change({ ...draft, minAgeDays: e.target.value })}
        />
        <fieldset>
          <legend>Keep rules (at most {MAX_RULES})</legend>
          {draft.rules.length === 0 && <p className="muted">No rules: the policy deletes nothing.</p>}
          <ol className="rule-list">
            {draft.rules.map((r, i) => (
              <li key={i} data-testid="lifecycle-rule">
                <select
                  aria-label={`Rule ${i + 1} type`}
                  value={r.type}
                  onChange={(e) => setRule(i, { type: e.target.value as LifecycleRuleType })}
                >
                  {RULES.map(([t, label]) => (
                    <option key={t} value={t}>
                      {label}
                    </option>
                  ))}
                </select>{" "}
                <input
                  aria-label={`Rule ${i + 1} ${RULES.find(([t]) => t === r.type)?.[2]}`}
                  value={r.value}
                  onChange={(e) => setRule(i, { value: e.target.value })}
                  autoComplete="off"
                />{" "}
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() => change({ ...draft, rules: draft.rules.filter((_, j) => j !== i) })}
                >
                  Remove
                </button>
              </li>
            ))}
          </ol>
          <button
            type="button"
            className="btn btn-small"
            disabled={draft.rules.length >= MAX_RULES}
            onClick={() => change({ ...draft, rules: [...draft.rules, { type: "KEEP_LAST_N", value: "" }] })}
          >
            Add rule
          </button>
        </fieldset>
        <div className="form-actions">
          <button type="submit" className="btn">
            Preview
          </button>
          <button type="button" className="btn btn-primary" disabled={!canSave || setResult.fetching} onClick={onSave}>
            Save
          </button>
          <button type="button" className="btn btn-danger" disabled={runResult.fetching} onClick={onRun}>
            Run now
          </button>
        </div>
        {!canSave && <p className="muted">Preview the policy to see what it would delete before saving it.</p>}
        {saved && (
          <p role="status" className="ok-text">
            Saved.
          </p>
        )}
        {runResult.data && (
          <p role="status">Moved {formatCount(runResult.data.runLifecyclePolicy.deletedCount)} items to the trash.</p>
        )}
        {setResult.error && <ErrorBox error={setResult.error} title="Not saved" />}
        {runResult.error && <ErrorBox error={runResult.error} title="Not run" />}
      </form>
      {previewed === inputKey && preview.fetching && <Loading what="Evaluating the policy" />}
      {previewed === inputKey && preview.error && <ErrorBox error={preview.error} title="Preview failed" />}
      {pv && (
        <section className="panel" aria-label="Dry run" data-testid="lifecycle-preview">
          <h2>Dry run</h2>
          <p>
            Would delete <strong>{formatCount(pv.artifactCount)}</strong> items ({formatBytes(pv.sizeBytes)}).
          </p>
          {pv.items.edges.length === 0 ? (
            <Empty>Nothing would be deleted.</Empty>
          ) : (
            <div className="table-wrap">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Repository</th>
                    <th scope="col">Image or package</th>
                    <th scope="col">Item</th>
                    <th scope="col">Pushed</th>
                    <th scope="col" className="num">
                      Size
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {pv.items.edges.map(({ cursor, node }) => (
                    <tr key={cursor}>
                      <td>{node.repository}</td>
                      <td>{node.group}</td>
                      <td>
                        {node.kind === "CONTAINER_MANIFEST" ? shortDigest(node.name) : node.name}
                        {node.tags.length > 0 && <span className="muted"> ({node.tags.join(", ")})</span>}
                        {node.kind === "CONTAINER_MANIFEST" && node.tags.length === 0 && (
                          <span className="muted"> (untagged)</span>
                        )}
                      </td>
                      <td>{formatTime(node.createdAt)}</td>
                      <td className="num">{formatBytes(node.sizeBytes)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {pv.items.pageInfo.hasNextPage && <p className="muted">The first 20 are listed.</p>}
        </section>
      )}
    </>
  );
}
