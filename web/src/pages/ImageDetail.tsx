import { useEffect, useRef, type ReactNode } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { useAuth } from "../auth";
import { LoadMore, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { dockerPull, orasPull } from "../components/usage";
import { Badge, CopyBlock, CopyButton, Dl, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { formatBytes, formatTime, registryHost, shortDigest } from "../format";
import { paths } from "../paths";

const ImageQuery = graphql(`
  query Image($namespace: String!, $name: String!, $image: String!) {
    repository(namespace: $namespace, name: $name) {
      id
      image(name: $image) {
        id
        name
        lastDownloadedAt
      }
    }
  }
`);

const ImageTagsQuery = graphql(`
  query ImageTags($namespace: String!, $name: String!, $image: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      image(name: $image) {
        id
        name
        tags(first: $first, after: $after) {
          totalCount
          pageInfo {
            hasNextPage
            endCursor
          }
          edges {
            node {
              id
              name
              manifest {
                id
                digest
                mediaType
                size
                createdAt
              }
            }
          }
        }
      }
    }
  }
`);

const ImageManifestsQuery = graphql(`
  query ImageManifests($namespace: String!, $name: String!, $image: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      image(name: $image) {
        id
        name
        manifests(first: $first, after: $after) {
          totalCount
          pageInfo {
            hasNextPage
            endCursor
          }
          edges {
            node {
              id
              digest
              mediaType
              size
              createdAt
              tags
              references {
                id
                digest
                mediaType
                size
              }
              referrers {
                id
                digest
                mediaType
              }
            }
          }
        }
      }
    }
  }
`);

const DeleteTagMutation = graphql(`
  mutation DeleteContainerTag($input: ContainerTagRefInput!) {
    deleteContainerTag(input: $input) {
      tag
      image {
        id
        name
      }
    }
  }
`);

const DeleteManifestMutation = graphql(`
  mutation DeleteContainerManifest($input: ContainerManifestRefInput!) {
    deleteContainerManifest(input: $input) {
      manifest {
        id
        digest
        softDeletedAt
        tags
      }
    }
  }
`);

const PAGE = 50;
const ctx = { additionalTypenames: ["ContainerImage", "ContainerTag", "ContainerManifest"] };

export function ImageDetail() {
  const { ns = "", repo = "", "*": splat = "" } = useParams();
  const image = splat.replace(/\/+$/, "");
  const [{ data, fetching, error }] = useQuery({ query: ImageQuery, variables: { namespace: ns, name: repo, image }, context: ctx });
  const [params, setParams] = useSearchParams();
  const selected = params.get("manifest");
  const select = (digest: string | null) =>
    setParams(digest ? new URLSearchParams({ manifest: digest }) : new URLSearchParams(), { replace: false });

  const header = (
    <>
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to={paths.repositories(ns)}>Repositories</Link> <span aria-hidden="true">/</span>{" "}
        <Link to={paths.repository(ns, repo)}>{repo}</Link> <span aria-hidden="true">/</span>{" "}
        <span aria-current="page">{image}</span>
      </nav>
      <PageTitle>{image}</PageTitle>
    </>
  );
  if (!data && fetching) return <section>{header}<Loading what="Loading image" /></section>;
  if (error && !data?.repository?.image) return <section>{header}<ErrorBox error={error} /></section>;
  if (!data?.repository?.image) {
    return (
      <section>
        {header}
        <Empty>
          There is no image <code>{image}</code> in <Link to={paths.repository(ns, repo)}>{repo}</Link>.
        </Empty>
      </section>
    );
  }
  return (
    <section>
      {header}
      <h2 id="tags">Tags</h2>
      <div className="table-wrap">
        <table className="table" aria-labelledby="tags">
          <thead>
            <tr>
              <th scope="col">Tag</th>
              <th scope="col">Manifest</th>
              <th scope="col">Media type</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}/${image}`}
            page={(p) => (
              <TagPage key={p.index} {...p} ns={ns} repo={repo} image={image} onSelect={select} />
            )}
          />
        </table>
      </div>

      <h2 id="manifests">Manifests</h2>
      <div className="table-wrap">
        <table className="table" aria-labelledby="manifests">
          <thead>
            <tr>
              <th scope="col">Digest</th>
              <th scope="col">Media type</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Tags</th>
              <th scope="col">Created</th>
              <th scope="col">Links</th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}/${image}`}
            page={(p) => (
              <ManifestPage
                key={p.index}
                {...p}
                ns={ns}
                repo={repo}
                image={image}
               
                selected={selected}
                onSelect={select}
              />
            )}
          />
        </table>
      </div>
    </section>
  );
}

