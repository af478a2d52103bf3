// npm repositories: the package list of a repository and one package with
// its versions, dist-tags, deprecations, install command and .npmrc lines.
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { useAuth } from "../auth";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { npmInstall, npmRegistryURL, npmrcFor } from "../components/usage";
import { Badge, CopyBlock, Dl, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { errorCode } from "../errors";
import { formatBytes, formatCount, formatTime } from "../format";
import { paths } from "../paths";

const NpmPackagesQuery = graphql(`
  query NpmPackages($namespace: String!, $name: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      npmPackages(first: $first, after: $after) {
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
            latest {
              id
              version
              description
              deprecated
              createdAt
            }
            versions(first: 1) {
              totalCount
            }
          }
        }
      }
    }
  }
`);

const NpmPackageQuery = graphql(`
  query NpmPackage($namespace: String!, $name: String!, $package: String!) {
    repository(namespace: $namespace, name: $name) {
      id
      format
      npmPackage(name: $package) {
        id
        name
        scope
        lastDownloadedAt
        distTags {
          name
          version {
            id
            version
          }
        }
        latest {
          id
          version
          description
          license
          deprecated
        }
      }
    }
  }
`);

const NpmVersionsQuery = graphql(`
  query NpmPackageVersions($namespace: String!, $name: String!, $package: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      npmPackage(name: $package) {
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
              createdAt
              sizeBytes
              deprecated
              distTags
              lastDownloadedAt
              tarball {
                id
                sizeBytes
              }
            }
          }
        }
      }
    }
  }
`);

const NpmVersionQuery = graphql(`
  query NpmVersionDetail($namespace: String!, $name: String!, $package: String!, $version: String!) {
    repository(namespace: $namespace, name: $name) {
      id
      npmPackage(name: $package) {
        id
        version(version: $version) {
          id
          version
          description
          license
          deprecated
          integrity
          shasum
          createdAt
          sizeBytes
          distTags
          dependencies {
            name
            range
          }
          peer: dependencies(kind: PEER) {
            name
            range
          }
          tarball {
            id
            fileName
            sizeBytes
            sha256
          }
        }
      }
    }
  }
`);

const SetDistTagMutation = graphql(`
  mutation SetNpmDistTag($input: NpmDistTagInput!) {
    setNpmDistTag(input: $input) {
      package {
        id
        distTags {
          name
          version {
            id
            version
          }
        }
      }
    }
  }
`);

const RemoveDistTagMutation = graphql(`
  mutation RemoveNpmDistTag($input: NpmDistTagInput!) {
    removeNpmDistTag(input: $input) {
      package {
        id
        distTags {
          name
          version {
            id
            version
          }
        }
      }
    }
  }
`);

const DeleteNpmVersionMutation = graphql(`
  mutation DeleteNpmVersion($input: PackageItemRefInput!) {
    deleteNpmVersion(input: $input) {
      version {
        id
        softDeletedAt
      }
    }
  }
`);

const DeleteNpmPackageMutation = graphql(`
  mutation DeleteNpmPackage($input: PackageItemRefInput!) {
    deleteNpmPackage(input: $input) {
      package {
        id
        softDeletedAt
      }
    }
  }
`);

const PAGE = 50;

/**
 * Bytes of a version: its tarball's exact size when it has one (the
 * version's sizeBytes is a buffered counter that lags new publishes).
 */
export function versionSize(v: { sizeBytes: number; tarball?: { sizeBytes: number } | null }): number {
  return v.tarball ? v.tarball.sizeBytes : v.sizeBytes;
}
const ctx = { additionalTypenames: ["NpmPackage", "NpmVersion", "NpmDistTag"] };

/** The packages of an npm repository (on its repository screen). */
export function NpmPackageList({ ns, repo }: { ns: string; repo: string }) {
  return (
    <div className="table-wrap">
      <table className="table" aria-label="Packages">
        <thead>
          <tr>
            <th scope="col">Package</th>
            <th scope="col">Latest</th>
            <th scope="col" className="num">
              Versions
            </th>
            <th scope="col">Published</th>
            <th scope="col">Last download</th>
          </tr>
        </thead>
        <PagedList resetKey={`${ns}/${repo}`} page={(p) => <NpmPackagePage key={p.index} {...p} ns={ns} repo={repo} />} />
      </table>
    </div>
  );
}

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

function NpmPackagePage({ ns, repo, after, index, isLast, onMore }: PageProps & { ns: string; repo: string }) {
  const [{ data, fetching, error }] = useQuery({
    query: NpmPackagesQuery,
    variables: { namespace: ns, name: repo, first: PAGE, after },
    context: ctx,
  });
  const conn = data?.repository?.npmPackages;
  const body = useFocusNewPage(index, conn);
  const note = noteRow(5);
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {!conn && fetching && note(<Loading what="Loading packages" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No package yet. Publish one with the commands below.</Empty>)}
      {conn?.edges.map(({ node: p }) => (
        <tr key={p.id}>
          <th scope="row" data-label="Package">
            <Link to={paths.npmPackage(ns, repo, p.name)}>{p.name}</Link>
            {p.latest?.description && <div className="small muted">{p.latest.description}</div>}
          </th>
          <td data-label="Latest">
            {p.latest ? (
              <>
                {p.latest.version} {p.latest.deprecated && <Badge tone="warn">deprecated</Badge>}
              </>
            ) : (
              "–"
            )}
          </td>
          <td data-label="Versions" className="num">
            {formatCount(p.versions.totalCount)}
          </td>
          <td data-label="Published">{formatTime(p.latest?.createdAt)}</td>
          <td data-label="Last download">{formatTime(p.lastDownloadedAt)}</td>
        </tr>
      ))}
      {conn &&
        isLast &&
        <LoadMoreRow colSpan={5} pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />}
    </tbody>
  );
}

