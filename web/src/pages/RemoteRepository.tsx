// A remote repository (pull-through cache): its upstream, health, hit
// ratio and cache (images of a container remote, packages of an npm or
// Maven remote), with the administrator's actions (invalidate a cached tag
// or cached metadata, evict a cached image, change the upstream settings).
// The upstream credentials are write-only: the API tells only whether some
// are stored.
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { useMutation, useQuery } from "urql";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { Badge, CopyBlock, Dl, Empty, ErrorBox, Loading } from "../components/ui";
import { graphql } from "../gql";
import type { Format, RemoteHealth } from "../gql/graphql";
import { formatBytes, formatCount, formatTime } from "../format";
import { npmRegistryURL, npmrc } from "../components/usage";

const RemoteQuery = graphql(`
  query RemoteRepository($namespace: String!, $name: String!) {
    repository(namespace: $namespace, name: $name) {
      id
      remote {
        url
        cacheValidityHours
        metadataCacheValidityHours
        negativeCacheMinutes
        health
        lastCheckedAt
        lastError
        hasCredentials
        cacheHits
        cacheMisses
        hitRatio
      }
    }
  }
`);

const CachedImagesQuery = graphql(`
  query RemoteCachedImages($namespace: String!, $name: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      remote {
        cachedImages(first: $first, after: $after) {
          pageInfo {
            hasNextPage
            endCursor
          }
          edges {
            cursor
            node {
              id
              name
              cachedAt
              lastDownloadedAt
              manifestsCount
              blobsCount
              sizeBytes
              tags {
                name
                digest
                checkedAt
                stale
              }
            }
          }
        }
      }
    }
  }
`);

const CachedPackagesQuery = graphql(`
  query RemoteCachedPackages($namespace: String!, $name: String!, $first: Int) {
    repository(namespace: $namespace, name: $name) {
      id
      remote {
        cachedPackages(first: $first) {
          id
          name
          cachedVersions
          sizeBytes
          lastDownloadedAt
          checkedAt
          stale
        }
      }
    }
  }
`);

const CachedMavenPackagesQuery = graphql(`
  query RemoteCachedMavenPackages($namespace: String!, $name: String!, $first: Int, $after: String) {
    repository(namespace: $namespace, name: $name) {
      id
      remote {
        cachedMavenPackages(first: $first, after: $after) {
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
              cachedAt
              lastDownloadedAt
              sizeBytes
              versions {
                version
                sizeBytes
                filesCount
              }
            }
          }
        }
      }
    }
  }
`);

const InvalidateMetadataMutation = graphql(`
  mutation InvalidateRemoteMetadata($input: RemotePackageRefInput!) {
    invalidateRemoteMetadata(input: $input) {
      invalidatedCount
    }
  }
`);

const InvalidateMavenMutation = graphql(`
  mutation InvalidateRemoteMavenMetadata($input: RemoteMavenMetadataRefInput!) {
    invalidateRemoteMavenMetadata(input: $input) {
      invalidatedCount
    }
  }
`);

const InvalidateMutation = graphql(`
  mutation InvalidateRemoteTag($input: RemoteTagRefInput!) {
    invalidateRemoteTag(input: $input) {
      image
      tag
    }
  }
`);

const EvictMutation = graphql(`
  mutation EvictRemoteImage($input: RemoteImageRefInput!) {
    evictRemoteImage(input: $input) {
      image
      releasedCount
      gcCandidateCount
    }
  }
`);

const UpdateRemoteMutation = graphql(`
  mutation UpdateRemoteRepository($input: UpdateRepositoryInput!) {
    updateRepository(input: $input) {
      repository {
        id
        remote {
          url
          cacheValidityHours
          metadataCacheValidityHours
          negativeCacheMinutes
          hasCredentials
        }
      }
    }
  }
`);

const IMAGE_PAGE = 50;
// The API lists at most this many cached packages of an npm remote.
const PACKAGE_LIMIT = 100;
const ctx = { additionalTypenames: ["Repository", "RemoteRepository", "RemoteCachedImage", "RemoteCachedPackage", "RemoteCachedMavenPackage"] };

/** Formats whose remotes cache metadata under metadataCacheValidityHours. */
export function hasMetadataValidity(format: Format): boolean {
  return format === "NPM" || format === "MAVEN";
}

const HEALTH_TONE: Record<RemoteHealth, string> = { HEALTHY: "ok", UNHEALTHY: "bad", UNKNOWN: "info" };

