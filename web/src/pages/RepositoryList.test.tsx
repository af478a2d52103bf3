import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { MemoryRouter, Route, Routes, useLocation } from "react-router";
import { Provider, type Operation } from "urql";
import { describe, expect, it } from "vitest";
import { AuthProvider } from "../auth";
import { mockClient, opName, type Responder } from "../test/mockClient";
import { sessionOf } from "../test/render";
import { REPO_PAGE_SIZE, RepositoryList } from "./RepositoryList";

const TOTAL = 120;

function repo(i: number) {
  return {
    __typename: "Repository",
    id: `id-${i}`,
    name: `repo-${String(i).padStart(3, "0")}`,
    description: i === 0 ? "the first one" : null,
    format: "DOCKER",
    kind: "HOSTED",
    visibility: i % 2 ? "PUBLIC" : "PRIVATE",
    artifactsCount: i,
    downloadsCount: 10 * i,
    sizeBytes: 1024 * i,
    lastUpdatedAt: null,
    createdAt: "2026-01-02T03:04:05Z",
  };
}

/** A server with TOTAL repositories; cursor "c<n>" means "after the n-th". */
const server =
  (total = TOTAL): Responder =>
  (op) => {
    if (opName(op) === "CollectionNames") {
      return {
        data: {
          namespace: {
            __typename: "Namespace",
            id: "ns",
            collections: { edges: [{ node: { __typename: "RepositoryCollection", id: "c-default", name: "default" } }, { node: { __typename: "RepositoryCollection", id: "c-team", name: "team" } }] },
          },
        },
      };
    }
    const v = op.variables as { first: number; after: string | null };
    const start = v.after ? Number(v.after.slice(1)) : 0;
    const end = Math.min(start + v.first, total);
    const edges = [];
    for (let i = start; i < end; i++) edges.push({ __typename: "RepositoryEdge", cursor: `c${i + 1}`, node: repo(i) });
    return {
      data: {
        namespace: {
          __typename: "Namespace",
          id: "ns",
          repositories: {
            __typename: "RepositoryConnection",
            totalCount: total,
            pageInfo: { __typename: "PageInfo", hasNextPage: end < total, endCursor: edges.length ? `c${end}` : null },
            edges,
          },
        },
      },
    };
  };

function LocationProbe() {
  const l = useLocation();
  return <output data-testid="location">{l.pathname + l.search}</output>;
}

function setup(url: string, respond: Responder, { token }: { token?: string } = {}) {
  const { client, operations } = mockClient(respond);
  render(
    <AuthProvider initial={sessionOf(token)}>
      <Provider value={client}>
        <MemoryRouter initialEntries={[url]}>
          <Routes>
            <Route path="/n/:ns/repositories" element={<RepositoryList />} />
          </Routes>
          <LocationProbe />
        </MemoryRouter>
      </Provider>
    </AuthProvider>,
  );
  const listOps = () => operations.filter((o: Operation) => opName(o) === "RepositoryList");
  return { operations, listOps };
}

const rows = () => screen.getAllByRole("row").filter((r) => within(r).queryByRole("link", { name: /^repo-/ }));

