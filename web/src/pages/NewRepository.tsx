import { useState, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { useMutation } from "urql";
import { ErrorBox, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { Format, RepositoryKind, Visibility } from "../gql/graphql";
import { paths } from "../paths";
import { FORMATS, VISIBILITIES } from "../repoQuery";
import { VirtualEditor, draftOk, emptyVirtual, virtualInput, type VirtualDraft } from "./VirtualRepository";

const CreateRepositoryMutation = graphql(`
  mutation CreateRepository($input: CreateRepositoryInput!) {
    createRepository(input: $input) {
      repository {
        id
        name
        format
        kind
        visibility
        description
      }
    }
  }
`);

// Same rule as the server (store.ValidateRepositoryName); the server decides.
export const NAME_RE = /^[a-z0-9]+(?:[._-][a-z0-9]+)*$/;

const FORMAT_HELP: Record<Format, string> = {
  DOCKER: "Container images for docker, podman, crane (Docker media types).",
  OCI: "OCI images and artifacts (oras, helm, cosign …).",
  NPM: "npm packages (npm, yarn, pnpm).",
  MAVEN: "Maven artifacts (mvn, gradle).",
};

export function NewRepository() {
  const { ns = "" } = useParams();
  const navigate = useNavigate();
  const [name, setName] = useState("");
  const [format, setFormat] = useState<Format>("DOCKER");
  const [visibility, setVisibility] = useState<Visibility>("PRIVATE");
  const [description, setDescription] = useState("");
  const [kind, setKind] = useState<RepositoryKind>("HOSTED");
  const [url, setURL] = useState("");
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [hours, setHours] = useState("24");
  const [metaHours, setMetaHours] = useState("1");
  const [draft, setDraft] = useState<VirtualDraft>(emptyVirtual);
  const [{ fetching, error }, create] = useMutation(CreateRepositoryMutation);
  const nameOk = NAME_RE.test(name) && name.length <= 255;
  const container = format === "DOCKER" || format === "OCI";
  const remote = kind === "REMOTE";
  const virtual = kind === "VIRTUAL";
  const virtualOk = !virtual || draftOk(draft);
  // npm and Maven remotes cache metadata (packuments, maven-metadata.xml)
  // under their own validity; their content is immutable.
  const metadata = format === "NPM" || format === "MAVEN";
  const hoursNum = Number(metadata ? metaHours : hours);
  const hoursOk = (metadata ? metaHours : hours) !== "" && Number.isInteger(hoursNum) && hoursNum >= 0 && hoursNum <= 8760;
  const remoteOk =
    !remote || (/^https?:\/\/[^/]/.test(url) && url.length <= 1024 && (username === "") === (password === "") && hoursOk);

  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    const res = await create(
      {
        input: {
          namespace: ns,
          name,
          format,
          kind: remote ? "REMOTE" : virtual ? "VIRTUAL" : "HOSTED",
          visibility,
          description: description.trim() || null,
          remote: remote
            ? {
                url: url.trim(),
                username: username || null,
                password: password || null,
                ...(metadata ? { metadataCacheValidityHours: hoursNum } : { cacheValidityHours: hoursNum }),
              }
            : null,
          virtual: virtual ? virtualInput(draft) : null,
        },
      },
      { additionalTypenames: ["Repository"] },
    );
    if (res.data) navigate(paths.repository(ns, res.data.createRepository.repository.name));
  };

  return (
    <section className="narrow">
      <PageTitle>Create repository</PageTitle>
      <form className="form" onSubmit={onSubmit}>
        <label htmlFor="repo-name">Name</label>
        <input
          id="repo-name"
          value={name}
          onChange={(e) => setName(e.target.value.toLowerCase())}
          aria-invalid={name !== "" && !nameOk}
          aria-describedby="repo-name-help"
          autoComplete="off"
          spellCheck={false}
          autoFocus
          required
        />
        <p id="repo-name-help" className="help">
          Lowercase letters and digits joined by single <code>.</code>, <code>_</code> or <code>-</code>; at most 255
          characters; unique in the namespace (trash included).
        </p>

        <fieldset>
          <legend>Format</legend>
          {FORMATS.map((f) => (
            <label key={f} className="radio">
              <input
                type="radio"
                name="format"
                value={f}
                checked={format === f}
                onChange={() => {
                  setFormat(f);
                  // Upstreams are of one format: a new format starts a new list.
                  setDraft(emptyVirtual);
                }}
              />
              <span>
                <strong>{f.toLowerCase()}</strong> <span className="muted">{FORMAT_HELP[f]}</span>
              </span>
            </label>
          ))}
        </fieldset>

        <fieldset>
          <legend>Kind</legend>
          <label className="radio">
            <input type="radio" name="kind" value="HOSTED" checked={!remote && !virtual} onChange={() => setKind("HOSTED")} />
            <span>
              <strong>hosted</strong> <span className="muted">Artifacts are pushed to and stored in this registry.</span>
            </span>
          </label>
          <label className="radio">
            <input
              type="radio"
              name="kind"
              value="REMOTE"
              checked={remote}
              onChange={() => setKind("REMOTE")}
            />
            <span>
              <strong>remote</strong>{" "}
              <span className="muted">
                A pull-through cache of an upstream registry: reads are served from the cache and fetched from the
                upstream when missing; it takes no pushes or publishes.
              </span>
            </span>
          </label>
          <label className="radio">
            <input type="radio" name="kind" value="VIRTUAL" checked={virtual} onChange={() => setKind("VIRTUAL")} />
            <span>
              <strong>virtual</strong>{" "}
              <span className="muted">
                One URL over other repositories of this format (hosted ones, pull-through caches, other virtuals), resolved in order.
              </span>
            </span>
          </label>
        </fieldset>

        {virtual && <VirtualEditor ns={ns} format={format} self={name} value={draft} onChange={setDraft} />}

        {remote && (
          <fieldset>
            <legend>Upstream</legend>
            <label htmlFor="remote-url">Upstream registry URL</label>
            <input
              id="remote-url"
              type="url"
              value={url}
              maxLength={1024}
              placeholder="https://registry.example.com"
              onChange={(e) => setURL(e.target.value)}
              autoComplete="off"
              required
            />
            <p className="help">
              The registry's base URL (http or https, without credentials).
              {container && (
                <>
                  {" "}
                  For Docker Hub, one-component names such as <code>alpine</code> are pulled from <code>library/</code>.
                </>
              )}
            </p>
            <label htmlFor="remote-username">Username (optional)</label>
            <input id="remote-username" value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="off" />
            <label htmlFor="remote-password">Password or token (optional)</label>
            <input
              id="remote-password"
              type="password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              autoComplete="new-password"
            />
            <p className="help">Stored encrypted and never shown again; give both or neither.</p>
            {metadata ? (
              <>
                <label htmlFor="remote-meta-hours">Revalidate cached metadata after (hours)</label>
                <input
                  id="remote-meta-hours"
                  type="number"
                  min={0}
                  max={8760}
                  value={metaHours}
                  onChange={(e) => setMetaHours(e.target.value)}
                />
                <p className="help">
                  A package's metadata ({format === "NPM" ? "packument" : "maven-metadata.xml"}) is served without asking
                  the upstream for this long; 0 asks on every request. Package files are immutable and stay cached until
                  evicted.
                </p>
              </>
            ) : (
              <>
                <label htmlFor="remote-hours">Revalidate cached tags after (hours)</label>
                <input
                  id="remote-hours"
                  type="number"
                  min={0}
                  max={8760}
                  value={hours}
                  onChange={(e) => setHours(e.target.value)}
                />
                <p className="help">
                  A cached tag is served without asking the upstream for this long; 0 asks on every pull. Content by
                  digest is cached until evicted.
                </p>
              </>
            )}
          </fieldset>
        )}

        <label htmlFor="repo-visibility">Visibility</label>
        <select id="repo-visibility" value={visibility} onChange={(e) => setVisibility(e.target.value as Visibility)}>
          {VISIBILITIES.map((v) => (
            <option key={v} value={v}>
              {v.toLowerCase()}
            </option>
          ))}
        </select>
        <p className="help">Public repositories can be read without a token.</p>

        <label htmlFor="repo-description">Description</label>
        <textarea
          id="repo-description"
          value={description}
          maxLength={1024}
          rows={3}
          onChange={(e) => setDescription(e.target.value)}
        />

        <div className="form-actions">
          <button type="submit" className="btn btn-primary" disabled={fetching || !nameOk || !remoteOk || !virtualOk}>
            {fetching ? "Creating…" : "Create repository"}
          </button>
          <Link className="btn btn-ghost" to={paths.repositories(ns)}>
            Cancel
          </Link>
        </div>
      </form>
      {error && <ErrorBox error={error} title="Could not create the repository" />}
    </section>
  );
}
