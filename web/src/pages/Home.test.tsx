import { screen } from "@testing-library/react";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName } from "../test/mockClient";
import { Home } from "./Home";

describe("Home", () => {
  it("sends a namespace token to its namespace instead of the admin's namespace list", async () => {
    const { ops } = renderRoutes("/", <Route path="/" element={<Home />} />, (op) =>
      opName(op) === "Viewer"
        ? {
            data: {
              viewer: { __typename: "Viewer", kind: "TOKEN", name: "ci", namespace: { __typename: "Namespace", id: "n", slug: "acme" } },
            },
          }
        : { data: { namespaces: { ...connection("Namespace", []), totalCount: 0 } } },
      { token: "arp_x" },
    );
    const link = await screen.findByRole("link", { name: "acme" });
    expect(link.getAttribute("href")).toBe("/n/acme");
    expect(screen.getByText("ci")).toBeTruthy();
    expect(ops("Namespaces")).toHaveLength(0);
  });

  it("lists namespaces for the admin", async () => {
    renderRoutes(
      "/",
      <Route path="/" element={<Home />} />,
      (op) =>
        opName(op) === "Viewer"
          ? { data: { viewer: { __typename: "Viewer", kind: "ADMIN", name: "admin", namespace: null } } }
          : { data: { namespaces: { ...connection("Namespace", []), totalCount: 0 } } },
      { token: "admin" },
    );
    await screen.findByText(/No namespace yet/);
  });
});
