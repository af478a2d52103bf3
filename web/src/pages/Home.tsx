import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, Navigate, useNavigate, useSearchParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { useAuth } from "../auth";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { StatusBadge } from "../components/status";
import { Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { NamespaceOrder } from "../gql/graphql";
import { formatBytes, formatCount, formatTime } from "../format";
import { paths } from "../paths";
import { ViewerQuery } from "../components/Layout";

export const NamespacesQuery = graphql(`
  query Namespaces($first: Int, $after: String, $orderBy: NamespaceOrder, $search: String) {
    namespaces(first: $first, after: $after, orderBy: $orderBy, search: $search) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          id
          slug
          status
          createdAt
          repositoriesCount
          statistics {
            deduplicatedSizeBytes
            componentsCount
          }
        }
      }
    }
  }
`);

const CreateNamespaceMutation = graphql(`
  mutation CreateNamespace($input: CreateNamespaceInput!) {
    createNamespace(input: $input) {
      namespace {
        id
        slug
        status
      }
    }
  }
`);

export const NAMESPACE_PAGE = 50;
const COLUMNS = 6;
// The server is the authority (its message is shown); this only hints early.
const SLUG_RE = /^[a-z](?:[a-z0-9]|-[a-z0-9])+$/;
const ctx = { additionalTypenames: ["Namespace"] };

/** The list's order, as the URL's `sort` names it. */
export const NAMESPACE_SORTS: Record<string, { label: string; orderBy: NamespaceOrder }> = {
  slug: { label: "Slug (A–Z)", orderBy: { field: "SLUG", direction: "ASC" } },
  newest: { label: "Newest first", orderBy: { field: "CREATED_AT", direction: "DESC" } },
  oldest: { label: "Oldest first", orderBy: { field: "CREATED_AT", direction: "ASC" } },
};

/** Search text and order from the URL (`?q=&sort=`), unknown values dropped. */
export function parseNamespaceListParams(params: URLSearchParams): { q: string; sort: string } {
  const sort = params.get("sort") ?? "";
  return { q: (params.get("q") ?? "").trim().toLowerCase(), sort: sort in NAMESPACE_SORTS ? sort : "slug" };
}

export function Home() {
  const { signedIn } = useAuth();
  if (!signedIn) {
    return (
      <section className="narrow">
        <PageTitle>Artifact Registry</PageTitle>
        <p>Container images, npm and Maven packages for many namespaces, stored once per namespace.</p>
        <p>
          <Link className="btn btn-primary" to={paths.signIn()}>
            Sign in with a token
          </Link>
        </p>
        <p className="muted">Or open a namespace with the field at the top to browse its public repositories.</p>
      </section>
    );
  }
  return <SignedInHome />;
}

/**
 * The admin sees every namespace; a namespace token is sent to its
 * namespace: the overview when it administers it, else the repositories it
 * may read (the overview's storage and GC figures need ADMIN).
 */
function SignedInHome() {
  const [{ data, fetching, error }] = useQuery({ query: ViewerQuery });
  const v = data?.viewer;
  if (!data && fetching) return <Loading what="Loading" />;
  if (error && !data) return <ErrorBox error={error} />;
  if (v?.kind === "TOKEN" && v.namespace) {
    const slug = v.namespace.slug;
    return <Navigate to={v.scopes?.includes("ADMIN") ? paths.namespace(slug) : paths.repositories(slug)} replace />;
  }
  return <NamespaceList />;
}

function NamespaceList() {
  const [params, setParams] = useSearchParams();
  const { q, sort } = useMemo(() => parseNamespaceListParams(params), [params]);
  const [text, setText] = useState(q);
  // Another page (back, a shared link) changes q: the field follows.
  useEffect(() => setText(q), [q]);
  const setSearch = useCallback(
    (nextQ: string, nextSort: string) => {
      const p = new URLSearchParams();
      if (nextQ) p.set("q", nextQ);
      if (nextSort !== "slug") p.set("sort", nextSort);
      setParams(p, { replace: true });
    },
    [setParams],
  );
  // Typing narrows the list after a short pause, one query per pause.
  useEffect(() => {
    const next = text.trim().toLowerCase();
    if (next === q) return;
    const timer = setTimeout(() => setSearch(next, sort), 250);
    return () => clearTimeout(timer);
  }, [text, q, sort, setSearch]);
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    setSearch(text.trim().toLowerCase(), sort);
  };
  return (
    <section>
      <PageTitle>Namespaces</PageTitle>
      <CreateNamespace />
      <form className="filters" role="search" aria-label="Search and sort namespaces" onSubmit={onSubmit}>
        <div className="field field-grow">
          <label htmlFor="ns-search">Search</label>
          <input
            id="ns-search"
            type="search"
            value={text}
            placeholder="Slug starts with…"
            onChange={(e) => setText(e.target.value)}
            autoComplete="off"
            spellCheck={false}
            maxLength={255}
          />
        </div>
        <div className="field">
          <label htmlFor="ns-sort">Sort</label>
          <select id="ns-sort" value={sort} onChange={(e) => setSearch(q, e.target.value)}>
            {Object.entries(NAMESPACE_SORTS).map(([k, s]) => (
              <option key={k} value={k}>
                {s.label}
              </option>
            ))}
          </select>
        </div>
      </form>
      <div className="table-wrap">
        <table className="table" aria-label="Namespaces">
          <thead>
            <tr>
              <th scope="col">Namespace</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Repositories
              </th>
              <th scope="col" className="num">
                Storage
              </th>
              <th scope="col" className="num">
                Components
              </th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${sort}?${q}`}
            page={(p) => (
              <NamespacePage
                key={`${sort}?${q}#${p.index}`}
                {...p}
                q={q}
                orderBy={NAMESPACE_SORTS[sort].orderBy}
                onClear={() => setSearch("", sort)}
              />
            )}
          />
        </table>
      </div>
    </section>
  );
}

