import { useState, type FormEvent } from "react";
import { Link, useParams } from "react-router";
import { useMutation, useQuery, type CombinedError } from "urql";
import { errorCode } from "../errors";
import { useAuth } from "../auth";
import { StatusBadge } from "../components/status";
import { Dl, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { NamespaceCondition } from "../gql/graphql";
import { formatAge, formatBytes, formatCount, formatTime } from "../format";
import { paths } from "../paths";

const OverviewQuery = graphql(`
  query NamespaceOverview($slug: String!) {
    namespace(slug: $slug) {
      id
      slug
      status
      createdAt
      deletedAt
      purgedAt
      blockedAt
      disabledAt
      suspendedAt
      statistics {
        deduplicatedSizeBytes
        componentsCount
      }
      gcQueue {
        tracked
        due
        oldestDueAgeSeconds
        excluded
        lastReclaimedAt
      }
      repositories(first: 1) {
        totalCount
      }
      collections(first: 100) {
        totalCount
        edges {
          node {
            id
            name
            isDefault
            createdAt
          }
        }
      }
    }
  }
`);

// What anonymous callers may read: no statistics, queue or collections.
const PublicOverviewQuery = graphql(`
  query NamespacePublicOverview($slug: String!) {
    namespace(slug: $slug) {
      id
      slug
      status
      createdAt
      repositories(first: 1) {
        totalCount
      }
    }
  }
`);

const SetConditionMutation = graphql(`
  mutation SetNamespaceCondition($slug: String!, $condition: NamespaceCondition!, $active: Boolean!) {
    setNamespaceCondition(slug: $slug, condition: $condition, active: $active) {
      namespace {
        id
        status
        blockedAt
        disabledAt
        suspendedAt
      }
    }
  }
`);

const CreateCollectionMutation = graphql(`
  mutation CreateRepositoryCollection($input: CreateRepositoryCollectionInput!) {
    createRepositoryCollection(input: $input) {
      collection {
        id
        name
        isDefault
        createdAt
      }
    }
  }
`);

const ctx = { additionalTypenames: ["RepositoryCollection", "Repository"] };

const CONDITIONS: { condition: NamespaceCondition; key: "blockedAt" | "disabledAt" | "suspendedAt"; what: string }[] = [
  { condition: "SUSPENDED", key: "suspendedAt", what: "Reads are served, writes are refused (billing)." },
  { condition: "DISABLED", key: "disabledAt", what: "No request is served; data is kept." },
  { condition: "BLOCKED", key: "blockedAt", what: "Security block: no request is served, the slug stays reserved." },
];

export function NamespaceOverview() {
  const { signedIn } = useAuth();
  return signedIn ? <AdminOverview /> : <PublicOverview />;
}

function PublicOverview() {
  const { ns = "" } = useParams();
  const [{ data, fetching, error }] = useQuery({ query: PublicOverviewQuery, variables: { slug: ns } });
  const notFound = errorCode(error) === "NOT_FOUND";
  if (error && !notFound) return <ErrorBox error={error} />;
  if (!data && fetching) return <Loading what="Loading namespace" />;
  const n = data?.namespace;
  if (!n) return <NoNamespace slug={ns} error={error} />;
  return (
    <section>
      <PageTitle>
        {n.slug} <StatusBadge status={n.status} />
      </PageTitle>
      <Dl
        items={[
          ["Public repositories", <Link to={paths.repositories(ns)}>{formatCount(n.repositories.totalCount)}</Link>],
          ["Created", formatTime(n.createdAt)],
        ]}
      />
      <p className="muted">Sign in to see storage, the garbage-collection queue and private repositories.</p>
    </section>
  );
}

function NoNamespace({ slug, error }: { slug: string; error?: CombinedError }) {
  return (
    <section>
      <PageTitle>Namespace not found</PageTitle>
      {error && <ErrorBox error={error} />}
      <Empty>
        There is no namespace <code>{slug}</code>, or you may not see it.
      </Empty>
    </section>
  );
}

function AdminOverview() {
  const { ns = "" } = useParams();
  const [{ data, fetching, error }] = useQuery({ query: OverviewQuery, variables: { slug: ns }, context: ctx });
  const notFound = errorCode(error) === "NOT_FOUND";
  if (error && !data?.namespace && !notFound) return <ErrorBox error={error} />;
  if (!data && fetching) return <Loading what="Loading namespace" />;
  const n = data?.namespace;
  if (!n) return <NoNamespace slug={ns} error={error} />;
  const q = n.gcQueue;
  return (
    <section>
      <PageTitle
        actions={
          <Link className="btn btn-primary" to={paths.newRepository(ns)}>
            Create repository
          </Link>
        }
      >
        {n.slug} <StatusBadge status={n.status} />
      </PageTitle>
      {error && <ErrorBox error={error} />}
      <div className="cards">
        <div className="card">
          <h2>Storage</h2>
          <p className="metric" data-testid="dedup-size">
            {formatBytes(n.statistics.deduplicatedSizeBytes)}
          </p>
          <p className="muted">Each blob counted once across the namespace.</p>
        </div>
        <div className="card">
          <h2>Components</h2>
          <p className="metric">{formatCount(n.statistics.componentsCount)}</p>
          <p className="muted">Container manifests, npm and Maven versions (trash included).</p>
        </div>
        <div className="card">
          <h2>Repositories</h2>
          <p className="metric">
            <Link to={paths.repositories(ns)}>{formatCount(n.repositories.totalCount)}</Link>
          </p>
          <p className="muted">Active repositories; deleted ones are in the trash.</p>
        </div>
        <div className="card">
          <h2>Garbage collection</h2>
          <Dl
            items={[
              ["Tracked", formatCount(q.tracked)],
              ["Due", formatCount(q.due)],
              ["Oldest due", formatAge(q.oldestDueAgeSeconds)],
              ["Excluded", q.excluded > 0 ? <strong className="warn-text">{formatCount(q.excluded)}</strong> : "0"],
              ["Last reclaimed", q.lastReclaimedAt ? formatTime(q.lastReclaimedAt) : "never recorded"],
            ]}
          />
        </div>
      </div>

      <h2>Status</h2>
      <Dl
        items={[
          ["Status", <StatusBadge status={n.status} />],
          ["Created", formatTime(n.createdAt)],
          ...(n.deletedAt ? [["Deleted", formatTime(n.deletedAt)] as [string, string]] : []),
          ...(n.purgedAt ? [["Purged", formatTime(n.purgedAt)] as [string, string]] : []),
        ]}
      />
      <Conditions ns={ns} n={n} />

      <h2>Collections</h2>
      <Collections ns={ns} items={n.collections.edges.map((e) => e.node)} total={n.collections.totalCount} />
    </section>
  );
}

function Conditions({
  ns,
  n,
}: {
  ns: string;
  n: { blockedAt?: string | null; disabledAt?: string | null; suspendedAt?: string | null };
}) {
  const [{ fetching, error }, setCondition] = useMutation(SetConditionMutation);
  return (
    <div className="panel">
      <table className="table table-compact">
        <thead>
          <tr>
            <th scope="col">Condition</th>
            <th scope="col">Effect</th>
            <th scope="col">Since</th>
            <th scope="col">
              <span className="visually-hidden">Action</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {CONDITIONS.map(({ condition, key, what }) => {
            const since = n[key];
            return (
              <tr key={condition}>
                <th scope="row" data-label="Condition">
                  {condition.toLowerCase()}
                </th>
                <td data-label="Effect">{what}</td>
                <td data-label="Since">{since ? formatTime(since) : "–"}</td>
                <td>
                  <button
                    type="button"
                    className={since ? "btn" : "btn btn-danger-outline"}
                    disabled={fetching}
                    onClick={() => {
                      const verb = since ? "Lift" : "Impose";
                      if (window.confirm(`${verb} the ${condition.toLowerCase()} condition on ${ns}?`)) {
                        void setCondition({ slug: ns, condition, active: !since }, ctx);
                      }
                    }}
                  >
                    {since ? "Lift" : "Impose"}
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {error && <ErrorBox error={error} title="Could not change the condition" />}
    </div>
  );
}

function Collections({
  ns,
  items,
  total,
}: {
  ns: string;
  items: { id: string; name: string; isDefault: boolean; createdAt: string }[];
  total: number;
}) {
  const [name, setName] = useState("");
  const [{ fetching, error }, create] = useMutation(CreateCollectionMutation);
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    const res = await create({ input: { namespace: ns, name } }, ctx);
    if (res.data) setName("");
  };
  return (
    <div className="panel">
      <ul className="chips">
        {items.map((c) => (
          <li key={c.id}>
            <Link to={paths.repositories(ns, new URLSearchParams({ collection: c.name }).toString())}>{c.name}</Link>
            {c.isDefault && <span className="muted"> (default)</span>}
          </li>
        ))}
      </ul>
      {total > items.length && <p className="muted">{total - items.length} more not shown.</p>}
      <form className="form form-inline" onSubmit={onSubmit}>
        <label htmlFor="collection-name">New collection</label>
        <input
          id="collection-name"
          value={name}
          onChange={(e) => setName(e.target.value.toLowerCase())}
          autoComplete="off"
          spellCheck={false}
          required
        />
        <button type="submit" className="btn" disabled={fetching || !name}>
          Create collection
        </button>
      </form>
      {error && <ErrorBox error={error} title="Could not create the collection" />}
    </div>
  );
}
