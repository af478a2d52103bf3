import { useEffect, useMemo, useRef, type ReactNode } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { useQuery } from "urql";
import { useAuth } from "../auth";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { VisibilityBadge } from "../components/status";
import { Badge, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { RepositoryFilter, RepositoryOrder } from "../gql/graphql";
import { formatBytes, formatCount, formatTime } from "../format";
import { paths } from "../paths";
import {
  FORMATS,
  KINDS,
  ORDER_FIELDS,
  ORDER_LABELS,
  VISIBILITIES,
  defaultDirection,
  filterVariable,
  isFiltered,
  parseRepoListParams,
  repoListSearch,
  type RepoListState,
} from "../repoQuery";

export const RepositoryListQuery = graphql(`
  query RepositoryList(
    $namespace: String!
    $first: Int
    $after: String
    $orderBy: RepositoryOrder
    $filter: RepositoryFilter
  ) {
    namespace(slug: $namespace) {
      id
      repositories(first: $first, after: $after, orderBy: $orderBy, filter: $filter) {
        totalCount
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          cursor
          node {
            id
            name
            description
            format
            kind
            visibility
            artifactsCount
            downloadsCount
            sizeBytes
            lastUpdatedAt
            createdAt
          }
        }
      }
    }
  }
`);

const CollectionNamesQuery = graphql(`
  query CollectionNames($namespace: String!) {
    namespace(slug: $namespace) {
      id
      collections(first: 100) {
        edges {
          node {
            id
            name
          }
        }
      }
    }
  }
`);

export const REPO_PAGE_SIZE = 50;
const ctx = { additionalTypenames: ["Repository"] };
const COLUMNS = 8;

export function RepositoryList() {
  const { ns = "" } = useParams();
  const [params, setParams] = useSearchParams();
  const state = useMemo(() => parseRepoListParams(params), [params]);
  const search = repoListSearch(state);
  const update = (next: RepoListState) => setParams(new URLSearchParams(repoListSearch(next)), { replace: true });

  return (
    <section>
      <PageTitle
        actions={
          <Link className="btn btn-primary" to={paths.newRepository(ns)}>
            Create repository
          </Link>
        }
      >
        Repositories
      </PageTitle>
      <Filters ns={ns} state={state} onChange={update} />
      <div className="table-wrap">
        <table className="table" aria-describedby="repo-list-caption">
          <caption id="repo-list-caption" className="visually-hidden">
            Repositories of {ns}, sorted by {ORDER_LABELS[state.orderBy.field].toLowerCase()}{" "}
            {state.orderBy.direction === "ASC" ? "ascending" : "descending"}
          </caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Format</th>
              <th scope="col">Kind</th>
              <th scope="col">Visibility</th>
              <th scope="col" className="num">
                Artifacts
              </th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col" className="num">
                Downloads
              </th>
              <th scope="col">Last updated</th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}?${search}`}
            page={(p) => (
              <RepositoryPage
                key={`${ns}?${search}#${p.index}`}
                {...p}
                ns={ns}
                orderBy={state.orderBy}
                filter={state.filter}
                onClear={() => update({ ...state, filter: {} })}
              />
            )}
          />
        </table>
      </div>
    </section>
  );
}

export function RepositoryPage({
  ns,
  orderBy,
  filter,
  after,
  index,
  isLast,
  onMore,
  onClear,
}: PageProps & { ns: string; orderBy: RepositoryOrder; filter: RepositoryFilter; onClear(): void }) {
  const variables = useMemo(
    () => ({ namespace: ns, first: REPO_PAGE_SIZE, after, orderBy, filter: filterVariable(filter) }),
    [ns, after, orderBy, filter],
  );
  const [{ data, fetching, error }] = useQuery({ query: RepositoryListQuery, variables, context: ctx });
  const conn = data?.namespace?.repositories;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);

  const note = (content: ReactNode) => (
    <tr className="row-note">
      <td colSpan={COLUMNS}>{content}</td>
    </tr>
  );
  return (
    <tbody ref={body} data-page={index}>
      {error && note(<ErrorBox error={error} />)}
      {!conn && fetching && note(<Loading what={index === 0 ? "Loading repositories" : "Loading more"} />)}
      {data && !data.namespace && !error && note(<Empty>There is no namespace {ns}, or you may not see it.</Empty>)}
      {conn &&
        conn.edges.length === 0 &&
        index === 0 &&
        note(
          isFiltered(filter) ? (
            <Empty>
              No repository matches these filters.{" "}
              <button type="button" className="btn btn-link" onClick={onClear}>
                Clear filters
              </button>
            </Empty>
          ) : (
            <Empty>
              No repository yet. <Link to={paths.newRepository(ns)}>Create the first one</Link>.
            </Empty>
          ),
        )}
      {conn?.edges.map(({ node: r }) => (
        <tr key={r.id}>
          <th scope="row" data-label="Name" className="cell-name">
            <Link to={paths.repository(ns, r.name)}>{r.name}</Link>
            {r.description && <div className="muted small clamp">{r.description}</div>}
          </th>
          <td data-label="Format">
            <Badge>{r.format.toLowerCase()}</Badge>
          </td>
          <td data-label="Kind">{r.kind.toLowerCase()}</td>
          <td data-label="Visibility">
            <VisibilityBadge visibility={r.visibility} />
          </td>
          <td data-label="Artifacts" className="num">
            {formatCount(r.artifactsCount)}
          </td>
          <td data-label="Size" className="num">
            {formatBytes(r.sizeBytes)}
          </td>
          <td data-label="Downloads" className="num">
            {formatCount(r.downloadsCount)}
          </td>
          {/* The last push; a repository nothing was pushed to yet shows "–". */}
          <td data-label="Last updated">{formatTime(r.lastUpdatedAt)}</td>
        </tr>
      ))}
      {conn &&
        isLast &&
        <LoadMoreRow colSpan={COLUMNS}
            pageInfo={conn.pageInfo}
            onMore={onMore}
            shown={index * REPO_PAGE_SIZE + conn.edges.length}
            total={conn.totalCount}
          />}
    </tbody>
  );
}