function NamespacePage({
  q,
  orderBy,
  onClear,
  after,
  index,
  isLast,
  onMore,
}: PageProps & { q: string; orderBy: NamespaceOrder; onClear(): void }) {
  const variables = useMemo(() => ({ first: NAMESPACE_PAGE, after, orderBy, search: q || null }), [after, orderBy, q]);
  const [{ data, fetching, error }] = useQuery({ query: NamespacesQuery, variables, context: ctx });
  const conn = data?.namespaces;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={COLUMNS}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {!conn && fetching && note(<Loading what={index === 0 ? "Loading namespaces" : "Loading more"} />)}
      {conn &&
        conn.edges.length === 0 &&
        index === 0 &&
        note(
          q ? (
            <Empty>
              No namespace slug starts with <code>{q}</code>.{" "}
              <button type="button" className="btn btn-link" onClick={onClear}>
                Clear search
              </button>
            </Empty>
          ) : (
            <Empty>No namespace yet. Create the first one above.</Empty>
          ),
        )}
      {conn?.edges.map(({ node }) => (
        <tr key={node.id} data-namespace={node.slug}>
          <th scope="row" data-label="Namespace">
            <Link to={paths.namespace(node.slug)}>{node.slug}</Link>
          </th>
          <td data-label="Status">
            <StatusBadge status={node.status} />
          </td>
          <td data-label="Repositories" className="num">
            <Link to={paths.repositories(node.slug)}>{formatCount(node.repositoriesCount)}</Link>
          </td>
          <td data-label="Storage" className="num">
            {formatBytes(node.statistics.deduplicatedSizeBytes)}
          </td>
          <td data-label="Components" className="num">
            {formatCount(node.statistics.componentsCount)}
          </td>
          <td data-label="Created">{formatTime(node.createdAt)}</td>
        </tr>
      ))}
      {conn && isLast && (
        <LoadMoreRow
          colSpan={COLUMNS}
          pageInfo={conn.pageInfo}
          onMore={onMore}
          shown={index * NAMESPACE_PAGE + conn.edges.length}
          total={conn.totalCount}
        />
      )}
    </tbody>
  );
}

function CreateNamespace() {
  const [slug, setSlug] = useState("");
  const [{ fetching, error }, create] = useMutation(CreateNamespaceMutation);
  const navigate = useNavigate();
  const valid = SLUG_RE.test(slug) && slug.length <= 63;
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    const res = await create({ input: { slug } }, ctx);
    if (res.data) navigate(paths.namespace(res.data.createNamespace.namespace.slug));
  };
  return (
    <details className="panel">
      <summary>Create namespace</summary>
      <form className="form form-inline" onSubmit={onSubmit}>
        <label htmlFor="ns-slug">Slug</label>
        <input
          id="ns-slug"
          value={slug}
          onChange={(e) => setSlug(e.target.value.toLowerCase())}
          aria-describedby="ns-slug-help"
          aria-invalid={slug !== "" && !valid}
          autoComplete="off"
          spellCheck={false}
          required
        />
        <button type="submit" className="btn btn-primary" disabled={!valid || fetching}>
          Create
        </button>
        <p id="ns-slug-help" className="help">
          2–63 characters: lowercase letters, digits and single hyphens; starts with a letter, does not end with a
          hyphen. It cannot be changed later.
        </p>
      </form>
      {error && <ErrorBox error={error} title="Could not create the namespace" />}
    </details>
  );
}
