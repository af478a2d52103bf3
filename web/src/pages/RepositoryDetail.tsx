import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { useAuth } from "../auth";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { VisibilityBadge } from "../components/status";
import { Usage } from "../components/usage";
import { Badge, Dl, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { errorCode } from "../errors";
import type { Visibility } from "../gql/graphql";
import { formatBytes, formatCount, formatTime } from "../format";
import { paths } from "../paths";
import { VISIBILITIES } from "../repoQuery";
import { MavenPackageList } from "./MavenPackages";
import { NpmPackageList } from "./NpmPackages";
import { RemotePanel, RemoteSettings, RemoteUsage } from "./RemoteRepository";
import { VirtualPanel, VirtualSettings } from "./VirtualRepository";

const RepositoryQuery = graphql(`
  query Repository($namespace: String!, $name: String!) {
    repository(namespace: $namespace, name: $name) {
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
      collections {
        id
        name
        isDefault
      }
    }
  }
`);

const RepositoryImagesQuery = graphql(`
  query RepositoryImages($namespace: String!, $name: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      images(first: $first, after: $after) {
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
            lastDownloadedAt
            tags(first: 5) {
              totalCount
              edges {
                node {
                  id
                  name
                }
              }
            }
            manifests(first: 1) {
              totalCount
            }
          }
        }
      }
    }
  }
`);

const NamespaceCollectionsQuery = graphql(`
  query NamespaceCollections($namespace: String!) {
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

const UpdateRepositoryMutation = graphql(`
  mutation UpdateRepository($input: UpdateRepositoryInput!) {
    updateRepository(input: $input) {
      repository {
        id
        description
        visibility
      }
    }
  }
`);

const DeleteRepositoryMutation = graphql(`
  mutation DeleteRepository($input: RepositoryRefInput!) {
    deleteRepository(input: $input) {
      repository {
        id
        name
        softDeletedAt
      }
    }
  }
`);

const LinkCollectionMutation = graphql(`
  mutation LinkRepositoryToCollection($input: RepositoryCollectionLinkInput!) {
    linkRepositoryToCollection(input: $input) {
      repository {
        id
        collections {
          id
          name
          isDefault
        }
      }
    }
  }
`);

const UnlinkCollectionMutation = graphql(`
  mutation UnlinkRepositoryFromCollection($input: RepositoryCollectionLinkInput!) {
    unlinkRepositoryFromCollection(input: $input) {
      repository {
        id
        collections {
          id
          name
          isDefault
        }
      }
    }
  }
`);

const IMAGE_PAGE = 50;
const ctx = { additionalTypenames: ["Repository", "ContainerImage", "ContainerTag", "ContainerManifest"] };

export function RepositoryDetail() {
  const { ns = "", repo = "" } = useParams();
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: RepositoryQuery,
    variables: { namespace: ns, name: repo },
    context: ctx,
  });
  const notFound = errorCode(error) === "NOT_FOUND";
  if (error && !data?.repository && !notFound) return <ErrorBox error={error} />;
  if (!data && fetching) return <Loading what="Loading repository" />;
  const r = data?.repository;
  if (!r) {
    return (
      <section>
        <PageTitle>Repository not found</PageTitle>
        {error && <ErrorBox error={error} />}
        <Empty>
          There is no active repository <code>{repo}</code> in <code>{ns}</code>. It may be in the{" "}
          <Link to={paths.trash(ns)}>trash</Link>.
        </Empty>
      </section>
    );
  }
  const container = r.format === "DOCKER" || r.format === "OCI";
  const remote = r.kind === "REMOTE";
  const virtual = r.kind === "VIRTUAL";
  return (
    <section>
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to={paths.repositories(ns)}>Repositories</Link> <span aria-hidden="true">/</span>{" "}
        <span aria-current="page">{r.name}</span>
      </nav>
      <PageTitle actions={<Link to={paths.lifecycle(ns, r.name)}>Lifecycle policy</Link>}>
        {r.name} <Badge>{r.format.toLowerCase()}</Badge> <VisibilityBadge visibility={r.visibility} />
      </PageTitle>
      {r.description && <p className="lead">{r.description}</p>}
      <Dl
        items={[
          ["Kind", r.kind.toLowerCase()],
          ["Artifacts", formatCount(r.artifactsCount)],
          ["Size", formatBytes(r.sizeBytes)],
          ["Downloads", formatCount(r.downloadsCount)],
          ["Last updated", formatTime(r.lastUpdatedAt)],
          ["Created", formatTime(r.createdAt)],
          ["Collections", r.collections.map((c) => c.name).join(", ") || "–"],
        ]}
      />

      {virtual ? (
        <VirtualPanel ns={ns} repo={r.name} format={r.format} />
      ) : remote ? (
        <RemotePanel ns={ns} repo={r.name} format={r.format} admin={signedIn} />
      ) : container ? (
        <>
          <h2>Images</h2>
          <div className="table-wrap">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Image</th>
                  <th scope="col">Tags</th>
                  <th scope="col" className="num">
                    Manifests
                  </th>
                  <th scope="col">Last pulled</th>
                </tr>
              </thead>
              <PagedList
                resetKey={`${ns}/${repo}`}
                page={(p) => <ImagePage key={p.index} {...p} ns={ns} repo={repo} />}
              />
            </table>
          </div>
        </>
      ) : r.format === "NPM" ? (
        <>
          <h2>Packages</h2>
          <NpmPackageList ns={ns} repo={r.name} />
        </>
      ) : r.format === "MAVEN" ? (
        <>
          <h2>Packages</h2>
          <MavenPackageList ns={ns} repo={r.name} />
        </>
      ) : null}

      <h2>Use this repository</h2>
      {remote ? <RemoteUsage ns={ns} repo={r.name} format={r.format} /> : <Usage format={r.format} ns={ns} repo={r.name} />}

      {signedIn && (
        <>
          <h2>Settings</h2>
          <Settings ns={ns} r={r} />
          {remote && <RemoteSettings ns={ns} repo={r.name} format={r.format} />}
          {virtual && <VirtualSettings ns={ns} repo={r.name} format={r.format} />}
          <CollectionLinks ns={ns} repo={r.name} linked={r.collections} />
          <DangerZone ns={ns} repo={r.name} />
        </>
      )}
    </section>
  );
}

function ImagePage({ ns, repo, after, index, isLast, onMore }: PageProps & { ns: string; repo: string }) {
  const [{ data, fetching, error }] = useQuery({
    query: RepositoryImagesQuery,
    variables: { namespace: ns, name: repo, first: IMAGE_PAGE, after },
    context: ctx,
  });
  const conn = data?.repository?.images;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={4}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {!conn && fetching && note(<Loading what="Loading images" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No image yet. Push one with the commands below.</Empty>)}
      {conn?.edges.map(({ node: img }) => (
        <tr key={img.id}>
          <th scope="row" data-label="Image">
            <Link to={paths.image(ns, repo, img.name)}>{img.name}</Link>
          </th>
          <td data-label="Tags">
            {img.tags.edges.map((t) => (
              <Badge key={t.node.id}>{t.node.name}</Badge>
            ))}
            {img.tags.totalCount > img.tags.edges.length && (
              <span className="muted"> +{img.tags.totalCount - img.tags.edges.length}</span>
            )}
            {img.tags.totalCount === 0 && <span className="muted">untagged</span>}
          </td>
          <td data-label="Manifests" className="num">
            {formatCount(img.manifests.totalCount)}
          </td>
          <td data-label="Last pulled">{formatTime(img.lastDownloadedAt)}</td>
        </tr>
      ))}
      {conn &&
        isLast &&
        <LoadMoreRow colSpan={4} pageInfo={conn.pageInfo} onMore={onMore} shown={index * IMAGE_PAGE + conn.edges.length} total={conn.totalCount} />}
    </tbody>
  );
}

function Settings({ ns, r }: { ns: string; r: { id: string; description?: string | null; visibility: Visibility } }) {
  const [description, setDescription] = useState(r.description ?? "");
  const [visibility, setVisibility] = useState<Visibility>(r.visibility);
  const [saved, setSaved] = useState(false);
  const [{ fetching, error }, update] = useMutation(UpdateRepositoryMutation);
  useEffect(() => {
    setDescription(r.description ?? "");
    setVisibility(r.visibility);
  }, [r.description, r.visibility]);
  const dirty = description !== (r.description ?? "") || visibility !== r.visibility;
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const res = await update({ input: { namespace: ns, id: r.id, description, visibility } }, ctx);
    if (res.data) setSaved(true);
  };
  return (
    <form className="form panel" onSubmit={onSubmit}>
      <label htmlFor="set-description">Description</label>
      <textarea id="set-description" rows={2} maxLength={1024} value={description} onChange={(e) => setDescription(e.target.value)} />
      <label htmlFor="set-visibility">Visibility</label>
      <select id="set-visibility" value={visibility} onChange={(e) => setVisibility(e.target.value as Visibility)}>
        {VISIBILITIES.map((v) => (
          <option key={v} value={v}>
            {v.toLowerCase()}
          </option>
        ))}
      </select>
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={!dirty || fetching}>
          Save
        </button>
        {saved && !dirty && (
          <span role="status" className="ok-text">
            Saved.
          </span>
        )}
      </div>
      {error && <ErrorBox error={error} title="Could not save" />}
    </form>
  );
}

function CollectionLinks({
  ns,
  repo,
  linked,
}: {
  ns: string;
  repo: string;
  linked: { id: string; name: string; isDefault: boolean }[];
}) {
  const [{ data }] = useQuery({ query: NamespaceCollectionsQuery, variables: { namespace: ns }, context: ctx });
  const [pick, setPick] = useState("");
  const [link, doLink] = useMutation(LinkCollectionMutation);
  const [unlink, doUnlink] = useMutation(UnlinkCollectionMutation);
  const linkedNames = new Set(linked.map((c) => c.name));
  const available = (data?.namespace?.collections.edges ?? []).map((e) => e.node.name).filter((n) => !linkedNames.has(n));
  const error = link.error ?? unlink.error;
  return (
    <div className="panel">
      <h3>Collections</h3>
      <ul className="chips">
        {linked.map((c) => (
          <li key={c.id}>
            {c.name}
            <button
              type="button"
              className="btn btn-small btn-ghost"
              aria-label={`Remove from collection ${c.name}`}
              disabled={unlink.fetching || linked.length < 2}
              title={linked.length < 2 ? "A repository stays in at least one collection" : undefined}
              onClick={() => void doUnlink({ input: { namespace: ns, repository: repo, collection: c.name } }, ctx)}
            >
              ×
            </button>
          </li>
        ))}
      </ul>
      {available.length > 0 && (
        <form
          className="form form-inline"
          onSubmit={(e) => {
            e.preventDefault();
            if (pick) void doLink({ input: { namespace: ns, repository: repo, collection: pick } }, ctx).then(() => setPick(""));
          }}
        >
          <label htmlFor="link-collection">Add to collection</label>
          <select id="link-collection" value={pick} onChange={(e) => setPick(e.target.value)}>
            <option value="">Choose…</option>
            {available.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
          <button type="submit" className="btn" disabled={!pick || link.fetching}>
            Add
          </button>
        </form>
      )}
      {error && <ErrorBox error={error} title="Could not change the collections" />}
    </div>
  );
}

function DangerZone({ ns, repo }: { ns: string; repo: string }) {
  const [{ fetching, error }, del] = useMutation(DeleteRepositoryMutation);
  const navigate = useNavigate();
  const onDelete = async () => {
    if (!window.confirm(`Move repository ${repo} to the trash? It can be restored from the trash.`)) return;
    const res = await del({ input: { namespace: ns, name: repo } }, ctx);
    if (res.data) navigate(paths.repositories(ns));
  };
  return (
    <div className="panel panel-danger">
      <h3>Delete</h3>
      <p>The repository moves to the trash with its artifacts; its name stays reserved until it is purged.</p>
      <button type="button" className="btn btn-danger" onClick={onDelete} disabled={fetching}>
        Move to trash
      </button>
      {error && <ErrorBox error={error} title="Could not delete the repository" />}
    </div>
  );
}
