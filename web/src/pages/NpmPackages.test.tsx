import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName, type Responder } from "../test/mockClient";
import { NpmPackageDetail, versionSize } from "./NpmPackages";

const ver = (id: string, version: string, extra: object = {}) => ({
  __typename: "NpmVersion",
  id,
  version,
  createdAt: "2026-11-01T00:00:00Z",
  sizeBytes: 0,
  deprecated: null,
  distTags: [],
  lastDownloadedAt: null,
  tarball: { __typename: "NpmFile", id: `f-${id}`, sizeBytes: 2048 },
  ...extra,
});

const server: Responder = (op) => {
  const pkg = { __typename: "NpmPackage", id: "p1" };
  switch (opName(op)) {
    case "NpmPackage":
      return {
        data: {
          repository: {
            __typename: "Repository",
            id: "r",
            format: "NPM",
            npmPackage: {
              ...pkg,
              name: "@acme/ui",
              scope: "acme",
              lastDownloadedAt: null,
              distTags: [
                { __typename: "NpmDistTag", name: "latest", version: { __typename: "NpmVersion", id: "v2", version: "1.1.0" } },
                { __typename: "NpmDistTag", name: "next", version: { __typename: "NpmVersion", id: "v3", version: "2.0.0-beta.1" } },
              ],
              latest: { __typename: "NpmVersion", id: "v2", version: "1.1.0", description: "UI kit", license: "MIT", deprecated: null },
            },
          },
        },
      };
    case "NpmPackageVersions":
      return {
        data: {
          repository: {
            __typename: "Repository",
            id: "r",
            npmPackage: {
              ...pkg,
              versions: connection(
                "NpmVersion",
                [ver("v3", "2.0.0-beta.1", { distTags: ["next"] }), ver("v2", "1.1.0", { distTags: ["latest"] }), ver("v1", "1.0.0", { deprecated: "use 1.1.0" })],
                { totalCount: 3 },
              ),
            },
          },
        },
      };
    case "NpmVersionDetail":
      return {
        data: {
          repository: {
            __typename: "Repository",
            id: "r",
            npmPackage: {
              ...pkg,
              version: {
                ...ver("v1", "1.0.0", { deprecated: "use 1.1.0" }),
                description: "UI kit",
                license: "MIT",
                integrity: "sha512-abc",
                shasum: "0123",
                dependencies: [{ __typename: "NpmDependency", name: "left-pad", range: "^1.3.0" }],
                peer: [],
                tarball: { __typename: "NpmFile", id: "f-v1", fileName: "ui-1.0.0.tgz", sizeBytes: 2048, sha256: "sha256:" + "ef".repeat(32) },
              },
            },
          },
        },
      };
    case "SetNpmDistTag":
      return { data: { setNpmDistTag: { __typename: "NpmPackagePayload", package: { ...pkg, distTags: [] } } } };
  }
  return new Error("unexpected " + opName(op));
};

describe("NpmPackageDetail", () => {
  it("shows dist-tags, deprecations and the scope's .npmrc lines", async () => {
    renderRoutes("/n/acme/r/web/npm/@acme/ui", <Route path="/n/:ns/r/:repo/npm/*" element={<NpmPackageDetail />} />, server);
    // The heading comes from the URL and shows while loading: wait for data.
    const tags = await screen.findByRole("list", { name: "Dist-tags" });
    expect(screen.getByRole("heading", { name: /@acme\/ui/ })).toBeTruthy();
    expect(within(tags).getByRole("link", { name: "2.0.0-beta.1" })).toBeTruthy();
    const npmrc = screen.getByText(/@acme:registry=/);
    expect(npmrc.textContent).toBe(`@acme:registry=${location.origin}/npm/acme/web/\n//${location.host}/npm/acme/web/:_authToken=\${ARTIFACT_REGISTRY_TOKEN}`);
    const row = (await screen.findByRole("link", { name: "1.0.0" })).closest("tr")!;
    expect(within(row).getByText("deprecated")).toBeTruthy();
    expect(within(row).getByText("use 1.1.0")).toBeTruthy();
    expect(within(row).getByText("2.0 KiB")).toBeTruthy();
  });

  it("opens a version from the URL with its install command and dependencies", async () => {
    renderRoutes("/n/acme/r/web/npm/@acme/ui?version=1.0.0", <Route path="/n/:ns/r/:repo/npm/*" element={<NpmPackageDetail />} />, server);
    const panel = await screen.findByRole("region", { name: "Version 1.0.0" });
    await within(panel).findByText("npm install @acme/ui@1.0.0");
    expect(within(panel).getByText("left-pad")).toBeTruthy();
    expect(within(panel).getByText(/Deprecated:/)).toBeTruthy();
  });

  it("sets a dist-tag when signed in", async () => {
    const user = userEvent.setup();
    const { ops } = renderRoutes("/n/acme/r/web/npm/@acme/ui", <Route path="/n/:ns/r/:repo/npm/*" element={<NpmPackageDetail />} />, server, {
      token: "admin",
    });
    await user.type(await screen.findByLabelText("Tag"), "stable");
    await user.type(screen.getByLabelText("Version"), "1.0.0");
    await user.click(screen.getByRole("button", { name: "Set tag" }));
    await waitFor(() =>
      expect(ops("SetNpmDistTag")[0]?.variables).toEqual({
        input: { namespace: "acme", repository: "web", package: "@acme/ui", tag: "stable", version: "1.0.0" },
      }),
    );
  });

  it("takes a version's size from its tarball", () => {
    expect(versionSize({ sizeBytes: 0, tarball: { sizeBytes: 10 } })).toBe(10);
    expect(versionSize({ sizeBytes: 7, tarball: null })).toBe(7);
  });
});
