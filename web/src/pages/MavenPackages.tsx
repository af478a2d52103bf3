// Maven repositories: the package list of a repository, one package with
// its versions, and one version with its files, the <dependency> snippet
// and the settings.xml server entry.
import { useEffect, useRef, type ReactNode } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { useAuth } from "../auth";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import {
  mavenDependency,
  mavenFileDependency,
  mavenMainArtifact,
  mavenPom,
  mavenSettings,
  mavenURL,
  type MavenCoordinates,
} from "../components/usage";
import { Badge, CopyBlock, CopyButton, Dl, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { errorCode } from "../errors";
import { formatBytes, formatCount, formatTime } from "../format";
import { paths } from "../paths";

const MavenPackagesQuery = graphql(`
  query MavenPackages($namespace: String!, $name: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      mavenPackages(first: $first, after: $after) {
        totalCount
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          cursor
          node {
            id
            groupId
            artifactId
            lastDownloadedAt
            versions(first: 1) {
              totalCount
            }
          }
        }
      }
    }
  }
`);

const MavenPackageQuery = graphql(`
  query MavenPackage($namespace: String!, $name: String!, $groupId: String!, $artifactId: String!) {
    repository(namespace: $namespace, name: $name) {
      id
      mavenPackage(groupId: $groupId, artifactId: $artifactId) {
        id
        groupId
        artifactId
        lastDownloadedAt
        files(first: 20) {
          edges {
            node {
              id
              fileName
              sizeBytes
            }
          }
        }
      }
    }
  }
`);

const MavenVersionsQuery = graphql(`
  query MavenPackageVersions(
    $namespace: String!
    $name: String!
    $groupId: String!
    $artifactId: String!
    $first: Int
    $after: String
  ) {
    repository(namespace: $namespace, name: $name) {
      id
      mavenPackage(groupId: $groupId, artifactId: $artifactId) {
        id
        versions(first: $first, after: $after) {
          totalCount
          pageInfo {
            hasNextPage
            endCursor
          }
          edges {
            cursor
            node {
              id
              version
              isSnapshot
              sizeBytes
              createdAt
              lastDownloadedAt
            }
          }
        }
      }
    }
  }
`);

const MavenVersionQuery = graphql(`
  query MavenVersionDetail(
    $namespace: String!
    $name: String!
    $groupId: String!
    $artifactId: String!
    $version: String!
    $first: Int
    $after: String
  ) {
    repository(namespace: $namespace, name: $name) {
      id
      mavenPackage(groupId: $groupId, artifactId: $artifactId) {
        id
        version(version: $version) {
          id
          version
          isSnapshot
          sizeBytes
          createdAt
          lastDownloadedAt
          files(first: $first, after: $after) {
            pageInfo {
              hasNextPage
              endCursor
            }
            edges {
              cursor
              node {
                id
                fileName
                sizeBytes
                sha256
                sha1
                md5
              }
            }
          }
        }
      }
    }
  }
`);

const DeleteMavenVersionMutation = graphql(`
  mutation DeleteMavenVersion($input: PackageItemRefInput!) {
    deleteMavenVersion(input: $input) {
      version {
        id
        softDeletedAt
      }
    }
  }
`);

const DeleteMavenPackageMutation = graphql(`
  mutation DeleteMavenPackage($input: PackageItemRefInput!) {
    deleteMavenPackage(input: $input) {
      package {
        id
        softDeletedAt
      }
    }
  }
`);

const PAGE = 50;
const FILE_PAGE = 100;
const ctx = { additionalTypenames: ["MavenPackage", "MavenVersion", "MavenFile"] };

function useFocusNewPage(index: number, loaded: unknown) {
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && loaded) focusFirstLinkIfLost(body.current);
  }, [index, loaded]);
  return body;
}

function noteRow(cols: number) {
  return (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={cols}>{c}</td>
    </tr>
  );
}

/** The URL of a file of a version, as Maven fetches it. */
export function mavenFileURL(origin: string, ns: string, repo: string, groupId: string, artifactId: string, version: string, file: string) {
  return `${mavenURL(origin, ns, repo)}${groupId.split(".").join("/")}/${artifactId}/${version}/${file}`;
}

/** The packages of a Maven repository (on its repository screen). */
export function MavenPackageList({ ns, repo }: { ns: string; repo: string }) {
  return (
    <div className="table-wrap">
      <table className="table" aria-label="Packages">
        <thead>
          <tr>
            <th scope="col">Artifact</th>
            <th scope="col">Group</th>
            <th scope="col" className="num">
              Versions
            </th>
            <th scope="col">Last download</th>
          </tr>
        </thead>
        <PagedList resetKey={`${ns}/${repo}`} page={(p) => <MavenPackagePage key={p.index} {...p} ns={ns} repo={repo} />} />
      </table>
    </div>
  );
}