export function HealthBadge({ health }: { health: RemoteHealth }) {
  return <Badge tone={HEALTH_TONE[health]}>{health.toLowerCase()}</Badge>;
}

/** The hit ratio as a percentage with one decimal, "–" before any request. */
export function formatRatio(r: number | null | undefined): string {
  if (r === null || r === undefined) return "–";
  return `${(Math.round(r * 1000) / 10).toFixed(1)} %`;
}

/** The upstream, health and cache of a remote repository. */
export function RemotePanel({ ns, repo, format, admin }: { ns: string; repo: string; format: Format; admin: boolean }) {
  const [{ data, fetching, error }] = useQuery({ query: RemoteQuery, variables: { namespace: ns, name: repo }, context: ctx });
  const rem = data?.repository?.remote;
  if (error && !rem) return <ErrorBox error={error} />;
  if (!rem) return fetching ? <Loading what="Loading the upstream" /> : null;
  const maven = format === "MAVEN";
  const validity: [string, ReactNode][] = maven
    ? [
        ["Metadata revalidated after", `${rem.metadataCacheValidityHours ?? 0} h (release files never: they are immutable)`],
        ["Missing paths remembered for", `${rem.negativeCacheMinutes ?? 0} min`],
      ]
    : format === "NPM"
      ? [["Metadata revalidated after", `${rem.metadataCacheValidityHours ?? 1} h`]]
      : [["Tags revalidated after", `${rem.cacheValidityHours} h`]];
  return (
    <>
      <h2>Upstream</h2>
      <Dl
        items={[
          ["URL", <code key="u">{rem.url}</code>],
          ["Health", <HealthBadge key="h" health={rem.health} />],
          ["Last checked", formatTime(rem.lastCheckedAt)],
          ["Last error", rem.lastError ?? "–"],
          ["Credentials", rem.hasCredentials ? "stored (encrypted)" : "none (anonymous)"],
          ...validity,
          [
            "Hit ratio",
            `${formatRatio(rem.hitRatio)} (${formatCount(rem.cacheHits)} ${rem.cacheHits === 1 ? "hit" : "hits"}, ` +
              `${formatCount(rem.cacheMisses)} ${rem.cacheMisses === 1 ? "miss" : "misses"} from the upstream)`,
          ],
        ]}
      />
      {format === "NPM" ? (
        <CachedPackages ns={ns} repo={repo} admin={admin} />
      ) : maven ? (
        <MavenCache ns={ns} repo={repo} admin={admin} />
      ) : format === "DOCKER" || format === "OCI" ? (
        <CachedImages ns={ns} repo={repo} admin={admin} />
      ) : null}
    </>
  );
}

/** The cached packages of a Maven proxy, with the administrator's
 * invalidation of its metadata. */
