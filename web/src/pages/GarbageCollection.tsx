// Garbage collection of a namespace: the review queue, the candidates
// excluded after repeated failures (with requeue), and the instance-wide
// kill switch (admin token only).
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, useParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { Badge, Dl, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { formatAge, formatCount, formatTime, shortDigest } from "../format";
import { paths } from "../paths";

const GcStatusQuery = graphql(`
  query GarbageCollectionStatus($namespace: String!) {
    namespace(slug: $namespace) {
      id
      gcQueue {
        tracked
        due
        oldestDueAgeSeconds
        excluded
        lastReclaimedAt
        reclaim {
          enabled
          changedBy
          reason
          updatedAt
        }
      }
    }
  }
`);

const ExcludedQuery = graphql(`
  query ExcludedGcCandidates($namespace: String!, $first: Int, $after: String) {
    excludedGcCandidates(namespace: $namespace, first: $first, after: $after) {
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          digest
          reviewAfter
          attempts
          strikes
          excludedAt
          lastError
          createdAt
        }
      }
    }
  }
`);

const SetGcMutation = graphql(`
  mutation SetGarbageCollection($enabled: Boolean!, $reason: String) {
    setGarbageCollection(enabled: $enabled, reason: $reason) {
      garbageCollection {
        enabled
        changedBy
        reason
        updatedAt
      }
    }
  }
`);

const RequeueMutation = graphql(`
  mutation RequeueGcCandidate($input: RequeueGcCandidateInput!) {
    requeueGcCandidate(input: $input) {
      candidate {
        digest
        excludedAt
        strikes
      }
    }
  }
`);

const PAGE = 50;
// Neither the queue nor a candidate has an id: refetch by typename.
const ctx = { additionalTypenames: ["GCQueue", "GCCandidate", "GarbageCollection"] };

export function GarbageCollection() {
  const { ns = "" } = useParams();
  const [{ data, fetching, error }] = useQuery({ query: GcStatusQuery, variables: { namespace: ns }, context: ctx });
  const q = data?.namespace?.gcQueue;
  return (
    <section>
      <PageTitle>Garbage collection</PageTitle>
      <p className="muted">
        Blobs no artifact references any more wait for review, then are deleted from storage. Candidates that keep failing are excluded and
        wait for an operator.
      </p>
      {error && <ErrorBox error={error} />}
      {!data && fetching && <Loading what="Loading the queue" />}
      {q && (
        <>
          <KillSwitch reclaim={q.reclaim ?? null} />
          <h2>Queue of {ns}</h2>
          <Dl
            items={[
              ["Tracked", formatCount(q.tracked)],
              ["Due", formatCount(q.due)],
              ["Oldest due", formatAge(q.oldestDueAgeSeconds)],
              ["Excluded", q.excluded > 0 ? <strong className="warn-text">{formatCount(q.excluded)}</strong> : "0"],
              ["Last reclaimed", q.lastReclaimedAt ? formatTime(q.lastReclaimedAt) : "never"],
            ]}
          />
        </>
      )}
      <h2 id="excluded">Excluded candidates</h2>
      <div className="table-wrap">
        <table className="table" aria-labelledby="excluded">
          <thead>
            <tr>
              <th scope="col">Blob</th>
              <th scope="col">Excluded</th>
              <th scope="col" className="num">
                Strikes
              </th>
              <th scope="col">Last error</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <PagedList resetKey={ns} page={(p) => <ExcludedPage key={p.index} {...p} ns={ns} />} />
        </table>
      </div>
    </section>
  );
}

type Reclaim = { enabled: boolean; changedBy?: string | null; reason?: string | null; updatedAt: string } | null;

/** The instance-wide kill switch; null when the caller may not see it. */
export function KillSwitch({ reclaim }: { reclaim: Reclaim }) {
  const [reason, setReason] = useState("");
  const [{ fetching, error }, set] = useMutation(SetGcMutation);
  if (!reclaim) {
    return (
      <div className="panel">
        <h2>Kill switch</h2>
        <p className="muted">Only the admin token sees and sets the instance-wide kill switch.</p>
      </div>
    );
  }
  const on = reclaim.enabled;
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    const verb = on ? "Stop every object deletion of the garbage collector, on every namespace" : "Let the garbage collector delete again";
    if (!window.confirm(`${verb}?`)) return;
    const res = await set({ enabled: !on, reason: reason.trim() || null }, ctx);
    if (res.data) setReason("");
  };
  return (
    <div className={`panel${on ? "" : " panel-danger"}`} data-testid="kill-switch">
      <h2>Kill switch</h2>
      <p role="status">
        {on ? (
          <>
            <Badge tone="ok">deleting</Badge> The garbage collector deletes reclaimable blobs (whole instance).
          </>
        ) : (
          <>
            <Badge tone="bad">stopped</Badge> Nothing is deleted, on any namespace; candidates are still recorded and rechecked.
          </>
        )}
      </p>
      <Dl
        items={[
          ["Changed by", reclaim.changedBy ?? "never changed"],
          ["Reason", reclaim.reason ?? "–"],
          ["Since", formatTime(reclaim.updatedAt)],
        ]}
      />
      <form className="form" onSubmit={onSubmit} aria-label="Kill switch">
        <label htmlFor="gc-reason">Reason (recorded with the change)</label>
        <input id="gc-reason" value={reason} onChange={(e) => setReason(e.target.value)} maxLength={1024} autoComplete="off" />
        <div className="form-actions">
          <button type="submit" className={on ? "btn btn-danger" : "btn btn-primary"} disabled={fetching}>
            {on ? "Stop deleting" : "Resume deleting"}
          </button>
        </div>
        {error && <ErrorBox error={error} title="Could not change the kill switch" />}
      </form>
    </div>
  );
}

function ExcludedPage({ ns, after, index, isLast, onMore }: PageProps & { ns: string }) {
  const [{ data, fetching, error }] = useQuery({
    query: ExcludedQuery,
    variables: { namespace: ns, first: PAGE, after },
    context: ctx,
  });
  const [requeue, doRequeue] = useMutation(RequeueMutation);
  const conn = data?.excludedGcCandidates;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={5}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {requeue.error && note(<ErrorBox error={requeue.error} title="Could not requeue the candidate" />)}
      {!conn && fetching && note(<Loading what="Loading excluded candidates" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No excluded candidate.</Empty>)}
      {conn?.edges.map(({ node: c }) => (
        <tr key={c.digest}>
          <th scope="row" data-label="Blob">
            <Link className="mono" to={paths.search(ns, c.digest)} title={c.digest}>
              {shortDigest(c.digest)}
            </Link>
          </th>
          <td data-label="Excluded">{formatTime(c.excludedAt)}</td>
          <td data-label="Strikes" className="num">
            {c.strikes}
          </td>
          <td data-label="Last error" className="small">
            {c.lastError ?? "–"}
          </td>
          <td className="actions">
            <button
              type="button"
              className="btn btn-small"
              disabled={requeue.fetching}
              aria-label={`Requeue ${shortDigest(c.digest)}`}
              onClick={() => void doRequeue({ input: { namespace: ns, digest: c.digest } }, ctx)}
            >
              Requeue
            </button>
          </td>
        </tr>
      ))}
      {conn && isLast && <LoadMoreRow colSpan={5} pageInfo={conn.pageInfo} onMore={onMore} />}
    </tbody>
  );
}
