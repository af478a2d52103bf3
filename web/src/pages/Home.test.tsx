import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import type { Operation } from "urql";
import { describe, expect, it } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName, type Responder } from "../test/mockClient";
import { Home, NAMESPACE_PAGE, parseNamespaceListParams } from "./Home";

const admin = { data: { viewer: { __typename: "Viewer", kind: "ADMIN", name: "admin", namespace: null, scopes: [] } } };

function ns(slug: string, i: number) {
  return {
    __typename: "Namespace",
    id: `id-${slug}`,
    slug,
    status: i === 1 ? "SUSPENDED" : "ACTIVE",
    createdAt: "2026-01-02T03:04:05Z",
    repositoriesCount: i * 3,
    statistics: { __typename: "NamespaceStatistics", deduplicatedSizeBytes: 1024 * 1024 * (i + 1), componentsCount: i * 10 },
  };
}

/** A server with these slugs (already in the order asked for); search is a prefix. */
const server =
  (slugs: string[]): Responder =>
  (op) => {
    if (opName(op) === "Viewer") return admin;
    const v = op.variables as { first: number; after: string | null; search: string | null };
    const match = slugs.filter((s) => !v.search || s.startsWith(v.search));
    const start = v.after ? Number(v.after.slice(1)) : 0;
    const end = Math.min(start + v.first, match.length);
    const edges = match.slice(start, end).map((s, i) => ({ __typename: "NamespaceEdge", cursor: `c${start + i + 1}`, node: ns(s, start + i) }));
    return {
      data: {
        namespaces: {
          __typename: "NamespaceConnection",
          totalCount: match.length,
          pageInfo: { __typename: "PageInfo", hasNextPage: end < match.length, endCursor: edges.length ? `c${end}` : null },
          edges,
        },
      },
    };
  };

const home = <Route path="/" element={<Home />} />;
const vars = (ops: (n: string) => Operation[]) => ops("Namespaces").map((o) => o.variables as Record<string, unknown>);

describe("Home", () => {
  it.each([
    [["ADMIN"], "/n/acme", "namespace overview"],
    [["READ", "WRITE"], "/n/acme/repositories", "repository list"],
  ])("sends a namespace token with scopes %j to %s instead of the admin's namespace list", async (scopes, path, page) => {
    const { ops } = renderRoutes(
      "/",
      <>
        {home}
        <Route path="/n/:ns" element={<p>namespace overview</p>} />
        <Route path="/n/:ns/repositories" element={<p>repository list</p>} />
      </>,
      (op) =>
        opName(op) === "Viewer"
          ? {
              data: {
                viewer: { __typename: "Viewer", kind: "TOKEN", name: "ci", scopes, namespace: { __typename: "Namespace", id: "n", slug: "acme" } },
              },
            }
          : { data: { namespaces: { ...connection("Namespace", []), totalCount: 0 } } },
      { token: "arp_x" },
    );
    await screen.findByText(page);
    expect(screen.getByTestId("location").textContent).toBe(path);
    expect(ops("Namespaces")).toHaveLength(0);
  });

  it("lists namespaces for the admin with status, repositories, storage and no empty last row", async () => {
    renderRoutes("/", home, server(["acme", "beta"]), { token: "admin" });
    const row = (await screen.findByRole("link", { name: "beta" })).closest("tr")!;
    expect(within(row).getByText("SUSPENDED", { exact: false })).toBeTruthy();
    expect(within(row).getByRole("link", { name: "3" }).getAttribute("href")).toBe("/n/beta/repositories");
    expect(within(row).getByText("2.0 MiB")).toBeTruthy();
    await screen.findByText("All 2 shown.");
    // Every row of the table has content: the list ends with the total.
    const table = screen.getByRole("table", { name: "Namespaces" });
    for (const tr of table.querySelectorAll("tbody tr")) expect(tr.textContent?.trim()).not.toBe("");
  });

  it("says there is no namespace yet", async () => {
    renderRoutes("/", home, server([]), { token: "admin" });
    await screen.findByText(/No namespace yet/);
    const table = screen.getByRole("table", { name: "Namespaces" });
    expect(table.querySelectorAll("tbody tr")).toHaveLength(1);
  });

  it("pages with Load more", async () => {
    const slugs = Array.from({ length: NAMESPACE_PAGE + 5 }, (_, i) => `ns-${String(i).padStart(3, "0")}`);
    const { ops } = renderRoutes("/", home, server(slugs), { token: "admin" });
    await screen.findByText(`${NAMESPACE_PAGE} of ${slugs.length} shown`);
    await userEvent.click(screen.getByRole("button", { name: "Load more" }));
    await screen.findByText(`All ${slugs.length} shown.`);
    expect(screen.getAllByRole("row").length).toBe(1 + slugs.length + 1);
    expect(vars(ops).map((v) => v.after)).toEqual([null, `c${NAMESPACE_PAGE}`]);
  });

  it("searches by slug prefix after a pause and keeps search and order in the URL", async () => {
    const { ops } = renderRoutes("/", home, server(["acme", "acme-prod", "beta"]), { token: "admin" });
    await screen.findByRole("link", { name: "beta" });
    await userEvent.type(screen.getByLabelText("Search"), "ACME");
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe("/?q=acme"));
    await screen.findByText("All 2 shown.");
    expect(screen.queryByRole("link", { name: "beta" })).toBeNull();
    // One query for the pause, not one per key.
    expect(vars(ops).map((v) => v.search)).toEqual([null, "acme"]);

    await userEvent.selectOptions(screen.getByLabelText("Sort"), "newest");
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe("/?q=acme&sort=newest"));
    await waitFor(() => expect(vars(ops).at(-1)).toMatchObject({ search: "acme", orderBy: { field: "CREATED_AT", direction: "DESC" } }));

    await userEvent.clear(screen.getByLabelText("Search"));
    await userEvent.type(screen.getByLabelText("Search"), "zzz");
    await screen.findByText(/No namespace slug starts with/);
    await userEvent.click(screen.getByRole("button", { name: "Clear search" }));
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe("/?sort=newest"));
    await screen.findByRole("link", { name: "beta" });
    expect((screen.getByLabelText("Search") as HTMLInputElement).value).toBe("");
  });

  it("opens a shared link with its search and order", async () => {
    const { ops } = renderRoutes("/?q=acme&sort=oldest", home, server(["acme", "beta"]), { token: "admin" });
    await screen.findByRole("link", { name: "acme" });
    expect((screen.getByLabelText("Search") as HTMLInputElement).value).toBe("acme");
    expect(vars(ops)[0]).toMatchObject({ search: "acme", orderBy: { field: "CREATED_AT", direction: "ASC" } });
  });

  it("drops unknown URL values", () => {
    expect(parseNamespaceListParams(new URLSearchParams("q=%20AcMe%20&sort=size"))).toEqual({ q: "acme", sort: "slug" });
  });
});
