import { screen, within } from "@testing-library/react";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";
import { renderRoutes } from "../test/render";
import { opName, type Responder } from "../test/mockClient";
import { MavenVersionDetail, mavenFileURL } from "./MavenPackages";

const file = (id: string, fileName: string, sizeBytes: number) => ({
  __typename: "MavenFile",
  id,
  fileName,
  sizeBytes,
  sha256: "sha256:" + "12".repeat(32),
  sha1: "ab".repeat(20),
  md5: null,
});

const server: Responder = (op) => {
  if (opName(op) !== "MavenVersionDetail") return new Error("unexpected " + opName(op));
  return {
    data: {
      repository: {
        __typename: "Repository",
        id: "r",
        mavenPackage: {
          __typename: "MavenPackage",
          id: "p",
          version: {
            __typename: "MavenVersion",
            id: "v",
            version: "1.0",
            isSnapshot: false,
            sizeBytes: 0,
            createdAt: "2026-11-01T00:00:00Z",
            lastDownloadedAt: null,
            files: {
              __typename: "MavenFileConnection",
              pageInfo: { __typename: "PageInfo", hasNextPage: false, endCursor: "c3" },
              edges: [file("f1", "core-1.0.jar", 1000), file("f2", "core-1.0-sources.jar", 500), file("f3", "core-1.0.pom", 24)].map((node, i) => ({
                __typename: "MavenFileEdge",
                cursor: `c${i + 1}`,
                node,
              })),
            },
          },
        },
      },
    },
  };
};

describe("MavenVersionDetail", () => {
  it("shows the dependency snippet, the settings.xml server entry and the files", async () => {
    renderRoutes(
      "/n/acme/r/libs/maven/com.acme/core/1.0",
      <Route path="/n/:ns/r/:repo/maven/:groupId/:artifactId/:version" element={<MavenVersionDetail />} />,
      server,
    );
    // The heading comes from the URL and shows while loading: wait for data.
    expect((await screen.findByText(/<groupId>com\.acme<\/groupId>/)).textContent).toBe(
      "<dependency>\n  <groupId>com.acme</groupId>\n  <artifactId>core</artifactId>\n  <version>1.0</version>\n</dependency>",
    );
    expect(screen.getByRole("heading", { name: /core 1\.0/ })).toBeTruthy();
    expect(screen.getAllByText(/<id>acme-libs<\/id>/).some((e) => e.textContent?.includes("<server>"))).toBe(true);
    // The exact size of the files, not the lagging counter.
    expect(screen.getByText("1.5 KiB")).toBeTruthy();
    const jar = screen.getByRole("link", { name: "core-1.0.jar" });
    expect(jar.getAttribute("href")).toBe(`${location.origin}/maven/acme/libs/com/acme/core/1.0/core-1.0.jar`);
    // Files are downloads, never a same-tab navigation to a user's bytes.
    for (const name of ["core-1.0.jar", "core-1.0-sources.jar", "core-1.0.pom"]) {
      const a = screen.getByRole("link", { name });
      expect(a.getAttribute("download")).toBe(name);
      expect(a.getAttribute("rel")).toBe("noopener noreferrer");
    }
    // Only files that need a type or classifier get their own snippet.
    expect(within(jar.closest("tr")!).queryByRole("button", { name: /Copy dependency/ })).toBeNull();
    const sources = screen.getByRole("link", { name: "core-1.0-sources.jar" }).closest("tr")!;
    expect(within(sources).getByRole("button", { name: "Copy dependency snippet for core-1.0-sources.jar" }).getAttribute("title")).toContain(
      "<classifier>sources</classifier>",
    );
  });

  it("builds file URLs from the group path", () => {
    expect(mavenFileURL("http://h", "acme", "libs", "org.example.deep", "a", "2.0", "a-2.0.pom")).toBe(
      "http://h/maven/acme/libs/org/example/deep/a/2.0/a-2.0.pom",
    );
  });
});
