// The UI signs in once: the token a person types is posted to /-/session,
// which answers with an HttpOnly session cookie (page scripts cannot read
// it) and a CSRF token. The token itself is forgotten at once; the CSRF
// token lives in memory only and goes with every GraphQL request. Nothing
// is kept in sessionStorage or localStorage.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { CombinedError } from "urql";
import { GraphQLError } from "graphql";

export const SESSION_URL = "/-/session";
export const CSRF_HEADER = "X-CSRF-Token";

/** What /-/session answers. */
export interface SessionInfo {
  signedIn: boolean;
  kind: "ANONYMOUS" | "ADMIN" | "TOKEN";
  name?: string;
  namespace?: string;
  csrfToken?: string;
  expiresAt?: string;
  /** Why a cookie no longer signs in (the session ended). */
  message?: string;
}

export const SIGNED_OUT: SessionInfo = { signedIn: false, kind: "ANONYMOUS" };

/** A refusal of /-/session as a urql error, so ErrorBox explains its code. */
function sessionError(status: number, body: { error?: string; code?: string } | null): CombinedError {
  const code = body?.code ?? (status === 401 ? "UNAUTHENTICATED" : "INTERNAL");
  const message = body?.error ?? `sign-in failed (HTTP ${status})`;
  return new CombinedError({ graphQLErrors: [new GraphQLError(message, { extensions: { code } })] });
}

async function readJSON<T>(res: Response): Promise<T | null> {
  try {
    return (await res.json()) as T;
  } catch {
    return null;
  }
}

/** Asks the server whether the session cookie signs in. */
export async function fetchSession(): Promise<SessionInfo> {
  try {
    const res = await fetch(SESSION_URL, { credentials: "same-origin", headers: { Accept: "application/json" } });
    return (res.ok && (await readJSON<SessionInfo>(res))) || SIGNED_OUT;
  } catch {
    return SIGNED_OUT;
  }
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
