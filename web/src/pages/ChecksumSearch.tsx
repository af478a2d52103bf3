import { useState, type FormEvent } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { useQuery } from "urql";
import { Badge, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { formatTime } from "../format";
import { paths } from "../paths";

const ChecksumSearchQuery = graphql(`
  query ChecksumSearch($namespace: String!, $sha256: String!, $activeOnly: Boolean, $first: Int) {
    namespace(slug: $namespace) {
      id
      checksumSearch(sha256: $sha256, activeOnly: $activeOnly, first: $first) {
        kind
        artifactId
        parentId
        cached
        softDeletedAt
        repository {
          id
          name
          format
        }
      }
    }
  }
`);

/** `sha256:<hex>` or 64 hex digits, normalized; null when it is neither. */
export function normalizeSha256(input: string): string | null {
  const v = input.trim().toLowerCase();
  const hex = v.startsWith("sha256:") ? v.slice(7) : v;
  return /^[0-9a-f]{64}$/.test(hex) ? `sha256:${hex}` : null;
}

export function ChecksumSearch() {
  const { ns = "" } = useParams();
  const [params, setParams] = useSearchParams();
  const q = params.get("sha256") ?? "";
  const all = params.get("all") === "1";
  const [input, setInput] = useState(q);
  const [includeDeleted, setIncludeDeleted] = useState(all);
  const valid = normalizeSha256(input);
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    if (!valid) return;
    const p = new URLSearchParams({ sha256: valid });
    if (includeDeleted) p.set("all", "1");
    setParams(p);
  };
  const sha = normalizeSha256(q);
  return (
    <section>
      <PageTitle>Checksum search</PageTitle>
      <p className="muted">
        Find every artifact of the namespace that holds a blob, across all formats, published or cached by a remote
        repository.
      </p>
      <form className="form" onSubmit={onSubmit} role="search">
        <label htmlFor="sha">SHA-256 digest</label>
        <input
          id="sha"
          className="mono"
          value={input}
          onChange={(e) => setInput(e.target.value)}
          placeholder="sha256:… or 64 hex digits"
          aria-invalid={input !== "" && !valid}
          aria-describedby="sha-help"
          data-shortcut="/"
          autoComplete="off"
          spellCheck={false}
        />
        <p id="sha-help" className="help">
          {input !== "" && !valid ? "Not a SHA-256 digest: expected 64 hexadecimal digits." : "Press / to jump here."}
        </p>
        <label className="checkbox">
          <input type="checkbox" checked={includeDeleted} onChange={(e) => setIncludeDeleted(e.target.checked)} /> Include
          items in the trash
        </label>
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" disabled={!valid}>
            Search
          </button>
        </div>
      </form>
      {sha && <Results ns={ns} sha={sha} activeOnly={!all} />}
    </section>
  );
}

function Results({ ns, sha, activeOnly }: { ns: string; sha: string; activeOnly: boolean }) {
  const [{ data, fetching, error }] = useQuery({
    query: ChecksumSearchQuery,
    variables: { namespace: ns, sha256: sha, activeOnly, first: 100 },
  });
  if (error) return <ErrorBox error={error} />;
  if (!data && fetching) return <Loading what="Searching" />;
  const matches = data?.namespace?.checksumSearch ?? [];
  if (matches.length === 0) return <Empty>No artifact of {ns} holds this blob.</Empty>;
  return (
    <div className="table-wrap">
      <table className="table" aria-label="Matches">
        <thead>
          <tr>
            <th scope="col">Repository</th>
            <th scope="col">Match</th>
            <th scope="col">Artifact id</th>
            <th scope="col">Parent id</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {matches.map((m) => (
            <tr key={`${m.kind}/${m.artifactId}`}>
              <th scope="row" data-label="Repository">
                <Link to={paths.repository(ns, m.repository.name)}>{m.repository.name}</Link>{" "}
                <Badge>{m.repository.format.toLowerCase()}</Badge>
              </th>
              <td data-label="Match">
                {m.kind.toLowerCase().replaceAll("_", " ")}
                {m.cached && (
                  <>
                    {" "}
                    <Badge tone="info">cached</Badge>
                  </>
                )}
              </td>
              <td data-label="Artifact id" className="mono small">
                {m.artifactId}
              </td>
              <td data-label="Parent id" className="mono small">
                {m.parentId}
              </td>
              <td data-label="State">{m.softDeletedAt ? <Badge tone="bad">in trash since {formatTime(m.softDeletedAt)}</Badge> : "active"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