export function Filters({
  ns,
  state,
  onChange,
}: {
  ns: string;
  state: RepoListState;
  onChange(next: RepoListState): void;
}) {
  const { signedIn } = useAuth();
  const { filter, orderBy } = state;
  const setFilter = (patch: Partial<RepositoryFilter>) => onChange({ ...state, filter: { ...filter, ...patch } });
  return (
    <form className="filters" role="search" aria-label="Filter and sort repositories" onSubmit={(e) => e.preventDefault()}>
      <Select
        id="f-format"
        label="Format"
        value={filter.format ?? ""}
        options={FORMATS}
        onChange={(v) => setFilter({ format: (v || undefined) as RepositoryFilter["format"] })}
        shortcut
      />
      <Select
        id="f-kind"
        label="Kind"
        value={filter.kind ?? ""}
        options={KINDS}
        onChange={(v) => setFilter({ kind: (v || undefined) as RepositoryFilter["kind"] })}
      />
      <Select
        id="f-visibility"
        label="Visibility"
        value={filter.visibility ?? ""}
        options={VISIBILITIES}
        onChange={(v) => setFilter({ visibility: (v || undefined) as RepositoryFilter["visibility"] })}
      />
      {signedIn ? (
        <CollectionSelect ns={ns} value={filter.collection ?? ""} onChange={(v) => setFilter({ collection: v || undefined })} />
      ) : null}
      <div className="field">
        <label htmlFor="f-sort">Sort by</label>
        <select
          id="f-sort"
          value={orderBy.field}
          onChange={(e) => {
            const field = e.target.value as RepositoryOrder["field"];
            onChange({ ...state, orderBy: { field, direction: defaultDirection(field) } });
          }}
        >
          {ORDER_FIELDS.map((f) => (
            <option key={f} value={f}>
              {ORDER_LABELS[f]}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <span className="label" id="f-dir-label">
          Order
        </span>
        <button
          type="button"
          className="btn"
          aria-labelledby="f-dir-label"
          aria-describedby="f-dir-value"
          onClick={() =>
            onChange({ ...state, orderBy: { ...orderBy, direction: orderBy.direction === "ASC" ? "DESC" : "ASC" } })
          }
        >
          <span id="f-dir-value">{orderBy.direction === "ASC" ? "Ascending ↑" : "Descending ↓"}</span>
        </button>
      </div>
      {isFiltered(filter) && (
        <div className="field field-end">
          <button type="button" className="btn btn-link" onClick={() => onChange({ ...state, filter: {} })}>
            Clear filters
          </button>
        </div>
      )}
    </form>
  );
}

function Select({
  id,
  label,
  value,
  options,
  onChange,
  shortcut,
}: {
  id: string;
  label: string;
  value: string;
  options: readonly string[];
  onChange(v: string): void;
  shortcut?: boolean;
}) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)} data-shortcut={shortcut ? "/" : undefined}>
        <option value="">Any</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o.toLowerCase()}
          </option>
        ))}
      </select>
    </div>
  );
}

function CollectionSelect({ ns, value, onChange }: { ns: string; value: string; onChange(v: string): void }) {
  const [{ data }] = useQuery({ query: CollectionNamesQuery, variables: { namespace: ns } });
  const names = data?.namespace?.collections.edges.map((e) => e.node.name) ?? [];
  if (value && !names.includes(value)) names.unshift(value);
  return (
    <div className="field">
      <label htmlFor="f-collection">Collection</label>
      <select id="f-collection" value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">Any</option>
        {names.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </div>
  );
}
