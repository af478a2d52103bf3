// What the browser pages (the UI and the GraphQL playground) know of the
// session endpoint. Kept apart from auth.tsx so that the playground's
// bundle does not pull in the UI's GraphQL client.

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

export async function readJSON<T>(res: Response): Promise<T | null> {
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