function MavenCache({ ns, repo, admin }: { ns: string; repo: string; admin: boolean }) {
  const [inv, doInvalidate] = useMutation(InvalidateMavenMutation);
  const [done, setDone] = useState("");
  const onInvalidate = async (groupId?: string, artifactId?: string) => {
    setDone("");
    const res = await doInvalidate({ input: { namespace: ns, repository: repo, groupId, artifactId } }, ctx);
    if (res.data) {
      const n = res.data.invalidateRemoteMavenMetadata.invalidatedCount;
      const what = artifactId ? `${groupId}:${artifactId}` : "the proxy";
      setDone(`${formatCount(n)} cached ${n === 1 ? "document" : "documents"} of ${what} will be revalidated on their next request.`);
    }
  };
  return (
    <>
      <h2>Cached packages</h2>
      {admin && (
        <p>
          <button type="button" className="btn btn-small" disabled={inv.fetching} onClick={() => void onInvalidate()}>
            Invalidate all metadata
          </button>{" "}
          <span className="muted">maven-metadata.xml and SNAPSHOT files are asked for again; remembered misses are forgotten.</span>
        </p>
      )}
      {done && (
        <p role="status" className="ok-text">
          {done}
        </p>
      )}
      {inv.error && <ErrorBox error={inv.error} title="Could not invalidate the metadata" />}
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Package</th>
              <th scope="col">Versions</th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Last downloaded</th>
              {admin && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}`}
            page={(p) => (
              <CachedMavenPackagePage key={p.index} {...p} ns={ns} repo={repo} admin={admin} busy={inv.fetching} onInvalidate={onInvalidate} />
            )}
          />
        </table>
      </div>
    </>
  );
}

function CachedMavenPackagePage({
  ns,
  repo,
  admin,
  busy,
  onInvalidate,
  after,
  index,
  isLast,
  onMore,
}: PageProps & { ns: string; repo: string; admin: boolean; busy: boolean; onInvalidate(g: string, a: string): Promise<void> }) {
  const [{ data, fetching, error }] = useQuery({
    query: CachedMavenPackagesQuery,
    variables: { namespace: ns, name: repo, first: IMAGE_PAGE, after },
    context: ctx,
  });
  const conn = data?.repository?.remote?.cachedMavenPackages;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);
  const cols = admin ? 5 : 4;
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={cols}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {!conn && fetching && note(<Loading what="Loading cached packages" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>Nothing cached yet: resolve a build through this repository.</Empty>)}
      {conn?.edges.map(({ node: p }) => (
        <tr key={p.id}>
          <th scope="row" data-label="Package">
            {p.groupId}:{p.artifactId}
          </th>
          <td data-label="Versions">
            {p.versions.length === 0 && <span className="muted">metadata only</span>}
            {p.versions.map((v) => (
              <span key={v.version} className="tag-cell">
                <Badge>{v.version}</Badge>{" "}
              </span>
            ))}
          </td>
          <td data-label="Size" className="num">
            {formatBytes(p.sizeBytes)}
          </td>
          <td data-label="Last downloaded">{formatTime(p.lastDownloadedAt)}</td>
          {admin && (
            <td data-label="Actions">
              <button
                type="button"
                className="btn btn-small btn-ghost"
                aria-label={`Invalidate the metadata of ${p.groupId}:${p.artifactId}`}
                disabled={busy}
                onClick={() => void onInvalidate(p.groupId, p.artifactId)}
              >
                Invalidate metadata
              </button>
            </td>
          )}
        </tr>
      ))}
      {conn && isLast && <LoadMoreRow colSpan={cols} pageInfo={conn.pageInfo} onMore={onMore} shown={index * IMAGE_PAGE + conn.edges.length} />}
    </tbody>
  );
}

function CachedImages({ ns, repo, admin }: { ns: string; repo: string; admin: boolean }) {
  return (
    <>
      <h2>Cached images</h2>
      <div className="table-wrap">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Image</th>
              <th scope="col">Tags</th>
              <th scope="col" className="num">
                Manifests
              </th>
              <th scope="col" className="num">
                Size
              </th>
              <th scope="col">Last pulled</th>
              {admin && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${repo}`}
            page={(p) => <CachedImagePage key={p.index} {...p} ns={ns} repo={repo} admin={admin} />}
          />
        </table>
      </div>
    </>
  );
}

