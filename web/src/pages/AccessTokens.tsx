// Namespace access tokens: the list, creation (the secret is shown once,
// kept only in this component's state) and revocation.
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { useParams, useSearchParams } from "react-router";
import { useMutation, useQuery } from "urql";
import { LoadMoreRow, PagedList, focusFirstLinkIfLost, type PageProps } from "../components/PagedList";
import { Badge, CopyBlock, Empty, ErrorBox, Loading, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import type { AccessTokenScope } from "../gql/graphql";
import { formatTime, registryHost } from "../format";
import { dayEnd } from "./PublishHistory";

const AccessTokensQuery = graphql(`
  query AccessTokens($namespace: String!, $first: Int, $after: String, $includeRevoked: Boolean) {
    accessTokens(namespace: $namespace, first: $first, after: $after, includeRevoked: $includeRevoked) {
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        cursor
        node {
          id
          name
          scopes
          repositories {
            id
            name
          }
          expiresAt
          revokedAt
          lastUsedAt
          createdAt
        }
      }
    }
  }
`);

const CreateAccessTokenMutation = graphql(`
  mutation CreateAccessToken($input: CreateAccessTokenInput!) {
    createAccessToken(input: $input) {
      secret
      token {
        id
        name
        scopes
        expiresAt
        createdAt
      }
    }
  }
`);

const RevokeAccessTokenMutation = graphql(`
  mutation RevokeAccessToken($input: RevokeAccessTokenInput!) {
    revokeAccessToken(input: $input) {
      token {
        id
        revokedAt
      }
    }
  }
`);

const PAGE = 50;
const ctx = { additionalTypenames: ["AccessToken"] };

export const SCOPES: { scope: AccessTokenScope; what: string }[] = [
  { scope: "READ", what: "pull, download and list" },
  { scope: "WRITE", what: "push and publish (and read)" },
  { scope: "DELETE", what: "delete artifacts and tags (and read)" },
  { scope: "ADMIN", what: "administer the namespace: repositories, tokens, trash" },
];

/** Repository names typed as a list (commas or spaces); null (every repository) when empty. */
export function parseRepositoryList(input: string): string[] | null {
  const names = [...new Set(input.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean))];
  return names.length ? names : null;
}

/** Whether a token can still be used at `now`. */
export function tokenState(t: { revokedAt?: string | null; expiresAt?: string | null }, now = Date.now()): "active" | "revoked" | "expired" {
  if (t.revokedAt) return "revoked";
  if (t.expiresAt && new Date(t.expiresAt).getTime() <= now) return "expired";
  return "active";
}

export function AccessTokens() {
  const { ns = "" } = useParams();
  const [params, setParams] = useSearchParams();
  const includeRevoked = params.get("revoked") === "1";
  return (
    <section>
      <PageTitle>Access tokens</PageTitle>
      <p className="muted">
        Tokens of <strong>{ns}</strong> for docker, npm, Maven and this UI. A token's secret is shown once, when it is created; only its hash is
        stored.
      </p>
      <CreateToken ns={ns} />
      <h2 id="tokens">Tokens</h2>
      <label className="checkbox">
        <input
          type="checkbox"
          checked={includeRevoked}
          onChange={(e) => setParams(e.target.checked ? { revoked: "1" } : {}, { replace: true })}
        />{" "}
        Show revoked tokens
      </label>
      <div className="table-wrap">
        <table className="table" aria-labelledby="tokens">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Scopes</th>
              <th scope="col">Repositories</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <PagedList
            resetKey={`${ns}/${includeRevoked}`}
            page={(p) => <TokenPage key={`${includeRevoked}#${p.index}`} {...p} ns={ns} includeRevoked={includeRevoked} />}
          />
        </table>
      </div>
    </section>
  );
}

