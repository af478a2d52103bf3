import { useEffect, useRef, type ReactNode } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { Badge, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { TrashKind } from "../gql/graphql";
import { formatBytes, formatTime, shortDigest } from "../format";
import { paths } from "../paths";

const TrashQuery = graphql(`
  query Trash($namespace: String!, $first: Int, $after: String, $kind: TrashKind) {
    namespace(slug: $namespace) {
      id
      trash(first: $first, after: $after, kind: $kind) {
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          cursor
          kind
          deletedAt
          expiresAt
          node {
            __typename
            ... on Repository {
              id
              name
              format
              artifactsCount
              sizeBytes
            }
            ... on ContainerImage {
              id
              name
              repository {
                id
                name
              }
            }
            ... on ContainerManifest {
              id
              digest
              mediaType
              size
              image {
                id
                name
                repository {
                  id
                  name
                }
              }
            }
            ... on MavenVersion {
              id
              groupId
              artifactId
              version
              sizeBytes
              repository {
                id
                name
              }
            }
            ... on NpmVersion {
              id
              packageName
              version
              sizeBytes
              repository {
                id
                name
              }
            }
            ... on NpmPackage {
              id
              name
              repository {
                id
                name
              }
            }
            ... on MavenPackage {
              id
              groupId
              artifactId
              repository {
                id
                name
              }
            }
          }
        }
      }
    }
  }
`);

const RestoreRepositoryMutation = graphql(`
  mutation RestoreRepository($input: RepositoryRefInput!) {
    restoreRepository(input: $input) {
      repository {
        id
        name
        softDeletedAt
      }
    }
  }
`);

const PurgeRepositoryMutation = graphql(`
  mutation PurgeRepository($input: RepositoryRefInput!) {
    purgeRepository(input: $input) {
      id
      name
    }
  }
`);

const RetentionQuery = graphql(`
  query TrashRetention($namespace: String!) {
    namespace(slug: $namespace) {
      id
      trashRetentionDays
    }
  }
`);

// Purges go through purgeTrash / emptyTrash, by the ids the trash lists.
const PurgeTrashMutation = graphql(`
  mutation PurgeTrash($input: PurgeTrashInput!) {
    purgeTrash(input: $input) {
      purgedCount
      gcCandidates
    }
  }
`);

const EmptyTrashMutation = graphql(`
  mutation EmptyTrash($input: EmptyTrashInput!) {
    emptyTrash(input: $input) {
      purgedCount
      gcCandidates
    }
  }
`);

const RestoreManifestMutation = graphql(`
  mutation RestoreContainerManifest($input: ContainerManifestRefInput!) {
    restoreContainerManifest(input: $input) {
      manifest {
        id
        digest
        softDeletedAt
      }
    }
  }
`);

// npm and Maven items are named by id (as the trash lists them).
const RestoreNpmVersionMutation = graphql(`
  mutation RestoreNpmVersion($input: PackageItemRefInput!) {
    restoreNpmVersion(input: $input) {
      version {
        id
        softDeletedAt
      }
    }
  }
`);

const RestoreNpmPackageMutation = graphql(`
  mutation RestoreNpmPackage($input: PackageItemRefInput!) {
    restoreNpmPackage(input: $input) {
      package {
        id
        softDeletedAt
      }
    }
  }
`);

const RestoreMavenVersionMutation = graphql(`
  mutation RestoreMavenVersion($input: PackageItemRefInput!) {
    restoreMavenVersion(input: $input) {
      version {
        id
        softDeletedAt
      }
    }
  }
`);

const RestoreMavenPackageMutation = graphql(`
  mutation RestoreMavenPackage($input: PackageItemRefInput!) {
    restoreMavenPackage(input: $input) {
      package {
        id
        softDeletedAt
      }
    }
  }
`);

const PAGE = 50;
const KINDS: { kind: TrashKind | ""; label: string }[] = [
  { kind: "", label: "Everything" },
  { kind: "REPOSITORY", label: "Repositories" },
  { kind: "CONTAINER_IMAGE", label: "Images" },
  { kind: "CONTAINER_MANIFEST", label: "Manifests" },
  { kind: "NPM_PACKAGE", label: "npm packages" },
  { kind: "NPM_VERSION", label: "npm versions" },
  { kind: "MAVEN_PACKAGE", label: "Maven packages" },
  { kind: "MAVEN_VERSION", label: "Maven versions" },
];
/** How a trash kind reads in the table. */
export const KIND_LABEL: Record<TrashKind, string> = {
  REPOSITORY: "repository",
  CONTAINER_IMAGE: "image",
  CONTAINER_MANIFEST: "manifest",
  NPM_PACKAGE: "npm package",
  NPM_VERSION: "npm version",
  MAVEN_PACKAGE: "Maven package",
  MAVEN_VERSION: "Maven version",
};
const ctx = {
  additionalTypenames: [
    "Repository",
    "ContainerImage",
    "ContainerManifest",
    "MavenVersion",
    "NpmVersion",
    "MavenPackage",
    "NpmPackage",
    "TrashEdge",
    "PurgeTrashPayload",
    "PurgeRepositoryPayload",
  ],
};

export function Trash() {
  const { ns = "" } = useParams();
  const [params, setParams] = useSearchParams();
  const k = (params.get("kind") ?? "").toUpperCase();
  const kind = KINDS.some((x) => x.kind === k) ? (k as TrashKind | "") : "";
  const [{ data: retention }] = useQuery({ query: RetentionQuery, variables: { namespace: ns } });
  const days = retention?.namespace?.trashRetentionDays;
  const [emptied, doEmpty] = useMutation(EmptyTrashMutation);
  return (
    <section>
      <PageTitle>Trash</PageTitle>
      <p className="muted">
        Deleted repositories and artifacts, most recently deleted first. They keep their storage until restored or purged
        {days === undefined ? "." : days === 0 ? ", and are purged at the next expiry sweep." : `, and are purged ${days} ${days === 1 ? "day" : "days"} after deletion.`}
      </p>
      <div className="filters">
        <button
          type="button"
          className="btn btn-danger-outline"
          disabled={emptied.fetching}
          onClick={() => {
            if (window.confirm("Delete everything in the trash for good? This cannot be undone.")) {
              void doEmpty({ input: { namespace: ns } }, ctx);
            }
          }}
        >
          Empty trash
        </button>
        {emptied.data?.emptyTrash && (
          <span className="muted" role="status">
            Purged {emptied.data.emptyTrash.purgedCount} {emptied.data.emptyTrash.purgedCount === 1 ? "item" : "items"}.
          </span>
        )}
      </div>
      {emptied.error && <ErrorBox error={emptied.error} title="Emptying the trash failed" />}
      <div className="filters" role="group" aria-label="Show">
        {KINDS.map((x) => (
          <button
            key={x.kind}
            type="button"
            className={`btn btn-toggle${x.kind === kind ? " active" : ""}`}
            aria-pressed={x.kind === kind}
            onClick={() => setParams(x.kind ? { kind: x.kind.toLowerCase() } : {}, { replace: true })}
          >
            {x.label}
          </button>
        ))}
      </div>
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Item</th>
              <th scope="col">Kind</th>
              <th scope="col">Where</th>
              <th scope="col">Deleted</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <PagedList resetKey={`${ns}/${kind}`} page={(p) => <TrashPage key={`${kind}#${p.index}`} {...p} ns={ns} kind={kind} />} />
        </table>
      </div>
    </section>
  );
}

function TrashPage({ ns, kind, after, index, isLast, onMore }: PageProps & { ns: string; kind: TrashKind | "" }) {
  const [{ data, fetching, error }] = useQuery({
    query: TrashQuery,
    variables: { namespace: ns, first: PAGE, after, kind: kind || null },
    context: ctx,
  });
  const [restoreRepo, doRestoreRepo] = useMutation(RestoreRepositoryMutation);
  const [purgeRepo, doPurgeRepo] = useMutation(PurgeRepositoryMutation);
  const [restoreManifest, doRestoreManifest] = useMutation(RestoreManifestMutation);
  const [restoreNpmVersion, doRestoreNpmVersion] = useMutation(RestoreNpmVersionMutation);
  const [restoreNpmPackage, doRestoreNpmPackage] = useMutation(RestoreNpmPackageMutation);
  const [restoreMavenVersion, doRestoreMavenVersion] = useMutation(RestoreMavenVersionMutation);
  const [restoreMavenPackage, doRestoreMavenPackage] = useMutation(RestoreMavenPackageMutation);
  const [purged, doPurge] = useMutation(PurgeTrashMutation);
  const mutations = [
    restoreRepo,
    purgeRepo,
    restoreManifest,
    restoreNpmVersion,
    restoreNpmPackage,
    restoreMavenVersion,
    restoreMavenPackage,
    purged,
  ];
  const busy = mutations.some((m) => m.fetching);
  const mutationError = mutations.find((m) => m.error)?.error;
  const restoreButton = (what: string, run: () => unknown) => (
    <button type="button" className="btn btn-small" disabled={busy} aria-label={`Restore ${what}`} onClick={() => void run()}>
      Restore
    </button>
  );
  const purgeButton = (what: string, id: string) => (
    <button
      type="button"
      className="btn btn-small btn-danger-outline"
      disabled={busy}
      aria-label={`Purge ${what}`}
      onClick={() => {
        if (window.confirm(`Delete ${what} for good? This cannot be undone.`)) {
          void doPurge({ input: { namespace: ns, ids: [id] } }, ctx);
        }
      }}
    >
      Purge
    </button>
  );
  const conn = data?.namespace?.trash;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={6}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {mutationError && note(<ErrorBox error={mutationError} title="The action failed" />)}
      {!conn && fetching && note(<Loading what="Loading the trash" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>The trash is empty.</Empty>)}
      {conn?.edges.map((edge) => {
        const n = edge.node;
        let item: ReactNode = null;
        let where: ReactNode = null;
        let actions: ReactNode = null;
        switch (n.__typename) {
          case "Repository":
            item = (
              <>
                <strong>{n.name}</strong> <Badge>{n.format.toLowerCase()}</Badge>
              </>
            );
            where = <span className="muted">{formatBytes(n.sizeBytes)}</span>;
            actions = (
              <>
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={busy}
                  aria-label={`Restore repository ${n.name}`}
                  onClick={() => void doRestoreRepo({ input: { namespace: ns, id: n.id } }, ctx)}
                >
                  Restore
                </button>
                <button
                  type="button"
                  className="btn btn-small btn-danger-outline"
                  disabled={busy}
                  aria-label={`Purge repository ${n.name}`}
                  onClick={() => {
                    if (window.confirm(`Delete repository ${n.name} for good? This cannot be undone.`)) {
                      void doPurgeRepo({ input: { namespace: ns, id: n.id } }, ctx);
                    }
                  }}
                >
                  Purge
                </button>
              </>
            );
            break;
          case "ContainerImage":
            item = <strong>{n.name}</strong>;
            where = <Link to={paths.repository(ns, n.repository.name)}>{n.repository.name}</Link>;
            actions = purgeButton(`image ${n.name}`, n.id);
            break;
          case "ContainerManifest":
            item = (
              <>
                <code className="mono" title={n.digest}>
                  {shortDigest(n.digest)}
                </code>{" "}
                <span className="small muted">{formatBytes(n.size)}</span>
              </>
            );
            where = (
              <>
                <Link to={paths.repository(ns, n.image.repository.name)}>{n.image.repository.name}</Link> /{" "}
                {n.image.name}
              </>
            );
            actions = (
              <>
              <button
                type="button"
                className="btn btn-small"
                disabled={busy}
                aria-label={`Restore manifest ${shortDigest(n.digest)}`}
                onClick={() =>
                  void doRestoreManifest(
                    { input: { namespace: ns, repository: n.image.repository.name, image: n.image.name, digest: n.digest } },
                    ctx,
                  )
                }
              >
                Restore
              </button>
              {purgeButton(`manifest ${shortDigest(n.digest)}`, n.id)}
              </>
            );
            break;
          case "NpmVersion":
            item = (
              <>
                <strong>
                  {n.packageName}@{n.version}
                </strong>{" "}
                <span className="small muted">{formatBytes(n.sizeBytes)}</span>
              </>
            );
            where = <Link to={paths.repository(ns, n.repository.name)}>{n.repository.name}</Link>;
            actions = (
              <>
                {restoreButton(`npm version ${n.packageName}@${n.version}`, () =>
              doRestoreNpmVersion({ input: { namespace: ns, id: n.id } }, ctx))}
                {purgeButton(`npm version ${n.packageName}@${n.version}`, n.id)}
              </>
            );
            break;
          case "NpmPackage":
            item = <strong>{n.name}</strong>;
            where = <Link to={paths.repository(ns, n.repository.name)}>{n.repository.name}</Link>;
            actions = (
              <>
                {restoreButton(`npm package ${n.name}`, () => doRestoreNpmPackage({ input: { namespace: ns, id: n.id } }, ctx))}
                {purgeButton(`npm package ${n.name}`, n.id)}
              </>
            );
            break;
          case "MavenPackage":
            item = (
              <strong>
                {n.groupId}:{n.artifactId}
              </strong>
            );
            where = <Link to={paths.repository(ns, n.repository.name)}>{n.repository.name}</Link>;
            actions = (
              <>
                {restoreButton(`Maven package ${n.groupId}:${n.artifactId}`, () =>
              doRestoreMavenPackage({ input: { namespace: ns, id: n.id } }, ctx))}
                {purgeButton(`Maven package ${n.groupId}:${n.artifactId}`, n.id)}
              </>
            );
            break;
          case "MavenVersion":
            item = (
              <>
                <strong>
                  {n.groupId}:{n.artifactId}:{n.version}
                </strong>{" "}
                <span className="small muted">{formatBytes(n.sizeBytes)}</span>
              </>
            );
            where = <Link to={paths.repository(ns, n.repository.name)}>{n.repository.name}</Link>;
            actions = (
              <>
                {restoreButton(`Maven version ${n.groupId}:${n.artifactId}:${n.version}`, () =>
              doRestoreMavenVersion({ input: { namespace: ns, id: n.id } }, ctx))}
                {purgeButton(`Maven version ${n.groupId}:${n.artifactId}:${n.version}`, n.id)}
              </>
            );
            break;
        }
        return (
          <tr key={edge.cursor}>
            <th scope="row" data-label="Item">
              {item}
            </th>
            <td data-label="Kind">{KIND_LABEL[edge.kind]}</td>
            <td data-label="Where">{where}</td>
            <td data-label="Deleted">{formatTime(edge.deletedAt)}</td>
            <td data-label="Expires">{formatTime(edge.expiresAt)}</td>
            <td className="actions">{actions}</td>
          </tr>
        );
      })}
      {conn && isLast && <LoadMoreRow colSpan={6} pageInfo={conn.pageInfo} onMore={onMore} />}
    </tbody>
  );
}