function MavenPackagePage({ ns, repo, after, index, isLast, onMore }: PageProps & { ns: string; repo: string }) {
  const [{ data, fetching, error }] = useQuery({
    query: MavenPackagesQuery,
    variables: { namespace: ns, name: repo, first: PAGE, after },
    context: ctx,
  });
  const conn = data?.repository?.mavenPackages;
  const body = useFocusNewPage(index, conn);
  const note = noteRow(4);
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {!conn && fetching && note(<Loading what="Loading packages" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No package yet. Deploy one with the settings below.</Empty>)}
      {conn?.edges.map(({ node: p }) => (
        <tr key={p.id}>
          <th scope="row" data-label="Artifact">
            <Link to={paths.mavenPackage(ns, repo, p.groupId, p.artifactId)}>{p.artifactId}</Link>
          </th>
          <td data-label="Group" className="mono small">
            {p.groupId}
          </td>
          <td data-label="Versions" className="num">
            {formatCount(p.versions.totalCount)}
          </td>
          <td data-label="Last download">{formatTime(p.lastDownloadedAt)}</td>
        </tr>
      ))}
      {conn &&
        isLast &&
        <LoadMoreRow colSpan={4} pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />}
    </tbody>
  );
}

function Crumbs({ ns, repo, groupId, artifactId, version }: { ns: string; repo: string; groupId: string; artifactId: string; version?: string }) {
  const sep = <span aria-hidden="true">/</span>;
  return (
    <nav className="crumbs" aria-label="Breadcrumb">
      <Link to={paths.repositories(ns)}>Repositories</Link> {sep} <Link to={paths.repository(ns, repo)}>{repo}</Link> {sep}{" "}
      {version ? (
        <>
          <Link to={paths.mavenPackage(ns, repo, groupId, artifactId)}>
            {groupId}:{artifactId}
          </Link>{" "}
          {sep} <span aria-current="page">{version}</span>
        </>
      ) : (
        <span aria-current="page">
          {groupId}:{artifactId}
        </span>
      )}
    </nav>
  );
}

