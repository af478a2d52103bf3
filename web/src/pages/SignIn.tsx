import { useState, type FormEvent } from "react";
import { useNavigate, useSearchParams } from "react-router";
import type { CombinedError } from "urql";
import { useAuth } from "../auth";
import { makeClient } from "../client";
import { ErrorBox, PageTitle } from "../components/ui";
import { graphql } from "../gql";
import { errorCode } from "../errors";

const CheckTokenQuery = graphql(`
  query CheckToken {
    namespaces(first: 1) {
      totalCount
    }
  }
`);

/** Only same-origin paths are followed after sign-in. */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/sign-in")) return "/";
  return next;
}

export function SignIn() {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [token, setToken] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<CombinedError | null>(null);

  const onSubmit = async (e: FormEvent) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) return;
    setBusy(true);
    setError(null);
    // Check the token before keeping it: the server answers UNAUTHENTICATED
    // for an unknown token. FORBIDDEN means the token is valid but may not
    // list namespaces (a namespace token): that is a successful sign-in.
    const res = await makeClient(t).query(CheckTokenQuery, {}, { requestPolicy: "network-only" }).toPromise();
    setBusy(false);
    if (res.error && errorCode(res.error) !== "FORBIDDEN") {
      setError(res.error);
      return;
    }
    signIn(t);
    navigate(safeNext(params.get("next")), { replace: true });
  };

  return (
    <section className="narrow">
      <PageTitle>Sign in</PageTitle>
      <p>
        Paste an access token (the server's admin token, or a namespace token). It is kept in this browser tab only
        and sent as <code>Authorization: Bearer</code> with every request.
      </p>
      <form onSubmit={onSubmit} className="form">
        <label htmlFor="token">Token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          autoFocus
          value={token}
          onChange={(e) => setToken(e.target.value)}
          required
        />
        <div className="form-actions">
          <button type="submit" className="btn btn-primary" disabled={busy || !token.trim()}>
            {busy ? "Checking…" : "Sign in"}
          </button>
        </div>
      </form>
      {error && <ErrorBox error={error} title="The token was not accepted" />}
      <p className="muted">
        Without a token you can still open a namespace (field at the top) and browse its public repositories.
      </p>
    </section>
  );
}
