import { useEffect, useRef, useState, type ReactNode } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { artifactKind, attachedSummary, formatPlatform, isIndexType, kindLabels, manifestKind } from "../artifacts";
import { useAuth } from "../auth";
import { LoadMore, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { dockerPull } from "../components/usage";
import { Badge, CopyButton, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { formatBytes, formatTime, registryHost, shortDigest } from "../format";
import { paths } from "../paths";
import { ManifestDetail, manifestContext } from "./ManifestDetail";

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
                indexEntries {
                  digest
                  platform {
                    os
                    architecture
                    variant
                  }
                }
                referrers {
                  id
                  artifactType
                }
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
              artifactType
              size
              createdAt
              tags
              subjectDigest
              subject {
                id
                digest
              }
              references {
                id
              }
              parents {
                id
                digest
              }
              referrers {
                id
                artifactType
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

const PAGE = 50;
const ctx = manifestContext;

export function ImageDetail() {
  const { ns = "", repo = "", "*": splat = "" } = useParams();
  const image = splat.replace(/\/+$/, "");
  const [{ data, fetching, error }] = useQuery({ query: ImageQuery, variables: { namespace: ns, name: repo, image }, context: ctx });
  const [params, setParams] = useSearchParams();
  const selected = params.get("manifest");
  // A selection made on this page moves the focus to the detail; one that
  // came with the URL leaves it where the page starts.
  const [clicked, setClicked] = useState(false);
  const select = (digest: string | null) => {
    setClicked(digest !== null);
    setParams(digest ? new URLSearchParams({ manifest: digest }) : new URLSearchParams(), { replace: false });
  };

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
      {selected && <ManifestDetail ns={ns} repo={repo} image={image} digest={selected} onSelect={select} focus={clicked} />}
      <h2 id="tags">Tags</h2>
      <div className="table-wrap">
        <table className="table table-image" aria-labelledby="tags">
          <thead>
            <tr>
              <th scope="col">Tag</th>
              <th scope="col">Manifest</th>
              <th scope="col">Type and platforms</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Attached</th>
              <th scope="col">Pushed</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}/${image}`}
            page={(p) => <TagPage key={p.index} {...p} ns={ns} repo={repo} image={image} onSelect={select} />}
          />
        </table>
      </div>

      <h2 id="manifests">Manifests</h2>
      <div className="table-wrap">
        <table className="table table-image" aria-labelledby="manifests">
          <thead>
            <tr>
              <th scope="col">Digest</th>
              <th scope="col">Type</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Tags or subject</th>
              <th scope="col">Pushed</th>
              <th scope="col">Links</th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}/${image}`}
            page={(p) => (
              <ManifestPage key={p.index} {...p} ns={ns} repo={repo} image={image} selected={selected} onSelect={select} />
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

/** The platforms an index lists (attestation entries, platform unknown/unknown, left out). */
function platformsOf(entries: readonly { platform?: { os: string; architecture: string; variant?: string | null } | null }[] | null | undefined) {
  const out: string[] = [];
  for (const e of entries ?? []) {
    if (!e.platform || e.platform.os === "unknown") continue;
    const p = formatPlatform(e.platform);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

function AttachedBadges({ referrers }: { referrers: readonly { artifactType?: string | null }[] }) {
  if (referrers.length === 0) return <span className="muted">–</span>;
  return <Badge tone="info">{attachedSummary(referrers)}</Badge>;
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
      <td colSpan={7}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {del.error && note(<ErrorBox error={del.error} title="Could not delete the tag" />)}
      {!conn && fetching && note(<Loading what="Loading tags" />)}
      {data && !conn && !fetching && !error && note(<Empty>The image is gone; reload the repository.</Empty>)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No tags: the manifests below are reachable by digest only.</Empty>)}
      {conn?.edges.map(({ node: t }) => {
        const platforms = platformsOf(t.manifest.indexEntries);
        return (
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
            <td data-label="Type" className="small" title={t.manifest.mediaType}>
              {isIndexType(t.manifest.mediaType) ? (
                platforms.length ? (
                  <span data-testid="platforms">{platforms.join(", ")}</span>
                ) : (
                  manifestKind(t.manifest.mediaType)
                )
              ) : (
                manifestKind(t.manifest.mediaType)
              )}
            </td>
            <td data-label="Size" className="num">
              {formatBytes(t.manifest.size)}
            </td>
            <td data-label="Attached">
              <AttachedBadges referrers={t.manifest.referrers} />
            </td>
            <td data-label="Pushed">{formatTime(t.manifest.createdAt)}</td>
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
        );
      })}
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
  const [{ data, fetching, error }] = useQuery({
    query: ImageManifestsQuery,
    variables: { namespace: ns, name: repo, image, first: PAGE, after },
    context: ctx,
  });
  const node = data?.repository?.image;
  const conn = node && node.name === image ? node.manifests : undefined;
  const body = useFocusNewPage(index, conn);
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={6}>{c}</td>
    </tr>
  );
  const digestButton = (d: string, label?: string) => (
    <button type="button" className="btn btn-link mono" title={d} aria-label={label} onClick={() => onSelect(d)}>
      {shortDigest(d)}
    </button>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {!conn && fetching && note(<Loading what="Loading manifests" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No active manifest.</Empty>)}
      {conn?.edges.map(({ node: m }) => {
        const open = selected === m.digest;
        let relation: ReactNode;
        if (m.subjectDigest) {
          relation = (
            <span className="attached-to">
              {kindLabels[artifactKind(m.artifactType)].one} attached to{" "}
              {m.subject ? digestButton(m.subject.digest, `Open ${shortDigest(m.subject.digest)}, the subject`) : <code>{shortDigest(m.subjectDigest)}</code>}
            </span>
          );
        } else if (m.tags.length) {
          relation = m.tags.map((t) => <Badge key={t}>{t}</Badge>);
        } else if (m.parents.length) {
          relation = (
            <span>
              in index {m.parents.slice(0, 3).map((p) => <span key={p.id}>{digestButton(p.digest)} </span>)}
            </span>
          );
        } else {
          relation = <span className="muted">untagged</span>;
        }
        return (
          <tr key={m.id} className={open ? "row-selected" : undefined} data-digest={m.digest}>
            <th scope="row" data-label="Digest">
              <button
                type="button"
                className="btn btn-link mono"
                aria-expanded={open}
                aria-controls={open ? "manifest-detail" : undefined}
                title={m.digest}
                onClick={() => onSelect(open ? null : m.digest)}
              >
                {shortDigest(m.digest)}
              </button>
            </th>
            <td data-label="Type" className="small" title={m.mediaType}>
              {manifestKind(m.mediaType)}
              {m.artifactType && m.subjectDigest && (
                <>
                  <br />
                  <code className="small">{m.artifactType}</code>
                </>
              )}
            </td>
            <td data-label="Size" className="num">
              {formatBytes(m.size)}
            </td>
            <td data-label="Tags or subject">{relation}</td>
            <td data-label="Pushed">{formatTime(m.createdAt)}</td>
            <td data-label="Links" className="small">
              {[
                m.references.length > 0 && `${m.references.length} ${m.references.length === 1 ? "child" : "children"}`,
                m.referrers.length > 0 && `${attachedSummary(m.referrers)} attached`,
              ]
                .filter(Boolean)
                .join(" · ") || <span className="muted">–</span>}
            </td>
          </tr>
        );
      })}
      {conn &&
        isLast &&
        note(<LoadMore pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />)}
    </tbody>
  );
}
