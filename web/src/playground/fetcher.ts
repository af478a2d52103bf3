// How the playground talks to /graphql. Two ways to be someone, as in the
// API: an Authorization header typed into GraphiQL's header editor (sent
// as is, without the cookie), or else the UI's session cookie with its
// CSRF token, which GET /-/session hands to same-origin pages.
import type { GraphiQLProps } from "graphiql";
import { CSRF_HEADER, type SessionInfo } from "../session";

export type Fetcher = GraphiQLProps["fetcher"];
type Result = Record<string, unknown>;

export interface FetcherOptions {
  url?: string;
  /** The session as last known (one GET /-/session shared by every request). */
  session(): Promise<SessionInfo>;
  /**
   * Asks /-/session again: the server refused the cookie (signed out or
   * expired elsewhere) or its CSRF token (signed in, or again, in another
   * tab of the UI).
   */
  refresh(): Promise<SessionInfo>;
}

/** Whether the header editor sets Authorization (header names are case-insensitive). */
export function hasAuthorization(headers: Record<string, unknown>): boolean {
  return Object.keys(headers).some((k) => k.toLowerCase() === "authorization");
}

function headerStrings(headers: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined && v !== null) out[k] = typeof v === "string" ? v : JSON.stringify(v);
  }
  return out;
}

/** The response as a GraphQL result; an answer that is not one becomes an error. */
async function resultOf(res: Response): Promise<Result> {
  const text = await res.text();
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Result;
  } catch {
    // not JSON: reported below
  }
  return { errors: [{ message: `HTTP ${res.status}: ${text.slice(0, 500) || res.statusText}` }] };
}

function errorCode(r: Result): unknown {
  const errs = r.errors;
  if (!Array.isArray(errs) || errs.length === 0) return undefined;
  return (errs[0] as { extensions?: { code?: unknown } })?.extensions?.code;
}

export function makeFetcher(o: FetcherOptions): Fetcher {
  const url = o.url ?? "/graphql";
  const post = async (params: unknown, headers: Record<string, string>, credentials: RequestCredentials) => {
    const res = await fetch(url, {
      method: "POST",
      credentials,
      headers: { "Content-Type": "application/json", Accept: "application/json", ...headers },
      body: JSON.stringify(params),
    });
    return { status: res.status, result: await resultOf(res) };
  };
  const withCSRF = (s: SessionInfo, extra: Record<string, string>) =>
    s.signedIn && s.csrfToken ? { [CSRF_HEADER]: s.csrfToken, ...extra } : extra;

  return async (params, opts) => {
    const extra = headerStrings(opts?.headers ?? {});
    if (hasAuthorization(extra)) {
      // The header is the caller; the cookie would be ignored anyway.
      return (await post(params, extra, "omit")).result;
    }
    const s = await o.session();
    let r = await post(params, withCSRF(s, extra), "same-origin");
    const stale = r.status === 401 || (r.status === 403 && errorCode(r.result) === "CSRF_TOKEN_INVALID");
    if (stale) {
      // Once, with what the server says now: the session may be another
      // one, or gone (then the server has expired the cookie and the retry
      // is anonymous).
      r = await post(params, withCSRF(await o.refresh(), extra), "same-origin");
    }
    return r.result;
  };
}
