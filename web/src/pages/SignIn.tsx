import { useState, type FormEvent } from "react";
import { useNavigate, useSearchParams } from "react-router";
import { CombinedError } from "urql";
import { useAuth } from "../auth";
import { ErrorBox, PageTitle } from "../components/ui";

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
    // The server checks the token and opens a session (an HttpOnly cookie);
    // the token is not kept anywhere in the browser.
    try {
      await signIn(t);
    } catch (err) {
      setBusy(false);
      setError(err instanceof CombinedError ? err : new CombinedError({ networkError: err as Error }));
      return;
    }
    setToken("");
    setBusy(false);
    navigate(safeNext(params.get("next")), { replace: true });
  };

  return (
    <section className="narrow">
      <PageTitle>Sign in</PageTitle>
      <p>
        Paste an access token (the server's admin token, or a namespace token). The server checks it once and opens a
        session: this browser keeps only a session cookie that page scripts cannot read, and never the token.
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