interface ImageRef {
  ns: string;
  repo: string;
  image: string;
}

function useFocusNewPage(index: number, loaded: unknown) {
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && loaded) focusFirstLinkIfLost(body.current);
  }, [index, loaded]);
  return body;
}

function TagPage({
  ns,
  repo,
  image,
  after,
  index,
  isLast,
  onMore,
  onSelect,
}: PageProps & ImageRef & { onSelect(d: string): void }) {
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: ImageTagsQuery,
    variables: { namespace: ns, name: repo, image, first: PAGE, after },
    context: ctx,
  });
  const [del, deleteTag] = useMutation(DeleteTagMutation);
  const node = data?.repository?.image;
  const conn = node && node.name === image ? node.tags : undefined;
  const body = useFocusNewPage(index, conn);
  const host = registryHost();
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={6}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {del.error && note(<ErrorBox error={del.error} title="Could not delete the tag" />)}
      {!conn && fetching && note(<Loading what="Loading tags" />)}
      {data && !conn && !fetching && !error && note(<Empty>The image is gone; reload the repository.</Empty>)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No tags: the manifests below are reachable by digest only.</Empty>)}
      {conn?.edges.map(({ node: t }) => (
        <tr key={t.id} data-tag={t.name}>
          <th scope="row" data-label="Tag">
            {t.name}
          </th>
          <td data-label="Manifest">
            <a
              href={paths.image(ns, repo, image, t.manifest.digest)}
              onClick={(e) => {
                e.preventDefault();
                onSelect(t.manifest.digest);
              }}
              className="mono"
              title={t.manifest.digest}
            >
              {shortDigest(t.manifest.digest)}
            </a>
          </td>
          <td data-label="Media type" className="small">
            {t.manifest.mediaType}
          </td>
          <td data-label="Size" className="num">
            {formatBytes(t.manifest.size)}
          </td>
          <td data-label="Created">{formatTime(t.manifest.createdAt)}</td>
          <td className="actions">
            <CopyButton label={`docker pull command for ${t.name}`} text={dockerPull(host, ns, repo, image, t.name)}>
              Copy pull
            </CopyButton>
            {signedIn && (
              <button
                type="button"
                className="btn btn-small btn-danger-outline"
                disabled={del.fetching}
                aria-label={`Delete tag ${t.name}`}
                onClick={() => {
                  if (window.confirm(`Delete tag ${t.name}? The manifest stays reachable by digest.`)) {
                    void deleteTag({ input: { namespace: ns, repository: repo, image, tag: t.name } }, ctx);
                  }
                }}
              >
                Delete
              </button>
            )}
          </td>
        </tr>
      ))}
      {conn &&
        isLast &&
        note(<LoadMore pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />)}
    </tbody>
  );
}