function CachedImagePage({ ns, repo, admin, after, index, isLast, onMore }: PageProps & { ns: string; repo: string; admin: boolean }) {
  const [{ data, fetching, error }] = useQuery({
    query: CachedImagesQuery,
    variables: { namespace: ns, name: repo, first: IMAGE_PAGE, after },
    context: ctx,
  });
  const [invalidate, doInvalidate] = useMutation(InvalidateMutation);
  const [evict, doEvict] = useMutation(EvictMutation);
  const [done, setDone] = useState("");
  const conn = data?.repository?.remote?.cachedImages;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);
  const cols = admin ? 6 : 5;
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={cols}>{c}</td>
    </tr>
  );
  const onInvalidate = async (image: string, tag: string) => {
    setDone("");
    const res = await doInvalidate({ input: { namespace: ns, repository: repo, image, tag } }, ctx);
    if (res.data) setDone(`${image}:${tag} will be revalidated on its next pull.`);
  };
  const onEvict = async (image: string) => {
    if (!window.confirm(`Evict ${image} from the cache? Its next pull fetches it from the upstream again.`)) return;
    setDone("");
    const res = await doEvict({ input: { namespace: ns, repository: repo, image } }, ctx);
    if (res.data) setDone(`${image} evicted.`);
  };
  const mutationError = invalidate.error ?? evict.error;
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {mutationError && note(<ErrorBox error={mutationError} title="Could not change the cache" />)}
      {done && index === 0 && note(<span role="status" className="ok-text">{done}</span>)}
      {!conn && fetching && note(<Loading what="Loading cached images" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>Nothing cached yet: pull an image through this repository.</Empty>)}
      {conn?.edges.map(({ node: img }) => (
        <tr key={img.id}>
          <th scope="row" data-label="Image">
            {img.name}
          </th>
          <td data-label="Tags">
            {img.tags.length === 0 && <span className="muted">by digest only</span>}
            {img.tags.map((t) => (
              <span key={t.name} className="tag-cell">
                <Badge tone={t.stale ? "warn" : undefined}>{t.name}</Badge>
                {t.stale && <span className="muted"> revalidates on next pull</span>}
                {admin && !t.stale && (
                  <button
                    type="button"
                    className="btn btn-small btn-ghost"
                    aria-label={`Invalidate ${img.name}:${t.name}`}
                    disabled={invalidate.fetching}
                    onClick={() => void onInvalidate(img.name, t.name)}
                  >
                    Invalidate
                  </button>
                )}{" "}
              </span>
            ))}
          </td>
          <td data-label="Manifests" className="num">
            {formatCount(img.manifestsCount)}
          </td>
          <td data-label="Size" className="num">
            {formatBytes(img.sizeBytes)}
          </td>
          <td data-label="Last pulled">{formatTime(img.lastDownloadedAt)}</td>
          {admin && (
            <td data-label="Actions">
              <button
                type="button"
                className="btn btn-small btn-danger"
                aria-label={`Evict ${img.name}`}
                disabled={evict.fetching}
                onClick={() => void onEvict(img.name)}
              >
                Evict
              </button>
            </td>
          )}
        </tr>
      ))}
      {conn && isLast && <LoadMoreRow colSpan={cols} pageInfo={conn.pageInfo} onMore={onMore} shown={index * IMAGE_PAGE + conn.edges.length} />}
    </tbody>
  );
}