/** One Maven package: /n/:ns/r/:repo/maven/:groupId/:artifactId */
export function MavenPackageDetail() {
  const { ns = "", repo = "", groupId = "", artifactId = "" } = useParams();
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: MavenPackageQuery,
    variables: { namespace: ns, name: repo, groupId, artifactId },
    context: ctx,
  });
  const header = (
    <>
      <Crumbs ns={ns} repo={repo} groupId={groupId} artifactId={artifactId} />
      <PageTitle>
        {artifactId} <Badge>maven</Badge>
      </PageTitle>
      <p className="lead mono">{groupId}</p>
    </>
  );
  const notFound = errorCode(error) === "NOT_FOUND";
  if (error && !data?.repository && !notFound) return <section>{header}<ErrorBox error={error} /></section>;
  if (!data && fetching) return <section>{header}<Loading what="Loading package" /></section>;
  const pkg = data?.repository?.mavenPackage;
  if (!pkg) {
    return (
      <section>
        {header}
        <Empty>
          There is no active package{" "}
          <code>
            {groupId}:{artifactId}
          </code>{" "}
          in <Link to={paths.repository(ns, repo)}>{repo}</Link>. It may be in the <Link to={paths.trash(ns)}>trash</Link>.
        </Empty>
      </section>
    );
  }
  return (
    <section>
      {header}
      <Dl
        items={[
          ["Group", pkg.groupId],
          ["Artifact", pkg.artifactId],
          ["Last download", formatTime(pkg.lastDownloadedAt)],
          ["Package files", pkg.files.edges.map((e) => e.node.fileName).join(", ") || "–"],
        ]}
      />
      <h2 id="versions">Versions</h2>
      <div className="table-wrap">
        <table className="table" aria-labelledby="versions">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Deployed</th>
              <th scope="col">Last download</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}/${groupId}/${artifactId}`}
            page={(p) => <MavenVersionPage key={p.index} {...p} ns={ns} repo={repo} groupId={groupId} artifactId={artifactId} />}
          />
        </table>
      </div>
      <h2>Use this package</h2>
      <UseMaven ns={ns} repo={repo} coords={{ groupId, artifactId, version: "VERSION" }} />
      {signedIn && <DeleteMavenPackage ns={ns} repo={repo} id={pkg.id} name={`${groupId}:${artifactId}`} />}
    </section>
  );
}

function UseMaven({ ns, repo, coords }: { ns: string; repo: string; coords: MavenCoordinates }) {
  const origin = window.location.origin;
  return (
    <div className="usage">
      <CopyBlock label="pom.xml dependency" text={mavenDependency(coords)} multiline />
      <CopyBlock label="settings.xml server entry" text={mavenSettings(ns, repo)} multiline />
      <CopyBlock label="pom.xml repository" text={mavenPom(origin, ns, repo)} multiline />
    </div>
  );
}

function MavenVersionPage({
  ns,
  repo,
  groupId,
  artifactId,
  after,
  index,
  isLast,
  onMore,
}: PageProps & { ns: string; repo: string; groupId: string; artifactId: string }) {
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: MavenVersionsQuery,
    variables: { namespace: ns, name: repo, groupId, artifactId, first: PAGE, after },
    context: ctx,
  });
  const [del, deleteVersion] = useMutation(DeleteMavenVersionMutation);
  const conn = data?.repository?.mavenPackage?.versions;
  const body = useFocusNewPage(index, conn);
  const note = noteRow(5);
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {del.error && note(<ErrorBox error={del.error} title="Could not delete the version" />)}
      {!conn && fetching && note(<Loading what="Loading versions" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No active version.</Empty>)}
      {conn?.edges.map(({ node: v }) => (
        <tr key={v.id} data-version={v.version}>
          <th scope="row" data-label="Version">
            <Link to={paths.mavenVersion(ns, repo, groupId, artifactId, v.version)}>{v.version}</Link>{" "}
            {v.isSnapshot && <Badge tone="info">snapshot</Badge>}
          </th>
          <td data-label="Size" className="num">
            {formatBytes(v.sizeBytes)}
          </td>
          <td data-label="Deployed">{formatTime(v.createdAt)}</td>
          <td data-label="Last download">{formatTime(v.lastDownloadedAt)}</td>
          <td className="actions">
            <CopyButton
              label={`dependency snippet for ${v.version}`}
              text={mavenDependency({ groupId, artifactId, version: v.version })}
            >
              Copy dependency
            </CopyButton>
            {signedIn && (
              <button
                type="button"
                className="btn btn-small btn-danger-outline"
                disabled={del.fetching}
                aria-label={`Delete version ${v.version}`}
                onClick={() => {
                  if (window.confirm(`Move ${groupId}:${artifactId}:${v.version} to the trash?`)) {
                    void deleteVersion({ input: { namespace: ns, id: v.id } }, ctx);
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
        <LoadMoreRow colSpan={5} pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />}
    </tbody>
  );
}

/** One Maven version: /n/:ns/r/:repo/maven/:groupId/:artifactId/:version */
export function MavenVersionDetail() {
  const { ns = "", repo = "", groupId = "", artifactId = "", version = "" } = useParams();
  const { signedIn } = useAuth();
  const navigate = useNavigate();
  const [{ data, fetching, error }] = useQuery({
    query: MavenVersionQuery,
    variables: { namespace: ns, name: repo, groupId, artifactId, version, first: FILE_PAGE, after: null },
    context: ctx,
  });
  const [del, deleteVersion] = useMutation(DeleteMavenVersionMutation);
  const header = (
    <>
      <Crumbs ns={ns} repo={repo} groupId={groupId} artifactId={artifactId} version={version} />
      <PageTitle>
        {artifactId} {version} <Badge>maven</Badge>
      </PageTitle>
    </>
  );
  const notFound = errorCode(error) === "NOT_FOUND";
  if (error && !data?.repository && !notFound) return <section>{header}<ErrorBox error={error} /></section>;
  if (!data && fetching) return <section>{header}<Loading what="Loading version" /></section>;
  const v = data?.repository?.mavenPackage?.version;
  if (!v) {
    return (
      <section>
        {header}
        <Empty>
          There is no active version <code>{version}</code> of{" "}
          <Link to={paths.mavenPackage(ns, repo, groupId, artifactId)}>
            {groupId}:{artifactId}
          </Link>
          .
        </Empty>
      </section>
    );
  }
  const origin = window.location.origin;
  const files = v.files.edges.map((e) => e.node);
  // The version's dependency names the main artifact's type when it is
  // not a jar (a war, or a pom-only parent or BOM).
  const main = mavenMainArtifact(
    files.map((f) => f.fileName),
    artifactId,
    v.version,
  );
  const coords = { groupId, artifactId, version: v.version, type: main?.extension };
  return (
    <section>
      <Crumbs ns={ns} repo={repo} groupId={groupId} artifactId={artifactId} version={version} />
      <PageTitle
        actions={
          <CopyButton label={`dependency snippet for ${groupId}:${artifactId}:${v.version}`} text={mavenDependency(coords)}>
            Copy dependency
          </CopyButton>
        }
      >
        {artifactId} {version} <Badge>maven</Badge>
      </PageTitle>
      <Dl
        items={[
          ["Coordinates", `${groupId}:${artifactId}:${v.version}`],
          ["Kind", v.isSnapshot ? "snapshot" : "release"],
          // The files' exact sizes when all are shown; sizeBytes is a buffered counter.
          ["Size", formatBytes(v.files.pageInfo.hasNextPage ? v.sizeBytes : files.reduce((n, f) => n + f.sizeBytes, 0))],
          ["Deployed", formatTime(v.createdAt)],
          ["Last download", formatTime(v.lastDownloadedAt)],
        ]}
      />
      <h2>Use this version</h2>
      <UseMaven ns={ns} repo={repo} coords={coords} />
      <h2 id="files">Files</h2>
      <div className="table-wrap">
        <table className="table" aria-labelledby="files">
          <thead>
            <tr>
              <th scope="col">File</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">SHA-256</th>
              <th scope="col">SHA-1</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {files.length === 0 && (
              <tr className="row-note">
                <td colSpan={5}>
                  <Empty>No file.</Empty>
                </td>
              </tr>
            )}
            {files.map((f) => {
              const dependency = mavenFileDependency({ groupId, artifactId, version: v.version }, f.fileName, main);
              return (
                <tr key={f.id} data-file={f.fileName}>
                  <th scope="row" data-label="File">
                    {/* A download, never a navigation: the bytes are a user's upload. */}
                    <a
                      href={mavenFileURL(origin, ns, repo, groupId, artifactId, v.version, f.fileName)}
                      download={f.fileName}
                      rel="noopener noreferrer"
                    >
                      {f.fileName}
                    </a>
                  </th>
                  <td data-label="Size" className="num">
                    {formatBytes(f.sizeBytes)}
                  </td>
                  <td data-label="SHA-256" className="mono small">
                    <Link to={paths.search(ns, f.sha256)} title={f.sha256}>
                      {f.sha256.replace(/^sha256:/, "").slice(0, 16)}…
                    </Link>
                  </td>
                  <td data-label="SHA-1" className="mono small" title={f.sha1}>
                    {f.sha1.slice(0, 16)}…
                  </td>
                  <td className="actions">
                    {dependency && (
                      <CopyButton label={`dependency snippet for ${f.fileName}`} text={dependency}>
                        Copy dependency
                      </CopyButton>
                    )}
                  </td>
                </tr>
              );
            })}
            {v.files.pageInfo.hasNextPage && (
              <tr className="row-note">
                <td colSpan={5} className="muted">
                  The first {FILE_PAGE} files are shown.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {signedIn && (
        <div className="panel panel-danger">
          <h3>Delete version</h3>
          <p>The version moves to the trash; maven-metadata.xml stops listing it. It can be restored from the trash.</p>
          <button
            type="button"
            className="btn btn-danger"
            disabled={del.fetching}
            onClick={async () => {
              if (!window.confirm(`Move ${groupId}:${artifactId}:${v.version} to the trash?`)) return;
              const r = await deleteVersion({ input: { namespace: ns, id: v.id } }, ctx);
              if (r.data) navigate(paths.mavenPackage(ns, repo, groupId, artifactId));
            }}
          >
            Move version to trash
          </button>
          {del.error && <ErrorBox error={del.error} title="Could not delete the version" />}
        </div>
      )}
    </section>
  );
}

function DeleteMavenPackage({ ns, repo, id, name }: { ns: string; repo: string; id: string; name: string }) {
  const [{ fetching, error }, del] = useMutation(DeleteMavenPackageMutation);
  const navigate = useNavigate();
  const onDelete = async () => {
    if (!window.confirm(`Move package ${name} with all its versions to the trash?`)) return;
    const res = await del({ input: { namespace: ns, id } }, ctx);
    if (res.data) navigate(paths.repository(ns, repo));
  };
  return (
    <div className="panel panel-danger">
      <h3>Delete package</h3>
      <p>The package moves to the trash with its versions; it can be restored from the trash.</p>
      <button type="button" className="btn btn-danger" onClick={onDelete} disabled={fetching}>
        Move package to trash
      </button>
      {error && <ErrorBox error={error} title="Could not delete the package" />}
    </div>
  );
}
