import { useState, type FormEvent } from "react";
import { Link, useNavigate } from "react-router";
import { useMutation, useQuery } from "urql";
import { useAuth } from "../auth";
import { LoadMore, PagedList, type PageProps } from "../components/PagedList";
import { StatusBadge } from "../components/status";
import { Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { formatBytes, formatCount, formatTime } from "../format";
import { paths } from "../paths";
import { ViewerQuery } from "../components/Layout";

const NamespacesQuery = graphql(`
  query Namespaces($first: Int, $after: String) {
    namespaces(first: $first, after: $after) {
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

const PAGE = 50;
// The server is the authority (its message is shown); this only hints early.
const SLUG_RE = /^[a-z0-9](?:[a-z0-9]|-[a-z0-9])*$/;
const ctx = { additionalTypenames: ["Namespace"] };

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

/** The admin sees every namespace; a namespace token is sent to its namespace. */
function SignedInHome() {
  const [{ data, fetching }] = useQuery({ query: ViewerQuery });
  const v = data?.viewer;
  if (!data && fetching) return <Loading what="Loading" />;
  if (v?.kind === "TOKEN" && v.namespace) {
    return (
      <section className="narrow">
        <PageTitle>Artifact Registry</PageTitle>
        <p>
          You are signed in with the token <strong>{v.name}</strong> of namespace{" "}
          <Link to={paths.namespace(v.namespace.slug)}>{v.namespace.slug}</Link>.
        </p>
      </section>
    );
  }
  return (
    <section>
      <PageTitle>Namespaces</PageTitle>
      <CreateNamespace />
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Namespace</th>
              <th scope="col">Status</th>
              <th scope="col" className="num">
                Storage
              </th>
              <th scope="col" className="num">
                Components
              </th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <PagedList resetKey="namespaces" page={(p) => <NamespacePage key={p.index} {...p} />} />
        </table>
      </div>
    </section>
  );
}

function NamespacePage({ after, index, isLast, onMore }: PageProps) {
  const [{ data, fetching, error }] = useQuery({ query: NamespacesQuery, variables: { first: PAGE, after }, context: ctx });
  const conn = data?.namespaces;
  return (
    <tbody>
      {error && (
        <tr>
          <td colSpan={5}>
            <ErrorBox error={error} />
          </td>
        </tr>
      )}
      {!conn && fetching && (
        <tr>
          <td colSpan={5}>
            <Loading what="Loading namespaces" />
          </td>
        </tr>
      )}
      {conn && conn.edges.length === 0 && index === 0 && (
        <tr>
          <td colSpan={5}>
            <Empty>No namespace yet. Create the first one above.</Empty>
          </td>
        </tr>
      )}
      {conn?.edges.map(({ node }) => (
        <tr key={node.id}>
          <th scope="row" data-label="Namespace">
            <Link to={paths.namespace(node.slug)}>{node.slug}</Link>
          </th>
          <td data-label="Status">
            <StatusBadge status={node.status} />
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
        <tr className="row-more">
          <td colSpan={5}>
            <LoadMore pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />
          </td>
        </tr>
      )}
    </tbody>
  );
}

function CreateNamespace() {
  const [slug, setSlug] = useState("");
  const [{ fetching, error }, create] = useMutation(CreateNamespaceMutation);
  const navigate = useNavigate();
  const valid = SLUG_RE.test(slug);
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
