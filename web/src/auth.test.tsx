import { act, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthProvider, CSRF_HEADER, useAuth } from "./auth";
import { makeClient } from "./client";
import { graphql } from "./gql";

const SECRET = "arp_the-token-a-person-typed-0123456789";

/** The server's /-/session and /graphql, recording what the page sent. */
function fakeServer() {
  const calls: { url: string; init: RequestInit }[] = [];
  let signedIn = false;
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  const fetchMock = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = String(input);
    calls.push({ url, init });
    if (url.endsWith("/-/session")) {
      switch (init.method ?? "GET") {
        case "POST":
          if (JSON.parse(String(init.body)).token !== SECRET) return json(401, { error: "invalid token", code: "UNAUTHENTICATED" });
          signedIn = true;
          return json(201, { signedIn: true, kind: "TOKEN", name: "ci", namespace: "acme", csrfToken: "csrf-1" });
        case "DELETE":
          signedIn = false;
          return new Response(null, { status: 204 });
      }
      return json(200, signedIn ? { signedIn: true, kind: "TOKEN", name: "ci", csrfToken: "csrf-1" } : { signedIn: false, kind: "ANONYMOUS" });
    }
    return json(200, { data: { viewer: { __typename: "Viewer", kind: "TOKEN" } } });
  });
  vi.stubGlobal("fetch", fetchMock);
  return calls;
}

afterEach(() => {
  vi.unstubAllGlobals();
  localStorage.clear();
});

function Probe() {
  const { ready, session, signIn, signOut } = useAuth();
  if (!ready) return <p>checking</p>;
  return (
    <div>
      <output data-testid="who">{session.signedIn ? session.name : "anonymous"}</output>
      <button onClick={() => signIn(SECRET)}>in</button>
      <button onClick={() => signIn("wrong").catch((e) => (document.title = e.graphQLErrors[0].extensions.code))}>bad</button>
      <button onClick={() => signOut()}>out</button>
    </div>
  );
}

const storageText = () =>
  [sessionStorage, localStorage].map((s) => Object.keys(s).map((k) => k + "=" + s.getItem(k)).join(";")).join("|") + document.cookie;

describe("session sign-in", () => {
  it("posts the token once, keeps only the CSRF token in memory, and signs out with it", async () => {
    const calls = fakeServer();
    render(
      <AuthProvider>
        <Probe />
      </AuthProvider>,
    );
    expect(await screen.findByTestId("who")).toHaveProperty("textContent", "anonymous");
    expect(calls[0].init.credentials).toBe("same-origin"); // GET /-/session on load

    await act(() => screen.getByText("bad").click());
    await waitFor(() => expect(document.title).toBe("UNAUTHENTICATED"));

    await act(() => screen.getByText("in").click());
    await waitFor(() => expect(screen.getByTestId("who").textContent).toBe("ci"));
    const post = calls.find((c) => c.init.method === "POST" && String(c.init.body).includes(SECRET))!;
    expect(post.url).toBe("/-/session");
    expect(post.init.headers).toMatchObject({ "Content-Type": "application/json" });
    // Nothing a page script can read holds the token (or the CSRF token).
    expect(storageText()).not.toContain(SECRET);
    expect(storageText()).not.toContain("csrf-1");

    await act(() => screen.getByText("out").click());
    await waitFor(() => expect(screen.getByTestId("who").textContent).toBe("anonymous"));
    const del = calls.find((c) => c.init.method === "DELETE")!;
    expect(del.init.headers).toMatchObject({ [CSRF_HEADER]: "csrf-1" });
  });
});

describe("makeClient", () => {
  const Q = graphql(`
    query ClientProbe {
      viewer {
        kind
      }
    }
  `);

  it("sends the cookie and the CSRF token, never an Authorization header", async () => {
    const calls = fakeServer();
    await makeClient("csrf-1").query(Q, {}).toPromise();
    const { init } = calls.find((c) => c.url.startsWith("/graphql"))!;
    expect(init.credentials).toBe("same-origin");
    const headers = new Headers(init.headers);
    expect(headers.get(CSRF_HEADER)).toBe("csrf-1");
    expect(headers.has("Authorization")).toBe(false);
  });

  it("reports a session that ended", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify({ errors: [{ message: "ended", extensions: { code: "UNAUTHENTICATED" } }] }), { status: 401, headers: { "Content-Type": "application/json" } })));
    const ended = vi.fn();
    await makeClient("csrf-1", ended).query(Q, {}).toPromise();
    expect(ended).toHaveBeenCalledOnce();
  });
});