/** The cached packages of an npm remote, with metadata invalidation. */
function CachedPackages({ ns, repo, admin }: { ns: string; repo: string; admin: boolean }) {
  const [{ data, fetching, error }] = useQuery({
    query: CachedPackagesQuery,
    variables: { namespace: ns, name: repo, first: PACKAGE_LIMIT },
    context: ctx,
  });
  const [invalidate, doInvalidate] = useMutation(InvalidateMetadataMutation);
  const [done, setDone] = useState("");
  const pkgs = data?.repository?.remote?.cachedPackages;
  const cols = admin ? 6 : 5;
  const onInvalidate = async (pkg: string | null) => {
    setDone("");
    const res = await doInvalidate({ input: { namespace: ns, repository: repo, package: pkg } }, ctx);
    const n = res.data?.invalidateRemoteMetadata.invalidatedCount;
    if (n === undefined) return;
    setDone(
      pkg
        ? `The packument of ${pkg} will be revalidated on its next request.`
        : `${formatCount(n)} ${n === 1 ? "packument" : "packuments"} will be revalidated on their next request.`,
    );
  };
  return (
    <>
      <h2>Cached packages</h2>
      {admin && (
        <p>
          <button
            type="button"
            className="btn btn-small"
            disabled={invalidate.fetching || !pkgs || pkgs.length === 0}
            onClick={() => void onInvalidate(null)}
          >
            Invalidate metadata
          </button>{" "}
          <span className="muted">Every cached packument is revalidated with the upstream on its next request.</span>
        </p>
      )}
      {done && (
        <p role="status" className="ok-text">
          {done}
        </p>
      )}
      {invalidate.error && <ErrorBox error={invalidate.error} title="Could not invalidate the metadata" />}
      {error && <ErrorBox error={error} />}
      {!pkgs && fetching && <Loading what="Loading cached packages" />}
      {pkgs && pkgs.length === 0 && <Empty>Nothing cached yet: install a package through this registry.</Empty>}
      {pkgs && pkgs.length > 0 && (
        <div className="table-wrap">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Package</th>
                <th scope="col" className="num">
                  Cached versions
                </th>
                <th scope="col" className="num">
                  Size
                </th>
                <th scope="col">Last downloaded</th>
                <th scope="col">Metadata</th>
                {admin && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {pkgs.map((p) => (
                <tr key={p.id}>
                  <th scope="row" data-label="Package">
                    {p.name}
                  </th>
                  <td data-label="Cached versions" className="num">
                    {formatCount(p.cachedVersions)}
                  </td>
                  <td data-label="Size" className="num">
                    {formatBytes(p.sizeBytes)}
                  </td>
                  <td data-label="Last downloaded">{formatTime(p.lastDownloadedAt)}</td>
                  <td data-label="Metadata">
                    {p.checkedAt === null ? (
                      <span className="muted">not cached</span>
                    ) : p.stale ? (
                      <Badge tone="warn">revalidates on next request</Badge>
                    ) : (
                      <>checked {formatTime(p.checkedAt)}</>
                    )}
                  </td>
                  {admin && (
                    <td data-label="Actions">
                      {p.checkedAt !== null && !p.stale && (
                        <button
                          type="button"
                          className="btn btn-small btn-ghost"
                          aria-label={`Invalidate the metadata of ${p.name}`}
                          disabled={invalidate.fetching}
                          onClick={() => void onInvalidate(p.name)}
                        >
                          Invalidate
                        </button>
                      )}
                    </td>
                  )}
                </tr>
              ))}
              {pkgs.length >= PACKAGE_LIMIT && (
                <tr className="row-note">
                  <td colSpan={cols}>The first {PACKAGE_LIMIT} cached packages by name are shown.</td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

/** How to use a remote repository (it takes no pushes or publishes). */
export function RemoteUsage({ ns, repo, format }: { ns: string; repo: string; format: Format }) {
  const { host, origin } = window.location;
  if (format === "NPM") {
    const url = npmRegistryURL(origin, ns, repo);
    return (
      <div className="usage">
        <CopyBlock label="Registry URL" text={url} />
        <CopyBlock label=".npmrc" text={npmrc(origin, ns, repo)} multiline />
        <CopyBlock label="Install through the cache" text={`npm install PACKAGE --registry ${url}`} />
      </div>
    );
  }
  if (format === "MAVEN") {
    const url = `${window.location.protocol}//${host}/maven/${ns}/${repo}`;
    return (
      <div className="usage">
        <CopyBlock
          label="settings.xml: resolve everything (plugins too) through the proxy"
          text={`<mirrors>\n  <mirror><id>${repo}</id><mirrorOf>*</mirrorOf><url>${url}</url></mirror>\n</mirrors>\n<servers>\n  <server><id>${repo}</id><username>token</username><password>YOUR_TOKEN</password></server>\n</servers>`}
        />
        <CopyBlock label="Build" text="mvn package" />
      </div>
    );
  }
  const plain = window.location.protocol === "http:" ? " --plain-http" : "";
  return (
    <div className="usage">
      <CopyBlock label="Log in (password: your token)" text={`docker login ${host}`} />
      <CopyBlock label="Pull an upstream image through the cache" text={`docker pull ${host}/${ns}/${repo}/IMAGE:TAG`} />
      <CopyBlock label="With oras" text={`oras pull${plain} ${host}/${ns}/${repo}/IMAGE:TAG`} />
    </div>
  );
}

/** The upstream settings form of a remote repository. */
export function RemoteSettings({ ns, repo, format }: { ns: string; repo: string; format: Format }) {
  const [{ data }] = useQuery({ query: RemoteQuery, variables: { namespace: ns, name: repo }, context: ctx });
  const [saved, setSaved] = useState(false);
  const rem = data?.repository?.remote;
  if (!rem) return null;
  // A saved change comes back in the query's answer: the form starts again
  // from the new settings.
  return (
    <RemoteSettingsForm
      key={`${rem.url}|${rem.cacheValidityHours}|${rem.metadataCacheValidityHours}|${rem.negativeCacheMinutes}|${rem.hasCredentials}`}
      ns={ns}
      repo={repo}
      metadata={hasMetadataValidity(format)}
      negativeCache={format === "MAVEN"}
      rem={rem}
      saved={saved}
      onSaved={setSaved}
    />
  );
}

// validHours: the server's range of both validities.
function validHours(s: string): boolean {
  return validInt(s, 8760);
}

function validInt(s: string, max: number): boolean {
  const n = Number(s);
  return s !== "" && Number.isInteger(n) && n >= 0 && n <= max;
}

function RemoteSettingsForm({
  ns,
  repo,
  metadata,
  negativeCache,
  rem,
  saved,
  onSaved,
}: {
  ns: string;
  repo: string;
  // metadata: the remote's format caches metadata (npm, Maven), whose
  // validity is the setting that matters; else tags (containers).
  metadata: boolean;
  // negativeCache: the remote remembers upstream 404s (Maven).
  negativeCache: boolean;
  rem: {
    url: string;
    cacheValidityHours: number;
    metadataCacheValidityHours?: number | null;
    negativeCacheMinutes?: number | null;
    hasCredentials: boolean;
  };
  saved: boolean;
  onSaved(saved: boolean): void;
}) {
  const current = metadata ? (rem.metadataCacheValidityHours ?? 1) : rem.cacheValidityHours;
  const [url, setURL] = useState(rem.url);
  const [hours, setHours] = useState(String(current));
  const currentNeg = rem.negativeCacheMinutes ?? 0;
  const [neg, setNeg] = useState(String(currentNeg));
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [clear, setClear] = useState(false);
  const [{ fetching, error }, update] = useMutation(UpdateRemoteMutation);
  const hoursNum = Number(hours);
  const hoursOk = validHours(hours);
  const negNum = Number(neg);
  const negOk = !negativeCache || validInt(neg, 1440);
  const credsOk = (username === "") === (password === "");
  const dirty =
    url !== rem.url ||
    (hoursOk && hoursNum !== current) ||
    (negativeCache && negOk && negNum !== currentNeg) ||
    username !== "" ||
    clear;
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    onSaved(false);
    const remote: Record<string, unknown> = {};
    if (url !== rem.url) remote.url = url;
    if (hoursNum !== current) remote[metadata ? "metadataCacheValidityHours" : "cacheValidityHours"] = hoursNum;
    if (negativeCache && negNum !== currentNeg) remote.negativeCacheMinutes = negNum;
    if (username !== "") {
      remote.username = username;
      remote.password = password;
    } else if (clear) {
      remote.clearCredentials = true;
    }
    const res = await update({ input: { namespace: ns, name: repo, remote } }, ctx);
    if (res.data) {
      setUsername("");
      setPassword("");
      setClear(false);
      onSaved(true);
    }
  };
  return (
    <form className="form panel" onSubmit={onSubmit} autoComplete="off">
      <h3>Upstream settings</h3>
      <label htmlFor="remote-url">Upstream URL</label>
      <input id="remote-url" type="url" value={url} maxLength={1024} onChange={(e) => setURL(e.target.value)} required />
      <label htmlFor="remote-hours">{metadata ? "Revalidate cached metadata after (hours)" : "Revalidate cached tags after (hours)"}</label>
      <input
        id="remote-hours"
        type="number"
        min={0}
        max={8760}
        value={hours}
        aria-invalid={!hoursOk}
        onChange={(e) => setHours(e.target.value)}
      />
      {metadata && (
        <p className="help">
          A cached package's metadata is served without asking the upstream for this long; 0 asks on every request.
          Package files are immutable and stay cached until evicted.
        </p>
      )}
      {negativeCache && (
        <>
          <label htmlFor="remote-negative">Remember missing paths for (minutes)</label>
          <input
            id="remote-negative"
            type="number"
            min={0}
            max={1440}
            value={neg}
            aria-invalid={!negOk}
            onChange={(e) => setNeg(e.target.value)}
          />
          <p className="help">
            An upstream 404 is answered from memory for this long, so Maven's probes of every repository do not reach the
            upstream each time; 0 never remembers. Errors and timeouts are never remembered.
          </p>
        </>
      )}
      <fieldset>
        <legend>Credentials</legend>
        <p className="help">
          {rem.hasCredentials ? "Credentials are stored (encrypted); they are never shown." : "No credentials: the upstream is asked anonymously."}{" "}
          Give both fields to replace them.
        </p>
        <label htmlFor="remote-username">New username</label>
        <input id="remote-username" value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="off" />
        <label htmlFor="remote-password">New password or token</label>
        <input
          id="remote-password"
          type="password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          autoComplete="new-password"
        />
        {rem.hasCredentials && (
          <label className="radio">
            <input type="checkbox" checked={clear} disabled={username !== ""} onChange={(e) => setClear(e.target.checked)} />
            <span>Remove the stored credentials</span>
          </label>
        )}
      </fieldset>
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={!dirty || !hoursOk || !negOk || !credsOk || fetching}>
          Save upstream settings
        </button>
        {saved && !dirty && (
          <span role="status" className="ok-text">
            Saved.
          </span>
        )}
      </div>
      {error && <ErrorBox error={error} title="Could not save the upstream settings" />}
    </form>
  );
}
