import { useEffect, useRef, type ReactNode } from "react";
import { useMutation, useQuery, type CombinedError } from "urql";
import { attestationOf, formatPlatform, groupArtifacts, isIndexType, kindLabels, artifactKind, manifestKind } from "../artifacts";
import { useAuth } from "../auth";
import { dockerPull, orasPull } from "../components/usage";
import { Badge, CopyBlock, Dl, Empty, ErrorBox, Loading } from "../components/ui";
import { graphql } from "../gql";
import { formatBytes, formatTime, registryHost, shortDigest } from "../format";

export const ManifestDetailQuery = graphql(`
  query ManifestDetail($namespace: String!, $name: String!, $image: String!, $digest: String!) {
    repository(namespace: $namespace, name: $name) {
      id
      image(name: $image) {
        id
        manifest(digest: $digest) {
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
            mediaType
            tags
          }
          compressedSize
          configBlob {
            digest
            mediaType
            size
          }
          config {
            created
            author
            os
            architecture
            variant
            entrypoint
            cmd
            workingDir
            user
            exposedPorts
            labels {
              key
              value
            }
          }
          layers {
            digest
            mediaType
            size
            title
          }
          indexEntries {
            digest
            mediaType
            size
            artifactType
            platform {
              os
              architecture
              variant
              osVersion
            }
            annotations {
              key
              value
            }
            manifest {
              id
              digest
              size
            }
          }
          annotations {
            key
            value
          }
          parents {
            id
            digest
            mediaType
          }
          referrers {
            id
            digest
            mediaType
            artifactType
            size
            createdAt
          }
        }
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

export const manifestContext = { additionalTypenames: ["ContainerImage", "ContainerTag", "ContainerManifest"] };

/** The message of the error of one field (a payload or config that could not be read), if any. */
function fieldError(error: CombinedError | undefined, field: string): string | undefined {
  return error?.graphQLErrors.find((e) => e.path?.[e.path.length - 1] === field)?.message;
}

function DigestButton({ digest, onSelect, label }: { digest: string; onSelect(d: string): void; label?: string }) {
  return (
    <button type="button" className="btn btn-link mono" title={digest} aria-label={label} onClick={() => onSelect(digest)}>
      {shortDigest(digest)}
    </button>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <>
      <h3>{title}</h3>
      {children}
    </>
  );
}

/**
 * One manifest of an image: what it is, what it weighs, its platforms (an
 * index) or config and layers (an image), and what is attached to it.
 * Everything read from payloads and configs is user data, rendered as text.
 */
export function ManifestDetail({
  ns,
  repo,
  image,
  digest,
  onSelect,
  focus,
}: {
  ns: string;
  repo: string;
  image: string;
  digest: string;
  onSelect(d: string | null): void;
  /** Move the focus to the heading once shown (the selection changed by a click). */
  focus: boolean;
}) {
  const { signedIn } = useAuth();
  const [{ data, fetching, error }] = useQuery({
    query: ManifestDetailQuery,
    variables: { namespace: ns, name: repo, image, digest },
    context: manifestContext,
  });
  const [del, deleteManifest] = useMutation(DeleteManifestMutation);
  const heading = useRef<HTMLHeadingElement>(null);
  const m = data?.repository?.image?.manifest;
  const shown = !!m && m.digest === digest;
  useEffect(() => {
    if (focus && shown) {
      heading.current?.focus();
      heading.current?.scrollIntoView?.({ block: "start" });
    }
  }, [focus, shown, digest]);
  const host = registryHost();
  const title = m && shown ? manifestKind(m.mediaType) : "Manifest";

  let body: ReactNode;
  if (!data && fetching) body = <Loading what="Loading the manifest" />;
  else if (error && !m) body = <ErrorBox error={error} />;
  else if (!m || !shown)
    body = (
      <Empty>
        There is no active manifest <code>{digest}</code> in this image.
      </Empty>
    );
  else {
    const index = isIndexType(m.mediaType);
    const attached = groupArtifacts(m.referrers);
    const platforms = (m.indexEntries ?? []).filter((e) => attestationOf(e.annotations) === null);
    const attestations = (m.indexEntries ?? []).filter((e) => attestationOf(e.annotations) !== null);
    const payloadError = fieldError(error, index ? "indexEntries" : "layers");
    const configError = fieldError(error, "config");
    const c = m.config;
    body = (
      <>
        <CopyBlock label="Digest" text={m.digest} />
        {m.subjectDigest && (
          <p className="notice notice-info" data-testid="attached-to">
            Attached to{" "}
            {m.subject ? (
              <DigestButton digest={m.subject.digest} onSelect={onSelect} />
            ) : (
              <code title={m.subjectDigest}>{shortDigest(m.subjectDigest)}</code>
            )}
            {m.subject?.tags.length ? <> ({m.subject.tags.join(", ")})</> : null}
            {!m.subject && " (not an active manifest of this image)"}: {kindLabels[artifactKind(m.artifactType)].one}
            {m.artifactType && (
              <>
                {" "}
                <code>{m.artifactType}</code>
              </>
            )}
          </p>
        )}
        <Dl
          items={[
            ["Media type", m.mediaType],
            ...(m.artifactType && !m.subjectDigest ? ([["Artifact type", m.artifactType]] as [string, ReactNode][]) : []),
            index
              ? ["Total size (all platforms)", formatBytes(m.size)]
              : ["Total size (compressed)", m.compressedSize != null ? formatBytes(m.compressedSize) : "–"],
            [
              "Tags",
              m.tags.length ? (
                m.tags.map((t) => <Badge key={t}>{t}</Badge>)
              ) : (
                <span className="muted">{m.parents.length ? "none: listed by an index" : m.subjectDigest ? "none: attached" : "untagged"}</span>
              ),
            ],
            ["Pushed", formatTime(m.createdAt)],
          ]}
        />
        {attached.length > 0 && (
          <Section title="Attached artifacts">
            {attached.map((g) => (
              <div key={g.kind} className="attached-group" data-kind={g.kind}>
                <h4>
                  {g.label} <span className="muted">({g.items.length})</span>
                </h4>
                <ul className="plain">
                  {g.items.map((r) => (
                    <li key={r.id}>
                      <DigestButton digest={r.digest} onSelect={onSelect} /> <code className="small">{r.artifactType ?? r.mediaType}</code>{" "}
                      <span className="muted">
                        {formatBytes(r.size)} · {formatTime(r.createdAt)}
                      </span>
                    </li>
                  ))}
                </ul>
              </div>
            ))}
          </Section>
        )}
        {payloadError && <p className="notice notice-warn" role="alert">The manifest's payload could not be read: {payloadError}</p>}

        {index && (
          <Section title="Platforms">
            {platforms.length === 0 ? (
              <p className="muted">The index lists no platform image.</p>
            ) : (
              <div className="table-wrap">
                <table className="table table-compact" aria-label="Platforms">
                  <thead>
                    <tr>
                      <th scope="col">Platform</th>
                      <th scope="col">Manifest</th>
                      <th scope="col">Media type</th>
                      <th scope="col" className="num">
                        Size
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {platforms.map((e) => (
                      <tr key={e.digest} data-platform={formatPlatform(e.platform)}>
                        <th scope="row" data-label="Platform">
                          {formatPlatform(e.platform)}
                        </th>
                        <td data-label="Manifest">
                          <DigestButton digest={e.digest} onSelect={onSelect} label={`Open ${formatPlatform(e.platform)} manifest`} />
                        </td>
                        <td data-label="Media type" className="small">
                          {e.mediaType}
                        </td>
                        <td data-label="Size" className="num">
                          {e.manifest ? formatBytes(e.manifest.size) : <span className="muted">not in the image</span>}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            {attestations.length > 0 && (
              <p className="small">
                Build attestations in the index:{" "}
                {attestations.map((e) => (
                  <span key={e.digest}>
                    <DigestButton digest={e.digest} onSelect={onSelect} /> (for {shortDigest(attestationOf(e.annotations) || "?")}){" "}
                  </span>
                ))}
              </p>
            )}
          </Section>
        )}

        {!index && m.configBlob && (
          <Section title="Configuration">
            {configError ? (
              <p className="notice notice-warn" role="alert">The config blob could not be read: {configError}</p>
            ) : c ? (
              <>
                <Dl
                  items={[
                    ["Created", c.created ? formatTime(c.created) : "–"],
                    ["Platform", c.os || c.architecture ? formatPlatform({ os: c.os ?? "?", architecture: c.architecture ?? "?", variant: c.variant }) : "–"],
                    ["Entrypoint", c.entrypoint ? <code>{JSON.stringify(c.entrypoint)}</code> : "–"],
                    ["Cmd", c.cmd ? <code>{JSON.stringify(c.cmd)}</code> : "–"],
                    ["Working directory", c.workingDir ? <code>{c.workingDir}</code> : "–"],
                    ["User", c.user ? <code>{c.user}</code> : "–"],
                    ["Exposed ports", c.exposedPorts.length ? c.exposedPorts.join(", ") : "–"],
                    ...(c.author ? ([["Author", c.author]] as [string, ReactNode][]) : []),
                  ]}
                />
                {c.labels.length > 0 && (
                  <>
                    <h4>Labels</h4>
                    <KeyValues label="Labels" items={c.labels} />
                  </>
                )}
              </>
            ) : (
              <p className="muted">
                The config (<code>{m.configBlob.mediaType}</code>, {formatBytes(m.configBlob.size)}) is not an image configuration.
              </p>
            )}
          </Section>
        )}

        {!index && m.layers && (
          <Section title={m.mediaType === "application/vnd.oci.artifact.manifest.v1+json" ? "Blobs" : "Layers"}>
            {m.layers.length === 0 ? (
              <p className="muted">No layers.</p>
            ) : (
              <div className="table-wrap">
                <table className="table table-compact" aria-label="Layers">
                  <thead>
                    <tr>
                      <th scope="col" className="num">
                        #
                      </th>
                      <th scope="col">Digest</th>
                      <th scope="col">Media type</th>
                      <th scope="col" className="num">
                        Size
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {m.layers.map((l, i) => (
                      <tr key={`${i}-${l.digest}`}>
                        <td data-label="#" className="num">
                          {i + 1}
                        </td>
                        <th scope="row" data-label="Digest" className="mono" title={l.digest}>
                          {shortDigest(l.digest)}
                          {l.title && <span className="small"> {l.title}</span>}
                        </th>
                        <td data-label="Media type" className="small">
                          {l.mediaType}
                        </td>
                        <td data-label="Size" className="num">
                          {formatBytes(l.size)}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </Section>
        )}

        <Section title="Pull by digest">
          <CopyBlock label="docker pull" text={dockerPull(host, ns, repo, image, m.digest)} />
          <CopyBlock label="oras pull" text={orasPull(host, ns, repo, image, m.digest)} />
        </Section>

        {m.annotations.length > 0 && (
          <Section title="Annotations">
            <KeyValues label="Annotations" items={m.annotations} />
          </Section>
        )}

        {attached.length === 0 && (
          <p className="muted small">
            Nothing is attached. Signatures, SBOMs and attestations pushed with this manifest as their subject (
            <code>oras attach</code>, <code>cosign</code>, <code>notation</code>) are listed here.
          </p>
        )}

        {m.parents.length > 0 && (
          <Section title="Listed by">
            <ul className="plain">
              {m.parents.map((p) => (
                <li key={p.id}>
                  <DigestButton digest={p.digest} onSelect={onSelect} /> <span className="small">{manifestKind(p.mediaType)}</span>
                </li>
              ))}
            </ul>
          </Section>
        )}

        {del.error && <ErrorBox error={del.error} title="Could not delete the manifest" />}
        {signedIn && (
          <p>
            <button
              type="button"
              className="btn btn-danger-outline"
              disabled={del.fetching}
              onClick={() => {
                if (window.confirm(`Move manifest ${shortDigest(m.digest)} to the trash? Its tags are deleted.`)) {
                  void deleteManifest({ input: { namespace: ns, repository: repo, image, digest: m.digest } }, manifestContext).then(
                    (r) => r.data && onSelect(null),
                  );
                }
              }}
            >
              Move manifest to trash
            </button>
          </p>
        )}
      </>
    );
  }

  return (
    <section className="panel manifest-detail" aria-labelledby="manifest-detail-title" id="manifest-detail">
      <div className="panel-head">
        <h2 id="manifest-detail-title" tabIndex={-1} ref={heading}>
          {title} <span className="mono">{shortDigest(digest)}</span>
        </h2>
        <button type="button" className="btn btn-small" onClick={() => onSelect(null)}>
          Close
        </button>
      </div>
      {body}
    </section>
  );
}

function KeyValues({ label, items }: { label: string; items: readonly { key: string; value: string }[] }) {
  return (
    <div className="table-wrap">
      <table className="table table-compact" aria-label={label}>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {items.map((kv) => (
            <tr key={kv.key}>
              <th scope="row" data-label="Key" className="mono break">
                {kv.key}
              </th>
              <td data-label="Value" className="break">
                {kv.value}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
