// Renders screens under their routes with a mock urql client, as the app
// does (auth provider, router), and shows the current URL for assertions.
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter, Routes, useLocation } from "react-router";
import { Provider, type Operation } from "urql";
import { AuthProvider, SIGNED_OUT, type SessionInfo } from "../auth";
import { mockClient, opName, type Responder } from "./mockClient";

function LocationProbe() {
  const l = useLocation();
  return <output data-testid="location">{l.pathname + l.search}</output>;
}

/** The session of a screen rendered with `token`: signed in as that token. */
export function sessionOf(token?: string): SessionInfo {
  if (!token) return SIGNED_OUT;
  return { signedIn: true, kind: "ADMIN", name: token, csrfToken: "csrf-of-the-test" };
}

export function renderRoutes(url: string, routes: ReactNode, respond: Responder, { token }: { token?: string } = {}) {
  const { client, operations } = mockClient(respond);
  render(
    <AuthProvider initial={sessionOf(token)}>
      <Provider value={client}>
        <MemoryRouter initialEntries={[url]}>
          <Routes>{routes}</Routes>
          <LocationProbe />
        </MemoryRouter>
      </Provider>
    </AuthProvider>,
  );
  const ops = (name: string) => operations.filter((o: Operation) => opName(o) === name);
  return { operations, ops };
}

/** A connection of `nodes` with cursors "c1"…, as the API answers. */
export function connection<T>(typename: string, nodes: T[], opts: { hasNextPage?: boolean; totalCount?: number; edge?: (n: T) => object } = {}) {
  return {
    __typename: `${typename}Connection`,
    ...(opts.totalCount != null ? { totalCount: opts.totalCount } : {}),
    pageInfo: {
      __typename: "PageInfo",
      hasNextPage: !!opts.hasNextPage,
      endCursor: nodes.length ? `c${nodes.length}` : null,
    },
    edges: nodes.map((node, i) => ({ __typename: `${typename}Edge`, cursor: `c${i + 1}`, node, ...(opts.edge?.(node) ?? {}) })),
  };
}
