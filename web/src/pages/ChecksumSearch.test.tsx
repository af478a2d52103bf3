import { screen, within } from "@testing-library/react";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";
import { renderRoutes } from "../test/render";
import { ChecksumSearch, normalizeSha256 } from "./ChecksumSearch";

const sha = "sha256:" + "ef".repeat(32);
const repo = (name: string, format: string) => ({ __typename: "Repository", id: `r-${name}`, name, format });

describe("ChecksumSearch", () => {
  it("marks the matches a remote repository cached", async () => {
    const matches = [
      { __typename: "ChecksumMatch", kind: "CONTAINER_BLOB", artifactId: "a1", parentId: "p1", cached: false, softDeletedAt: null, repository: repo("images", "OCI") },
      { __typename: "ChecksumMatch", kind: "CONTAINER_BLOB", artifactId: "a2", parentId: "p2", cached: true, softDeletedAt: null, repository: repo("hub", "DOCKER") },
      { __typename: "ChecksumMatch", kind: "NPM_METADATA_FILE", artifactId: "a3", parentId: "p3", cached: true, softDeletedAt: null, repository: repo("npmjs", "NPM") },
    ];
    renderRoutes(`/n/acme/search?sha256=${sha}`, <Route path="/n/:ns/search" element={<ChecksumSearch />} />, () => ({
      data: { namespace: { __typename: "Namespace", id: "ns", checksumSearch: matches } },
    }));
    const hosted = (await screen.findByRole("link", { name: "images" })).closest("tr")!;
    expect(within(hosted).queryByText("cached")).toBeNull();
    const hub = screen.getByRole("link", { name: "hub" }).closest("tr")!;
    expect(within(hub).getByText("cached")).toBeTruthy();
    const npm = screen.getByRole("link", { name: "npmjs" }).closest("tr")!;
    expect(within(npm).getByText("cached")).toBeTruthy();
    expect(within(npm).getByText(/npm metadata file/)).toBeTruthy();
  });

  it("normalizes digests", () => {
    expect(normalizeSha256("EF".repeat(32))).toBe(sha);
    expect(normalizeSha256("sha256:xyz")).toBeNull();
  });
});