describe("RepositoryList", () => {
  it("queries with the filter and order of the URL", async () => {
    const { listOps } = setup("/n/acme/repositories?format=docker&visibility=public&sort=size", server());
    await screen.findByRole("link", { name: "repo-000" });
    expect(listOps()[0].variables).toEqual({
      namespace: "acme",
      first: REPO_PAGE_SIZE,
      after: null,
      orderBy: { field: "SIZE", direction: "DESC" },
      filter: { format: "DOCKER", visibility: "PUBLIC" },
    });
    expect((screen.getByLabelText("Format") as HTMLSelectElement).value).toBe("DOCKER");
    expect((screen.getByLabelText("Sort by") as HTMLSelectElement).value).toBe("SIZE");
  });

  it("loads more pages by keyset cursor until all are shown", async () => {
    const user = userEvent.setup();
    const { listOps } = setup("/n/acme/repositories", server());
    await screen.findByRole("link", { name: "repo-000" });
    expect(rows()).toHaveLength(50);
    expect(screen.getByText("50 of 120 shown")).toBeTruthy();

    await user.click(screen.getByRole("button", { name: "Load more" }));
    await screen.findByRole("link", { name: "repo-099" });
    expect(rows()).toHaveLength(100);
    expect(listOps().map((o) => (o.variables as { after: string | null }).after)).toEqual([null, "c50"]);
    // Keyboard users continue at the first new row.
    expect(document.activeElement?.textContent).toBe("repo-050");

    await user.click(screen.getByRole("button", { name: "Load more" }));
    await screen.findByRole("link", { name: "repo-119" });
    expect(rows()).toHaveLength(120);
    expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();
    expect(screen.getByText("All 120 shown.")).toBeTruthy();
    expect(listOps().map((o) => (o.variables as { after: string | null }).after)).toEqual([null, "c50", "c100"]);
  });

  it("starts from the first page when a filter changes, and writes it to the URL", async () => {
    const user = userEvent.setup();
    const { listOps } = setup("/n/acme/repositories", server());
    await screen.findByRole("link", { name: "repo-000" });
    await user.click(screen.getByRole("button", { name: "Load more" }));
    await screen.findByRole("link", { name: "repo-099" });

    await user.selectOptions(screen.getByLabelText("Format"), "NPM");
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe("/n/acme/repositories?format=npm"));
    await waitFor(() => expect(rows()).toHaveLength(50));
    const last = listOps()[listOps().length - 1];
    expect(last.variables).toMatchObject({ after: null, filter: { format: "NPM" } });
  });

  it("toggles the direction and keeps the sort in the URL", async () => {
    const user = userEvent.setup();
    const { listOps } = setup("/n/acme/repositories?sort=downloads", server());
    await screen.findByRole("link", { name: "repo-000" });
    await user.click(screen.getByRole("button", { name: /Order/ }));
    await waitFor(() =>
      expect(screen.getByTestId("location").textContent).toBe("/n/acme/repositories?sort=downloads&dir=asc"),
    );
    await waitFor(() => expect(listOps()[listOps().length - 1].variables).toMatchObject({ orderBy: { field: "DOWNLOADS", direction: "ASC" } }));
  });

  it("offers the namespace's collections as a filter when signed in", async () => {
    const user = userEvent.setup();
    const { listOps } = setup("/n/acme/repositories", server(), { token: "t" });
    await screen.findByRole("link", { name: "repo-000" });
    const select = (await screen.findByLabelText("Collection")) as HTMLSelectElement;
    await waitFor(() => expect(within(select).getByRole("option", { name: "team" })).toBeTruthy());
    await user.selectOptions(select, "team");
    await waitFor(() => expect(listOps()[listOps().length - 1].variables).toMatchObject({ filter: { collection: "team" } }));
  });

  it("says so when no repository matches, and clears the filters", async () => {
    const user = userEvent.setup();
    setup("/n/acme/repositories?kind=remote", server(0));
    await screen.findByText(/No repository matches these filters/);
    await user.click(screen.getAllByRole("button", { name: "Clear filters" })[0]);
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe("/n/acme/repositories"));
    await screen.findByText(/No repository yet/);
  });

  it("shows the meaning of an error code", async () => {
    setup("/n/acme/repositories", () => ({
      data: null,
      errors: [{ message: "authentication required: send Authorization: Bearer <admin token>", code: "UNAUTHENTICATED" }],
    }));
    const alert = await screen.findByRole("alert");
    expect(within(alert).getByText("Sign-in required")).toBeTruthy();
    expect(within(alert).getByText(/authentication required/)).toBeTruthy();
    expect(within(alert).getByRole("link", { name: "Sign in" }).getAttribute("href")).toBe(
      "/sign-in?next=%2Fn%2Facme%2Frepositories",
    );
  });

  it("shows a network failure as such", async () => {
    setup("/n/acme/repositories", () => new Error("Failed to fetch"));
    const alert = await screen.findByRole("alert");
    expect(within(alert).getByText("Server unreachable")).toBeTruthy();
  });
});
