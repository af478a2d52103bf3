import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it, vi } from "vitest";
import { formatTime } from "../format";
import { connection, renderRoutes } from "../test/render";
import { Trash } from "./Trash";

const repo = (name: string) => ({ __typename: "Repository", id: `r-${name}`, name });

const npmVersion = {
  __typename: "NpmVersion",
  id: "nv1",
  packageName: "@acme/ui",
  version: "1.2.0",
  sizeBytes: 2048,
  repository: repo("web"),
};
const mavenVersion = {
  __typename: "MavenVersion",
  id: "mv1",
  groupId: "com.acme",
  artifactId: "core",
  version: "2.0",
  sizeBytes: 4096,
  repository: repo("libs"),
};

function trash(items: { node: object; kind: string }[]) {
  return {
    data: {
      namespace: {
        __typename: "Namespace",
        id: "ns",
        trash: connection(
          "Trash",
          items.map((i) => i.node),
          {
            edge: (n) => ({
              kind: items.find((i) => i.node === n)!.kind,
              deletedAt: "2026-11-02T10:00:00Z",
              expiresAt: "2026-11-09T10:00:00Z",
            }),
          },
        ),
      },
    },
  };
}

describe("Trash", () => {
  it("lists npm and Maven versions with their repository", async () => {
    renderRoutes(
      "/n/acme/trash",
      <Route path="/n/:ns/trash" element={<Trash />} />,
      () =>
        trash([
          { node: npmVersion, kind: "NPM_VERSION" },
          { node: mavenVersion, kind: "MAVEN_VERSION" },
        ]),
      { token: "t" },
    );
    const npmRow = (await screen.findByText("@acme/ui@1.2.0")).closest("tr")!;
    expect(within(npmRow).getByText("npm version")).toBeTruthy();
    expect(within(npmRow).getByRole("link", { name: "web" }).getAttribute("href")).toBe("/n/acme/r/web");
    expect(within(npmRow).getByText("2.0 KiB")).toBeTruthy();
    const mavenRow = screen.getByText("com.acme:core:2.0").closest("tr")!;
    expect(within(mavenRow).getByText("Maven version")).toBeTruthy();
    expect(within(mavenRow).getByRole("link", { name: "libs" }).getAttribute("href")).toBe("/n/acme/r/libs");
    // The last page ends with its last item: no empty row after it.
    const rows = [...mavenRow.closest("table")!.querySelectorAll("tbody tr")];
    expect(rows).toEqual([npmRow, mavenRow]);
  });

  it("ends a page that has more with the Load more row", async () => {
    renderRoutes(
      "/n/acme/trash",
      <Route path="/n/:ns/trash" element={<Trash />} />,
      () => {
        const r = trash([{ node: npmVersion, kind: "NPM_VERSION" }]);
        r.data.namespace.trash.pageInfo.hasNextPage = true;
        return r;
      },
      { token: "t" },
    );
    const npmRow = (await screen.findByText("@acme/ui@1.2.0")).closest("tr")!;
    const rows = [...npmRow.closest("table")!.querySelectorAll("tbody tr")];
    expect(rows).toHaveLength(2);
    expect(within(rows[1] as HTMLElement).getByRole("button", { name: "Load more" })).toBeTruthy();
  });

  it("filters by kind through the URL", async () => {
    const user = userEvent.setup();
    const { ops } = renderRoutes("/n/acme/trash", <Route path="/n/:ns/trash" element={<Trash />} />, () => trash([]), {
      token: "t",
    });
    await screen.findByText("The trash is empty.");
    await user.click(screen.getByRole("button", { name: "npm versions" }));
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe("/n/acme/trash?kind=npm_version"));
    await waitFor(() => expect(ops("Trash").at(-1)?.variables).toMatchObject({ kind: "NPM_VERSION", after: null }));
    expect(screen.getByRole("button", { name: "npm versions" }).getAttribute("aria-pressed")).toBe("true");
  });

  it("opens on the kind of a shared link", async () => {
    const { ops } = renderRoutes(
      "/n/acme/trash?kind=maven_version",
      <Route path="/n/:ns/trash" element={<Trash />} />,
      () => trash([{ node: mavenVersion, kind: "MAVEN_VERSION" }]),
      { token: "t" },
    );
    await screen.findByText("com.acme:core:2.0");
    expect(ops("Trash")[0].variables).toMatchObject({ kind: "MAVEN_VERSION" });
  });

  it("shows when items expire and purges one after confirmation", async () => {
    const user = userEvent.setup();
    const confirm = vi.spyOn(window, "confirm");
    const { ops } = renderRoutes(
      "/n/acme/trash",
      <Route path="/n/:ns/trash" element={<Trash />} />,
      () => trash([{ node: npmVersion, kind: "NPM_VERSION" }]),
      { token: "t" },
    );
    const row = (await screen.findByText("@acme/ui@1.2.0")).closest("tr")!;
    expect(within(row).getByText(formatTime("2026-11-09T10:00:00Z"))).toBeTruthy();
    confirm.mockReturnValueOnce(false);
    await user.click(within(row).getByRole("button", { name: "Purge npm version @acme/ui@1.2.0" }));
    expect(ops("PurgeTrash")).toHaveLength(0);
    confirm.mockReturnValueOnce(true);
    await user.click(within(row).getByRole("button", { name: "Purge npm version @acme/ui@1.2.0" }));
    await waitFor(() => expect(ops("PurgeTrash")[0]?.variables).toMatchObject({ input: { namespace: "acme", ids: ["nv1"] } }));
    confirm.mockReturnValueOnce(true);
    await user.click(screen.getByRole("button", { name: "Empty trash" }));
    await waitFor(() => expect(ops("EmptyTrash")[0]?.variables).toMatchObject({ input: { namespace: "acme" } }));
    confirm.mockRestore();
  });
});
