// The UI signs in once: the token a person types is posted to /-/session,
// which answers with an HttpOnly session cookie (page scripts cannot read
// it) and a CSRF token. The token itself is forgotten at once; the CSRF
// token lives in memory only and goes with every GraphQL request. Nothing
// is kept in sessionStorage or localStorage.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { CombinedError } from "urql";
import { GraphQLError } from "graphql";
import { CSRF_HEADER, SESSION_URL, SIGNED_OUT, fetchSession, readJSON, type SessionInfo } from "./session";

export { SESSION_URL, CSRF_HEADER, SIGNED_OUT, fetchSession, type SessionInfo } from "./session";

/** A refusal of /-/session as a urql error, so ErrorBox explains its code. */
function sessionError(status: number, body: { error?: string; code?: string } | null): CombinedError {
  const code = body?.code ?? (status === 401 ? "UNAUTHENTICATED" : "INTERNAL");
  const message = body?.error ?? `sign-in failed (HTTP ${status})`;
  return new CombinedError({ graphQLErrors: [new GraphQLError(message, { extensions: { code } })] });
}

interface AuthState {
  /** False until the server said whether the cookie signs in. */
  ready: boolean;
  session: SessionInfo;
  signedIn: boolean;
  /** Posts the token; resolves signed in, or rejects with a CombinedError. */
  signIn(token: string): Promise<void>;
  signOut(): Promise<void>;
  /** The server refused the session (it ended elsewhere): forget it. */
  ended(): void;
}

const AuthContext = createContext<AuthState>({
  ready: true,
  session: SIGNED_OUT,
  signedIn: false,
  signIn: async () => {},
  signOut: async () => {},
  ended() {},
});

/**
 * Holds the session state. `initial` skips the first GET /-/session (tests
 * render screens signed in or out without a server).
 */
export function AuthProvider({ children, initial }: { children: ReactNode; initial?: SessionInfo }) {
  const [session, setSession] = useState<SessionInfo | null>(initial ?? null);
  useEffect(() => {
    if (initial) return;
    let live = true;
    fetchSession().then((s) => live && setSession(s));
    return () => {
      live = false;
    };
  }, [initial]);

  const signIn = useCallback(async (token: string) => {
    const res = await fetch(SESSION_URL, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ token }),
    });
    const body = await readJSON<SessionInfo & { error?: string; code?: string }>(res);
    if (!res.ok || !body?.signedIn) throw sessionError(res.status, body);
    setSession(body);
  }, []);

  const csrf = session?.csrfToken;
  const signOut = useCallback(async () => {
    try {
      await fetch(SESSION_URL, {
        method: "DELETE",
        credentials: "same-origin",
        headers: csrf ? { [CSRF_HEADER]: csrf } : {},
      });
    } finally {
      setSession(SIGNED_OUT);
    }
  }, [csrf]);

  const ended = useCallback(() => setSession(SIGNED_OUT), []);

  const value = useMemo<AuthState>(() => {
    const s = session ?? SIGNED_OUT;
    return { ready: session !== null, session: s, signedIn: s.signedIn, signIn, signOut, ended };
  }, [session, signIn, signOut, ended]);
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthState {
  return useContext(AuthContext);
}