function ManifestPage({
  ns,
  repo,
  image,
  after,
  index,
  isLast,
  onMore,
  selected,
  onSelect,
}: PageProps & ImageRef & { selected: string | null; onSelect(d: string | null): void }) {
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: ImageManifestsQuery,
    variables: { namespace: ns, name: repo, image, first: PAGE, after },
    context: ctx,
  });
  const [del, deleteManifest] = useMutation(DeleteManifestMutation);
  const node = data?.repository?.image;
  const conn = node && node.name === image ? node.manifests : undefined;
  const body = useFocusNewPage(index, conn);
  const host = registryHost();
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={6}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {del.error && note(<ErrorBox error={del.error} title="Could not delete the manifest" />)}
      {!conn && fetching && note(<Loading what="Loading manifests" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No active manifest.</Empty>)}
      {conn?.edges.flatMap(({ node: m }) => {
        const open = selected === m.digest;
        const rows = [
          <tr key={m.id} className={open ? "row-selected" : undefined}>
            <th scope="row" data-label="Digest">
              <button
                type="button"
                className="btn btn-link mono"
                aria-expanded={open}
                aria-controls={`manifest-${m.id}`}
                title={m.digest}
                onClick={() => onSelect(open ? null : m.digest)}
              >
                {shortDigest(m.digest)}
              </button>
            </th>
            <td data-label="Media type" className="small">
              {m.mediaType}
            </td>
            <td data-label="Size" className="num">
              {formatBytes(m.size)}
            </td>
            <td data-label="Tags">
              {m.tags.length ? m.tags.map((t) => <Badge key={t}>{t}</Badge>) : <span className="muted">untagged</span>}
            </td>
            <td data-label="Created">{formatTime(m.createdAt)}</td>
            <td data-label="Links" className="small">
              {m.references.length > 0 && <span>{m.references.length} children </span>}
              {m.referrers.length > 0 && <span>{m.referrers.length} referrers</span>}
              {m.references.length === 0 && m.referrers.length === 0 && <span className="muted">–</span>}
            </td>
          </tr>,
        ];
        if (open) {
          rows.push(
            <tr key={`${m.id}-detail`} className="row-detail" id={`manifest-${m.id}`}>
              <td colSpan={6}>
                <CopyBlock label="Digest" text={m.digest} />
                <Dl
                  items={[
                    ["Media type", m.mediaType],
                    ["Size (tree)", formatBytes(m.size)],
                    ["Created", formatTime(m.createdAt)],
                  ]}
                />
                <CopyBlock label="docker pull" text={dockerPull(host, ns, repo, image, m.digest)} />
                <CopyBlock label="oras pull" text={orasPull(host, ns, repo, image, m.digest)} />
                {m.references.length > 0 && (
                  <>
                    <h3>Children (platforms, layers of an index)</h3>
                    <ul className="plain">
                      {m.references.map((c) => (
                        <li key={c.id}>
                          <button type="button" className="btn btn-link mono" onClick={() => onSelect(c.digest)}>
                            {shortDigest(c.digest)}
                          </button>{" "}
                          <span className="small">{c.mediaType}</span> <span className="muted">{formatBytes(c.size)}</span>
                        </li>
                      ))}
                    </ul>
                  </>
                )}
                {m.referrers.length > 0 && (
                  <>
                    <h3>Referenced by</h3>
                    <ul className="plain">
                      {m.referrers.map((c) => (
                        <li key={c.id}>
                          <button type="button" className="btn btn-link mono" onClick={() => onSelect(c.digest)}>
                            {shortDigest(c.digest)}
                          </button>{" "}
                          <span className="small">{c.mediaType}</span>
                        </li>
                      ))}
                    </ul>
                  </>
                )}
                {signedIn && (
                  <p>
                    <button
                      type="button"
                      className="btn btn-danger-outline"
                      disabled={del.fetching}
                      onClick={() => {
                        if (window.confirm(`Move manifest ${shortDigest(m.digest)} to the trash? Its tags are deleted.`)) {
                          void deleteManifest({ input: { namespace: ns, repository: repo, image, digest: m.digest } }, ctx).then(
                            (r) => r.data && onSelect(null),
                          );
                        }
                      }}
                    >
                      Move manifest to trash
                    </button>
                  </p>
                )}
              </td>
            </tr>,
          );
        }
        return rows;
      })}
      {conn &&
        isLast &&
        note(<LoadMore pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />)}
    </tbody>
  );
}
