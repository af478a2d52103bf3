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

const server = serverWith([file("f1", "core-1.0.jar", 1000), file("f2", "core-1.0-sources.jar", 500), file("f3", "core-1.0.pom", 24)]);

function serverWith(files: ReturnType<typeof file>[]): Responder {
  return (op) => {
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
                edges: files.map((node, i) => ({
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
}

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
    // The version's snippet at the top, and on its main artifact's row; a
    // classified artifact names its classifier; the pom of a jar gets none.
    const versionSnippet = "<dependency>\n  <groupId>com.acme</groupId>\n  <artifactId>core</artifactId>\n  <version>1.0</version>\n</dependency>";
    expect(screen.getByRole("button", { name: "Copy dependency snippet for com.acme:core:1.0" }).getAttribute("title")).toBe(versionSnippet);
    expect(within(jar.closest("tr")!).getByRole("button", { name: "Copy dependency snippet for core-1.0.jar" }).getAttribute("title")).toBe(versionSnippet);
    const sources = screen.getByRole("link", { name: "core-1.0-sources.jar" }).closest("tr")!;
    const sourcesSnippet = within(sources).getByRole("button", { name: "Copy dependency snippet for core-1.0-sources.jar" }).getAttribute("title");
    expect(sourcesSnippet).toContain("<classifier>sources</classifier>");
    expect(sourcesSnippet).not.toContain("<type>");
    const pom = screen.getByRole("link", { name: "core-1.0.pom" }).closest("tr")!;
    expect(within(pom).queryByRole("button", { name: /Copy dependency/ })).toBeNull();
  });

  it("gives a pom-only version (a parent or BOM) a dependency of type pom", async () => {
    renderRoutes(
      "/n/acme/r/libs/maven/com.acme/core/1.0",
      <Route path="/n/:ns/r/:repo/maven/:groupId/:artifactId/:version" element={<MavenVersionDetail />} />,
      serverWith([file("f1", "core-1.0.pom", 24), file("f2", "core-1.0.pom.sha1", 40)]),
    );
    const pom = (await screen.findByRole("link", { name: "core-1.0.pom" })).closest("tr")!;
    expect(within(pom).getByRole("button", { name: "Copy dependency snippet for core-1.0.pom" }).getAttribute("title")).toContain("<type>pom</type>");
    expect(screen.getByRole("button", { name: "Copy dependency snippet for com.acme:core:1.0" }).getAttribute("title")).toContain("<type>pom</type>");
    // A checksum is not an artifact to depend on.
    const sha1 = screen.getByRole("link", { name: "core-1.0.pom.sha1" }).closest("tr")!;
    expect(within(sha1).queryByRole("button", { name: /Copy dependency/ })).toBeNull();
  });

  it("names the type of a war and of a classified zip", async () => {
    renderRoutes(
      "/n/acme/r/libs/maven/com.acme/core/1.0",
      <Route path="/n/:ns/r/:repo/maven/:groupId/:artifactId/:version" element={<MavenVersionDetail />} />,
      serverWith([file("f1", "core-1.0.pom", 24), file("f2", "core-1.0.war", 4000), file("f3", "core-1.0-dist.zip", 9000)]),
    );
    const war = (await screen.findByRole("link", { name: "core-1.0.war" })).closest("tr")!;
    expect(within(war).getByRole("button", { name: /Copy dependency/ }).getAttribute("title")).toContain("<type>war</type>");
    const top = screen.getByRole("button", { name: "Copy dependency snippet for com.acme:core:1.0" }).getAttribute("title")!;
    expect(top).toContain("<type>war</type>");
    const zip = screen.getByRole("link", { name: "core-1.0-dist.zip" }).closest("tr")!;
    const zipSnippet = within(zip).getByRole("button", { name: /Copy dependency/ }).getAttribute("title")!;
    expect(zipSnippet).toContain("<type>zip</type>");
    expect(zipSnippet).toContain("<classifier>dist</classifier>");
  });

  it("builds file URLs from the group path", () => {
    expect(mavenFileURL("http://h", "acme", "libs", "org.example.deep", "a", "2.0", "a-2.0.pom")).toBe(
      "http://h/maven/acme/libs/org/example/deep/a/2.0/a-2.0.pom",
    );
  });
});
