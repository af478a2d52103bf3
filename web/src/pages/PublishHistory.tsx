import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { useQuery } from "urql";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { Badge, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { PublishHistoryQuery } from "../gql/graphql";
import { formatBytes, formatTime, shortDigest } from "../format";
import { paths } from "../paths";

const PublishHistoryQuery = graphql(`
  query PublishHistory($namespace: String!, $from: Time, $to: Time, $first: Int, $after: String) {
    namespace(slug: $namespace) {
      id
      publishHistory(from: $from, to: $to, first: $first, after: $after) {
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          cursor
          node {
            publishedAt
            cached
            repository {
              id
              name
              format
            }
            artifact {
              __typename
              ... on ContainerManifest {
                id
                digest
                mediaType
                size
                softDeletedAt
                tags
                image {
                  id
                  name
                }
              }
              ... on MavenVersion {
                id
                groupId
                artifactId
                version
                sizeBytes
                softDeletedAt
              }
              ... on NpmVersion {
                id
                packageName
                version
                sizeBytes
                softDeletedAt
              }
              ... on CachedArtifact {
                id
                name
                reference
              }
            }
          }
        }
      }
    }
  }
`);

const PAGE = 50;
const ctx = { additionalTypenames: ["ContainerManifest", "MavenVersion", "NpmVersion", "CachedArtifact"] };

/** A date (YYYY-MM-DD) as the start of that day in UTC, or null. */
export function dayStart(value: string | null): string | null {
  if (!value || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return null;
  const d = new Date(`${value}T00:00:00Z`);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** The day after a date, so "to" includes the whole day. */
export function dayEnd(value: string | null): string | null {
  const s = dayStart(value);
  if (!s) return null;
  return new Date(new Date(s).getTime() + 86_400_000).toISOString();
}

export function PublishHistory() {
  const { ns = "" } = useParams();
  const [params, setParams] = useSearchParams();
  const from = params.get("from");
  const to = params.get("to");
  const [fromInput, setFromInput] = useState(from ?? "");
  const [toInput, setToInput] = useState(to ?? "");
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const p = new URLSearchParams();
    if (dayStart(fromInput)) p.set("from", fromInput);
    if (dayStart(toInput)) p.set("to", toInput);
    setParams(p);
  };
  const vars = { from: dayStart(from), to: dayEnd(to) };
  return (
    <section>
      <PageTitle>Publish history</PageTitle>
      <form className="filters" onSubmit={onSubmit} aria-label="Date range">
        <div className="field">
          <label htmlFor="h-from">From (UTC day)</label>
          <input id="h-from" type="date" value={fromInput} onChange={(e) => setFromInput(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="h-to">To (UTC day, inclusive)</label>
          <input id="h-to" type="date" value={toInput} onChange={(e) => setToInput(e.target.value)} />
        </div>
        <div className="field field-end">
          <button type="submit" className="btn">
            Show
          </button>
        </div>
      </form>
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Published</th>
              <th scope="col">Repository</th>
              <th scope="col">Artifact</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Tags</th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${vars.from}/${vars.to}`}
            page={(p) => <HistoryPage key={`${vars.from}/${vars.to}#${p.index}`} {...p} ns={ns} from={vars.from} to={vars.to} />}
          />
        </table>
      </div>
    </section>
  );
}

function HistoryPage({
  ns,
  from,
  to,
  after,
  index,
  isLast,
  onMore,
}: PageProps & { ns: string; from: string | null; to: string | null }) {
  const [{ data, fetching, error }] = useQuery({
    query: PublishHistoryQuery,
    variables: { namespace: ns, from, to, first: PAGE, after },
    context: ctx,
  });
  const conn = data?.namespace?.publishHistory;
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
      {!conn && fetching && note(<Loading what="Loading history" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>Nothing was published or cached in this period.</Empty>)}
      {conn?.edges.map(({ cursor, node: ev }) => {
        const a = ev.artifact;
        return (
          <tr key={cursor}>
            <td data-label="Published">{formatTime(ev.publishedAt)}</td>
            <td data-label="Repository">
              <Link to={paths.repository(ns, ev.repository.name)}>{ev.repository.name}</Link>
            </td>
            <th scope="row" data-label="Artifact">
              <ArtifactCell ns={ns} repo={ev.repository.name} format={ev.repository.format} a={a} />
              {ev.cached && (
                <>
                  {" "}
                  <Badge tone="info">cached</Badge>
                </>
              )}
              {a.__typename !== "CachedArtifact" && a.softDeletedAt && (
                <>
                  {" "}
                  <Badge tone="bad">deleted</Badge>
                </>
              )}
            </th>
            <td data-label="Size" className="num">
              {a.__typename === "CachedArtifact" ? "—" : formatBytes(a.__typename === "ContainerManifest" ? a.size : a.sizeBytes)}
            </td>
            <td data-label="Tags">
              {a.__typename === "ContainerManifest" && a.tags.map((t) => <Badge key={t}>{t}</Badge>)}
            </td>
          </tr>
        );
      })}
      {conn && isLast && <LoadMoreRow colSpan={5} pageInfo={conn.pageInfo} onMore={onMore} />}
    </tbody>
  );
}

type Artifact = NonNullable<PublishHistoryQuery["namespace"]>["publishHistory"]["edges"][number]["node"]["artifact"];

/**
 * What was published (an image manifest, an npm version or a Maven version)
 * or cached by a remote repository (named as upstream: image@digest,
 * package@version, groupId:artifactId:version).
 */
function ArtifactCell({ ns, repo, format, a }: { ns: string; repo: string; format: string; a: Artifact }) {
  switch (a.__typename) {
    case "CachedArtifact":
      return (
        <span>
          {a.name}
          {a.reference.startsWith("sha256:") ? (
            <>
              @<span className="mono">{shortDigest(a.reference)}</span>
            </>
          ) : format === "MAVEN" ? (
            `:${a.reference}`
          ) : (
            `@${a.reference}`
          )}{" "}
          <Badge>{format.toLowerCase()}</Badge>
        </span>
      );
    case "ContainerManifest":
      return (
        <Link to={paths.image(ns, repo, a.image.name, a.digest)}>
          {a.image.name}@<span className="mono">{shortDigest(a.digest)}</span>
        </Link>
      );
    case "NpmVersion":
      return (
        <span>
          {a.packageName}@{a.version} <Badge>npm</Badge>
        </span>
      );
    case "MavenVersion":
      return (
        <span>
          {a.groupId}:{a.artifactId}:{a.version} <Badge>maven</Badge>
        </span>
      );
  }
}