/** One npm package: /n/:ns/r/:repo/npm/<name or @scope/name>?version=… */
export function NpmPackageDetail() {
  const { ns = "", repo = "", "*": splat = "" } = useParams();
  const name = splat.replace(/\/+$/, "");
  const [params, setParams] = useSearchParams();
  const selected = params.get("version");
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: NpmPackageQuery,
    variables: { namespace: ns, name: repo, package: name },
    context: ctx,
  });
  const header = (
    <>
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to={paths.repositories(ns)}>Repositories</Link> <span aria-hidden="true">/</span>{" "}
        <Link to={paths.repository(ns, repo)}>{repo}</Link> <span aria-hidden="true">/</span>{" "}
        <span aria-current="page">{name}</span>
      </nav>
      <PageTitle>
        {name} <Badge>npm</Badge>
      </PageTitle>
    </>
  );
  const notFound = errorCode(error) === "NOT_FOUND";
  if (error && !data?.repository && !notFound) return <section>{header}<ErrorBox error={error} /></section>;
  if (!data && fetching) return <section>{header}<Loading what="Loading package" /></section>;
  const pkg = data?.repository?.npmPackage;
  if (!pkg) {
    return (
      <section>
        {header}
        <Empty>
          There is no active package <code>{name}</code> in <Link to={paths.repository(ns, repo)}>{repo}</Link>. It may be in
          the <Link to={paths.trash(ns)}>trash</Link>.
        </Empty>
      </section>
    );
  }
  const origin = window.location.origin;
  const select = (v: string | null) => setParams(v ? new URLSearchParams({ version: v }) : new URLSearchParams());
  return (
    <section>
      {header}
      {pkg.latest?.description && <p className="lead">{pkg.latest.description}</p>}
      {pkg.latest?.deprecated && (
        <p className="notice notice-warn" role="note">
          <strong>Latest version deprecated:</strong> {pkg.latest.deprecated}
        </p>
      )}
      <Dl
        items={[
          ["Latest", pkg.latest?.version ?? "–"],
          ["License", pkg.latest?.license ?? "–"],
          ["Scope", pkg.scope ? `@${pkg.scope}` : "unscoped"],
          ["Last download", formatTime(pkg.lastDownloadedAt)],
        ]}
      />
      <div className="usage">
        <CopyBlock label="Install" text={npmInstall(pkg.name)} />
        <CopyBlock label=".npmrc" text={npmrcFor(origin, ns, repo, pkg.name)} multiline />
      </div>

      <h2 id="dist-tags">Dist-tags</h2>
      <DistTags ns={ns} repo={repo} pkg={pkg.name} tags={pkg.distTags} canEdit={signedIn} onSelect={select} />

      <h2 id="versions">Versions</h2>
      {selected && <VersionDetail ns={ns} repo={repo} pkg={pkg.name} version={selected} onClose={() => select(null)} />}
      <div className="table-wrap">
        <table className="table" aria-labelledby="versions">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Dist-tags</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Published</th>
              <th scope="col">Deprecation</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}/${pkg.name}`}
            page={(p) => (
              <VersionPage key={p.index} {...p} ns={ns} repo={repo} pkg={pkg.name} selected={selected} onSelect={select} />
            )}
          />
        </table>
      </div>
      <p className="muted small">
        Registry URL: <code>{npmRegistryURL(origin, ns, repo)}</code>
      </p>
      {signedIn && <DeletePackage ns={ns} repo={repo} id={pkg.id} name={pkg.name} />}
    </section>
  );
}

function DistTags({
  ns,
  repo,
  pkg,
  tags,
  canEdit,
  onSelect,
}: {
  ns: string;
  repo: string;
  pkg: string;
  tags: { name: string; version: { id: string; version: string } }[];
  canEdit: boolean;
  onSelect(v: string): void;
}) {
  const [set, setTag] = useMutation(SetDistTagMutation);
  const [remove, removeTag] = useMutation(RemoveDistTagMutation);
  const [tag, setTagName] = useState("");
  const [version, setVersion] = useState("");
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    const res = await setTag({ input: { namespace: ns, repository: repo, package: pkg, tag: tag.trim(), version: version.trim() } }, ctx);
    if (res.data) {
      setTagName("");
      setVersion("");
    }
  };
  return (
    <div className="panel">
      {tags.length === 0 ? (
        <p className="muted">No dist-tags.</p>
      ) : (
        <ul className="chips" aria-label="Dist-tags">
          {tags.map((t) => (
            <li key={t.name} data-dist-tag={t.name}>
              <strong>{t.name}</strong>{" "}
              <a
                href={paths.npmPackage(ns, repo, pkg, t.version.version)}
                onClick={(e) => {
                  e.preventDefault();
                  onSelect(t.version.version);
                }}
              >
                {t.version.version}
              </a>
              {canEdit && t.name !== "latest" && (
                <button
                  type="button"
                  className="btn btn-small btn-ghost"
                  aria-label={`Remove dist-tag ${t.name}`}
                  disabled={remove.fetching}
                  onClick={() => void removeTag({ input: { namespace: ns, repository: repo, package: pkg, tag: t.name } }, ctx)}
                >
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {canEdit && (
        <form className="form form-inline" onSubmit={onSubmit} aria-label="Set a dist-tag">
          <label htmlFor="dist-tag">Tag</label>
          <input id="dist-tag" value={tag} onChange={(e) => setTagName(e.target.value)} autoComplete="off" spellCheck={false} required />
          <label htmlFor="dist-tag-version">Version</label>
          <input
            id="dist-tag-version"
            value={version}
            onChange={(e) => setVersion(e.target.value)}
            autoComplete="off"
            spellCheck={false}
            required
          />
          <button type="submit" className="btn" disabled={set.fetching || !tag.trim() || !version.trim()}>
            Set tag
          </button>
        </form>
      )}
      {set.error && <ErrorBox error={set.error} title="Could not set the dist-tag" />}
      {remove.error && <ErrorBox error={remove.error} title="Could not remove the dist-tag" />}
    </div>
  );
}

function VersionPage({
  ns,
  repo,
  pkg,
  selected,
  onSelect,
  after,
  index,
  isLast,
  onMore,
}: PageProps & { ns: string; repo: string; pkg: string; selected: string | null; onSelect(v: string | null): void }) {
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: NpmVersionsQuery,
    variables: { namespace: ns, name: repo, package: pkg, first: PAGE, after },
    context: ctx,
  });
  const [del, deleteVersion] = useMutation(DeleteNpmVersionMutation);
  const conn = data?.repository?.npmPackage?.versions;
  const body = useFocusNewPage(index, conn);
  const note = noteRow(6);
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {del.error && note(<ErrorBox error={del.error} title="Could not delete the version" />)}
      {!conn && fetching && note(<Loading what="Loading versions" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No active version.</Empty>)}
      {conn?.edges.map(({ node: v }) => (
        <tr key={v.id} data-version={v.version} className={selected === v.version ? "row-selected" : undefined}>
          <th scope="row" data-label="Version">
            <a
              href={paths.npmPackage(ns, repo, pkg, v.version)}
              onClick={(e) => {
                e.preventDefault();
                onSelect(selected === v.version ? null : v.version);
              }}
              aria-expanded={selected === v.version}
            >
              {v.version}
            </a>
          </th>
          <td data-label="Dist-tags">
            {v.distTags.map((t) => (
              <Badge key={t} tone={t === "latest" ? "info" : undefined}>
                {t}
              </Badge>
            ))}
          </td>
          <td data-label="Size" className="num">
            {formatBytes(versionSize(v))}
          </td>
          <td data-label="Published">{formatTime(v.createdAt)}</td>
          <td data-label="Deprecation">
            {v.deprecated ? (
              <span>
                <Badge tone="warn">deprecated</Badge> <span className="small">{v.deprecated}</span>
              </span>
            ) : (
              <span className="muted">–</span>
            )}
          </td>
          <td className="actions">
            {signedIn && (
              <button
                type="button"
                className="btn btn-small btn-danger-outline"
                disabled={del.fetching}
                aria-label={`Delete version ${v.version}`}
                onClick={() => {
                  if (window.confirm(`Move ${pkg}@${v.version} to the trash? Its version number can never be published again.`)) {
                    void deleteVersion({ input: { namespace: ns, id: v.id } }, ctx).then((r) => {
                      if (r.data && selected === v.version) onSelect(null);
                    });
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
        <LoadMoreRow colSpan={6} pageInfo={conn.pageInfo} onMore={onMore} shown={index * PAGE + conn.edges.length} total={conn.totalCount} />}
    </tbody>
  );
}

function VersionDetail({ ns, repo, pkg, version, onClose }: { ns: string; repo: string; pkg: string; version: string; onClose(): void }) {
  const [{ data, fetching, error }] = useQuery({
    query: NpmVersionQuery,
    variables: { namespace: ns, name: repo, package: pkg, version },
    context: ctx,
  });
  const v = data?.repository?.npmPackage?.version;
  return (
    <div className="panel" aria-label={`Version ${version}`} role="region">
      <div className="panel-head">
        <h3>
          {pkg}@{version}
        </h3>
        <button type="button" className="btn btn-small btn-ghost" onClick={onClose} aria-label="Close version details">
          ×
        </button>
      </div>
      {error && <ErrorBox error={error} />}
      {!data && fetching && <Loading what="Loading version" />}
      {data && !v && <Empty>There is no active version {version}.</Empty>}
      {v && (
        <>
          {v.deprecated && (
            <p className="notice notice-warn" role="note">
              <strong>Deprecated:</strong> {v.deprecated}
            </p>
          )}
          {v.description && <p>{v.description}</p>}
          <CopyBlock label={`Install ${version}`} text={npmInstall(pkg, version)} />
          <Dl
            items={[
              ["Published", formatTime(v.createdAt)],
              ["Size", formatBytes(versionSize(v))],
              ["License", v.license ?? "–"],
              ["Dist-tags", v.distTags.join(", ") || "–"],
              ["Tarball", v.tarball ? `${v.tarball.fileName} (${formatBytes(v.tarball.sizeBytes)})` : "–"],
            ]}
          />
          {v.integrity && <CopyBlock label="Integrity (sha512)" text={v.integrity} />}
          {v.tarball && (
            <p className="small">
              Tarball blob:{" "}
              <Link className="mono" to={paths.search(ns, v.tarball.sha256)}>
                {v.tarball.sha256}
              </Link>
            </p>
          )}
          <Dependencies title="Dependencies" deps={v.dependencies} />
          {v.peer.length > 0 && <Dependencies title="Peer dependencies" deps={v.peer} />}
        </>
      )}
    </div>
  );
}

function Dependencies({ title, deps }: { title: string; deps: { name: string; range: string }[] }) {
  return (
    <>
      <h4>{title}</h4>
      {deps.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <ul className="plain deps">
          {deps.map((d) => (
            <li key={d.name}>
              <code>{d.name}</code> <span className="muted">{d.range}</span>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

function DeletePackage({ ns, repo, id, name }: { ns: string; repo: string; id: string; name: string }) {
  const [{ fetching, error }, del] = useMutation(DeleteNpmPackageMutation);
  const navigate = useNavigate();
  const onDelete = async () => {
    if (!window.confirm(`Move package ${name} with all its versions to the trash?`)) return;
    const res = await del({ input: { namespace: ns, id } }, ctx);
    if (res.data) navigate(paths.repository(ns, repo));
  };
  return (
    <div className="panel panel-danger">
      <h3>Delete package</h3>
      <p>
        The package moves to the trash with all its versions, as <code>npm unpublish --force</code> does; it can be restored from the trash.
      </p>
      <button type="button" className="btn btn-danger" onClick={onDelete} disabled={fetching}>
        Move package to trash
      </button>
      {error && <ErrorBox error={error} title="Could not delete the package" />}
    </div>
  );
}
