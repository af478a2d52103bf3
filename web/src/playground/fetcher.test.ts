import { afterEach, describe, expect, it, vi } from "vitest";
import { CSRF_HEADER, SIGNED_OUT, type SessionInfo } from "../session";
import { hasAuthorization, makeFetcher } from "./fetcher";

const ADMIN: SessionInfo = { signedIn: true, kind: "ADMIN", name: "admin", csrfToken: "csrf-1" };
const QUERY = { query: "{ viewer { kind } }" };

interface Call {
  headers: Record<string, string>;
  credentials?: RequestCredentials;
  body: unknown;
}

/** /graphql answering each call with the next of answers, recording the calls. */
function server(...answers: Response[]) {
  const calls: Call[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (_input: RequestInfo | URL, init: RequestInit = {}) => {
      calls.push({ headers: init.headers as Record<string, string>, credentials: init.credentials, body: JSON.parse(String(init.body)) });
      return answers.shift() ?? json(500, { errors: [{ message: "unexpected call" }] });
    }),
  );
  return calls;
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
const ok = () => json(200, { data: { viewer: { kind: "ADMIN" } } });

/** A session source that answers `first`, then each of `later` on refresh. */
function sessions(first: SessionInfo, ...later: SessionInfo[]) {
  const refresh = vi.fn(async () => later.shift() ?? SIGNED_OUT);
  return { session: async () => first, refresh };
}

afterEach(() => vi.unstubAllGlobals());

describe("playground fetcher", () => {
  it("sends the session's CSRF token with the cookie", async () => {
    const calls = server(ok());
    const r = await makeFetcher(sessions(ADMIN))(QUERY, { headers: {} });
    expect(r).toEqual({ data: { viewer: { kind: "ADMIN" } } });
    expect(calls).toHaveLength(1);
    expect(calls[0].credentials).toBe("same-origin");
    expect(calls[0].headers[CSRF_HEADER]).toBe("csrf-1");
    expect(calls[0].headers["Content-Type"]).toBe("application/json");
    expect(calls[0].body).toEqual(QUERY);
  });

  it("sends an Authorization header as typed, without the cookie or the CSRF token", async () => {
    const calls = server(ok());
    const s = sessions(ADMIN);
    await makeFetcher(s)(QUERY, { headers: { authorization: "Bearer arp_typed", "X-Extra": 7 } });
    expect(calls[0].credentials).toBe("omit");
    expect(calls[0].headers.authorization).toBe("Bearer arp_typed");
    expect(calls[0].headers["X-Extra"]).toBe("7");
    expect(calls[0].headers[CSRF_HEADER]).toBeUndefined();
    expect(s.refresh).not.toHaveBeenCalled();
  });

  it("signed out, sends neither token", async () => {
    const calls = server(ok());
    await makeFetcher(sessions(SIGNED_OUT))(QUERY, undefined);
    expect(calls[0].headers[CSRF_HEADER]).toBeUndefined();
    expect(calls[0].credentials).toBe("same-origin");
  });

  it("asks for the session again once when the server refuses the CSRF token", async () => {
    const calls = server(json(403, { errors: [{ message: "CSRF token missing or invalid", extensions: { code: "CSRF_TOKEN_INVALID" } }] }), ok());
    const s = sessions(ADMIN, { ...ADMIN, csrfToken: "csrf-2" });
    const r = await makeFetcher(s)(QUERY, { headers: {} });
    expect(r).toEqual({ data: { viewer: { kind: "ADMIN" } } });
    expect(s.refresh).toHaveBeenCalledTimes(1);
    expect(calls.map((c) => c.headers[CSRF_HEADER])).toEqual(["csrf-1", "csrf-2"]);
  });

  it("retries once, anonymously, when the session has ended", async () => {
    const anonymous = json(200, { data: null, errors: [{ message: "sign in", extensions: { code: "UNAUTHENTICATED" } }] });
    const calls = server(json(401, { errors: [{ message: "session expired", extensions: { code: "UNAUTHENTICATED" } }] }), anonymous);
    const s = sessions(ADMIN, SIGNED_OUT);
    const r = await makeFetcher(s)(QUERY, { headers: {} });
    expect(r).toMatchObject({ errors: [{ extensions: { code: "UNAUTHENTICATED" } }] });
    expect(calls).toHaveLength(2);
    expect(calls[1].headers[CSRF_HEADER]).toBeUndefined();
  });

  it("does not retry other refusals", async () => {
    const calls = server(json(403, { errors: [{ message: "forbidden", extensions: { code: "FORBIDDEN" } }] }));
    const s = sessions(ADMIN);
    const r = await makeFetcher(s)(QUERY, { headers: {} });
    expect(r).toMatchObject({ errors: [{ message: "forbidden" }] });
    expect(calls).toHaveLength(1);
    expect(s.refresh).not.toHaveBeenCalled();
  });

  it("turns an answer that is not GraphQL into an error", async () => {
    server(new Response("upstream timed out", { status: 503 }));
    const r = await makeFetcher(sessions(SIGNED_OUT))(QUERY, { headers: {} });
    expect(r).toEqual({ errors: [{ message: "HTTP 503: upstream timed out" }] });
  });

  it("finds Authorization in any case", () => {
    expect(hasAuthorization({ AUTHORIZATION: "x" })).toBe(true);
    expect(hasAuthorization({ "X-Authorization": "x" })).toBe(false);
  });
});
