// Renders screens under their routes with a mock urql client, as the app
// does (auth provider, router), and shows the current URL for assertions.
import { render } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter, Routes, useLocation } from "react-router";
import { Provider, type Operation } from "urql";
import { AuthProvider, TOKEN_KEY } from "../auth";
import { mockClient, opName, type Responder } from "./mockClient";

function LocationProbe() {
  const l = useLocation();
  return <output data-testid="location">{l.pathname + l.search}</output>;
}

export function renderRoutes(url: string, routes: ReactNode, respond: Responder, { token }: { token?: string } = {}) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  const { client, operations } = mockClient(respond);
  render(
    <AuthProvider>
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