function CreateToken({ ns }: { ns: string }) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<AccessTokenScope[]>(["READ"]);
  const [repos, setRepos] = useState("");
  const [expires, setExpires] = useState("");
  const [created, setCreated] = useState<{ name: string; secret: string } | null>(null);
  const [{ fetching, error }, create] = useMutation(CreateAccessTokenMutation);
  const secretRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (created) secretRef.current?.focus();
  }, [created]);
  const toggle = (s: AccessTokenScope) => setScopes((cur) => (cur.includes(s) ? cur.filter((x) => x !== s) : [...cur, s]));
  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    setCreated(null);
    const res = await create(
      {
        input: {
          namespace: ns,
          name: name.trim(),
          scopes: SCOPES.map((s) => s.scope).filter((s) => scopes.includes(s)),
          repositories: parseRepositoryList(repos),
          expiresAt: dayEnd(expires || null),
        },
      },
      ctx,
    );
    const p = res.data?.createAccessToken;
    if (p) {
      setCreated({ name: p.token.name, secret: p.secret });
      setName("");
      setRepos("");
      setExpires("");
    }
  };
  return (
    <div className="panel">
      <h2>Create a token</h2>
      {created && (
        <div className="secret" role="region" aria-label="New token secret" tabIndex={-1} ref={secretRef}>
          <p>
            <strong>Token {created.name} created.</strong> Copy its secret now: it is not shown again.
          </p>
          <CopyBlock label="Secret" text={created.secret} />
          <CopyBlock label="docker login (paste the secret as the password)" text={`docker login ${registryHost()} -u ${created.name} --password-stdin`} />
          <button type="button" className="btn" onClick={() => setCreated(null)}>
            Done, hide the secret
          </button>
        </div>
      )}
      <form className="form" onSubmit={onSubmit} aria-label="Create a token">
        <label htmlFor="token-name">Name</label>
        <input
          id="token-name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          maxLength={255}
          autoComplete="off"
          spellCheck={false}
          required
        />
        <fieldset className="checks">
          <legend>Scopes</legend>
          {SCOPES.map(({ scope, what }) => (
            <label key={scope} className="checkbox">
              <input type="checkbox" checked={scopes.includes(scope)} onChange={() => toggle(scope)} name="scope" value={scope} />{" "}
              <strong>{scope.toLowerCase()}</strong> <span className="muted">{what}</span>
            </label>
          ))}
        </fieldset>
        <label htmlFor="token-repos">Repositories (optional)</label>
        <input
          id="token-repos"
          value={repos}
          onChange={(e) => setRepos(e.target.value)}
          placeholder="every repository of the namespace"
          aria-describedby="token-repos-help"
          autoComplete="off"
          spellCheck={false}
        />
        <p id="token-repos-help" className="help">
          Names separated by commas or spaces restrict the token to those repositories.
        </p>
        <label htmlFor="token-expires">Valid through (UTC day, optional)</label>
        <input id="token-expires" type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" disabled={fetching || !name.trim() || scopes.length === 0}>
            Create token
          </button>
        </div>
        {error && <ErrorBox error={error} title="Could not create the token" />}
      </form>
    </div>
  );
}

function TokenPage({ ns, includeRevoked, after, index, isLast, onMore }: PageProps & { ns: string; includeRevoked: boolean }) {
  const [{ data, fetching, error }] = useQuery({
    query: AccessTokensQuery,
    variables: { namespace: ns, first: PAGE, after, includeRevoked },
    context: ctx,
  });
  const [revoke, doRevoke] = useMutation(RevokeAccessTokenMutation);
  const conn = data?.accessTokens;
  const body = useRef<HTMLTableSectionElement>(null);
  useEffect(() => {
    if (index > 0 && conn) focusFirstLinkIfLost(body.current);
  }, [index, conn]);
  const note = (c: ReactNode) => (
    <tr className="row-note">
      <td colSpan={7}>{c}</td>
    </tr>
  );
  return (
    <tbody ref={body}>
      {error && note(<ErrorBox error={error} />)}
      {revoke.error && note(<ErrorBox error={revoke.error} title="Could not revoke the token" />)}
      {!conn && fetching && note(<Loading what="Loading tokens" />)}
      {conn && conn.edges.length === 0 && index === 0 && note(<Empty>No token yet.</Empty>)}
      {conn?.edges.map(({ node: t }) => {
        const state = tokenState(t);
        return (
          <tr key={t.id} data-token={t.name}>
            <th scope="row" data-label="Name">
              {t.name} {state !== "active" && <Badge tone="bad">{state}</Badge>}
            </th>
            <td data-label="Scopes">
              {t.scopes.map((s) => (
                <Badge key={s}>{s.toLowerCase()}</Badge>
              ))}
            </td>
            <td data-label="Repositories">{t.repositories ? t.repositories.map((r) => r.name).join(", ") || "none left" : "all"}</td>
            <td data-label="Expires">{t.expiresAt ? formatTime(t.expiresAt) : "never"}</td>
            <td data-label="Last used">{formatTime(t.lastUsedAt)}</td>
            <td data-label="Created">{formatTime(t.createdAt)}</td>
            <td className="actions">
              {!t.revokedAt && (
                <button
                  type="button"
                  className="btn btn-small btn-danger-outline"
                  disabled={revoke.fetching}
                  aria-label={`Revoke token ${t.name}`}
                  onClick={() => {
                    if (window.confirm(`Revoke token ${t.name}? Clients using it are refused from now on.`)) {
                      void doRevoke({ input: { namespace: ns, id: t.id } }, ctx);
                    }
                  }}
                >
                  Revoke
                </button>
              )}
              {t.revokedAt && <span className="small muted">revoked {formatTime(t.revokedAt)}</span>}
            </td>
          </tr>
        );
      })}
      {conn && isLast && <LoadMoreRow colSpan={7} pageInfo={conn.pageInfo} onMore={onMore} />}
    </tbody>
  );
}
